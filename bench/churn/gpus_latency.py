#!/usr/bin/env python3
"""gpus_latency.py SOCKET OUT STOP -- times aegisd's answer to root's
`aegis gpus` request (one connection per request, as the CLI makes) in a
loop, one figure in ms a line into OUT, until the file STOP exists.

A client of its own rather than the `aegis` program: on a loaded machine
starting a process costs more, and varies more, than aegisd's answer,
and the benchmark measures aegisd."""
import os
import socket
import sys
import time


def ask(path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall(b'{"op":"gpus"}\n')
        got = b""
        while not got.endswith(b"\n"):
            part = s.recv(65536)
            if not part:
                raise SystemExit("gpus_latency: aegisd closed the connection")
            got += part


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    path, out, stop = sys.argv[1:]
    with open(out, "w") as f:
        while not os.path.exists(stop):
            t = time.monotonic()
            ask(path)
            f.write("%.3f\n" % ((time.monotonic() - t) * 1000))
            time.sleep(0.01)  # a client now and then, not a flood


if __name__ == "__main__":
    main()
