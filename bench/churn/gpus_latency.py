#!/usr/bin/env python3
"""gpus_latency.py SOCKET OUT STOP [REF_SOCKET REF_OUT] -- times aegisd's
answer to root's `aegis gpus` request (one connection per request, as the
CLI makes) in a loop, one figure in ms a line into OUT, until the file
STOP exists.

With REF_SOCKET, each request to aegisd is followed by the same request
to a reference server (bench/churn/floor_server.c, which does no work),
its time into REF_OUT: both are then asked by the same client, under the
same load. Each request comes after its own pause: the first request
after a pause is the slow one on a loaded machine (the client, woken,
waits for a core), whichever server it asks: asked straight after
aegisd's answer, the reference missed that wait, and aegisd's slowest
answers were each followed by one of the reference's fastest.

A client of its own rather than the `aegis` program: on a loaded machine
starting a process costs more, and varies more, than aegisd's answer,
and the benchmark measures aegisd."""
import os
import socket
import sys
import time


def ask(path):
    """Milliseconds from connecting to the answer's last byte."""
    t = time.monotonic()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall(b'{"op":"gpus"}\n')
        got = b""
        while not got.endswith(b"\n"):
            part = s.recv(65536)
            if not part:
                raise SystemExit("gpus_latency: %s closed the connection" % path)
            got += part
    return (time.monotonic() - t) * 1000


def main():
    if len(sys.argv) not in (4, 6):
        raise SystemExit(__doc__)
    path, out, stop = sys.argv[1:4]
    ref, ref_out = sys.argv[4:6] if len(sys.argv) == 6 else (None, os.devnull)
    with open(out, "w") as f, open(ref_out, "w") as g:
        while not os.path.exists(stop):
            time.sleep(0.01)  # a client now and then, not a flood
            f.write("%.3f\n" % ask(path))
            if ref:
                time.sleep(0.01)
                g.write("%.3f\n" % ask(ref))


if __name__ == "__main__":
    main()
