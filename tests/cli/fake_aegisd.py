"""fake_aegisd.py SOCKET ANSWERS.json -- a stand-in for aegisd that answers
each request with the canned answer of its "op" (ANSWERS: {op: answer}),
so a test can hand aegis the text another user could have put in a
daemon's answer (a reason, a feed or pipeline name) without a real
aegisd that would refuse to store it. Serves until killed."""
import json
import os
import socket
import sys


def serve(path, answers):
    s = socket.socket(socket.AF_UNIX)
    s.bind(path + '.new')
    s.listen(16)
    os.rename(path + '.new', path)  # the socket appears ready
    while True:
        c, _ = s.accept()
        with c:
            line = b''
            while not line.endswith(b'\n'):
                chunk = c.recv(65536)
                if not chunk:
                    break
                line += chunk
            op = json.loads(line or b'{}').get('op', '')
            answer = answers.get(op, {'ok': False, 'error': 'no ' + op})
            c.sendall(json.dumps(answer).encode() + b'\n')


if __name__ == '__main__':
    with open(sys.argv[2]) as f:
        serve(sys.argv[1], json.load(f))
