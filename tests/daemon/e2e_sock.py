"""e2e_sock.py -- what the end-to-end tests' raw-socket clients of aegisd
(e2e_conn.py, e2e_lease.py) share: a connection to its socket, as another
user if asked (by seteuid: SO_PEERCRED records the effective uid at connect
time), and reading one answer line.
"""
import os
import pwd
import socket


def connect(sock, as_user=None):
    """A socket to aegisd at sock, connected as as_user (a login name) if
    given."""
    s = socket.socket(socket.AF_UNIX)
    if as_user:
        os.seteuid(pwd.getpwnam(as_user).pw_uid)
    try:
        s.connect(sock)
    finally:
        if as_user:
            os.seteuid(0)
    return s


def read_line(s):
    """The bytes up to and with the first newline, or all there were when
    aegisd hung up before one (b'' when it sent nothing)."""
    buf = b''
    while not buf.endswith(b'\n'):
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
    return buf
