#!/usr/bin/python3
"""e2e_conn.py -- the raw-socket clients of e2e_conn.sh: clients that hang
up, hold connections idle, pipeline without reading, as root or as another
user (by seteuid: SO_PEERCRED records the effective uid at connect time).

usage: e2e_conn.py ACTION SOCKET [ARGS...]   (exit 0 pass, 1 fail)
"""
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

from e2e_sock import connect, read_line

SOCK = sys.argv[2]
PER_USER = 64  # aegisd's D_MAX_CONNS_PER_USER


def ask(req, as_user=None):
    s = connect(SOCK, as_user)
    s.sendall(json.dumps(req).encode() + b'\n')
    answer = json.loads(read_line(s))
    s.close()
    return answer


def aegis(aegis_bin, *args, user=None, timeout=20):
    """Runs the aegis command (as user if given); returns the CompletedProcess."""
    cmd = [aegis_bin, *args]
    if user:
        cmd = ['runuser', '-u', user, '--'] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, AEGIS_SOCKET=SOCK))


def check(cond, what):
    if not cond:
        print('FAIL:', what, file=sys.stderr)
        sys.exit(1)


def ops_of_protocol(proto_c):
    """The op names the daemon knows, from proto.c's table."""
    text = open(proto_c).read()
    return set(re.findall(r'\[PROTO_(?!AFTER_)[A-Z_]+\] = "([a-z_]+)"',
                          text))


def hangup(proto_c, job_id):
    """Every kind of request, sent by a client that closes at once."""
    # A shutdown carried out would stop aegisd: sent as another user (as
    # root), or else malformed, it is refused.
    root = os.geteuid() == 0
    senders = {'shutdown': 'nobody' if root else None,
               'lease': 'nobody' if root else None,
               'db_backup': 'nobody' if root else None}
    reqs = {
        'submit': {'op': 'submit', 'cwd': '/', 'jobs': [{'cmd': ['true']}]},
        'ls': {'op': 'ls', 'all': True},
        'show': {'op': 'show', 'id': job_id},
        'cancel': {'op': 'cancel', 'ids': [job_id]},
        'wait': {'op': 'wait', 'ids': [job_id]},
        'log': {'op': 'log', 'id': job_id},
        'gpus': {'op': 'gpus'},
        'drain': {'op': 'drain', 'gpu': 0},
        'resume': {'op': 'resume', 'gpu': 0},
        'report': {'op': 'report'},
        'hold': {'op': 'hold', 'ids': [job_id]},
        'release': {'op': 'release', 'ids': [job_id]},
        'update': {'op': 'update', 'id': job_id, 'nice': 1},
        'priority': {'op': 'priority'},
        'fairshare': {'op': 'fairshare'},
        'clear': {'op': 'clear'},
        # root's or aegisd's only, and into a folder that is not there
        'db_backup': {'op': 'db_backup', 'path': '/nonexistent/aegis.db'},
        'shutdown': {'op': 'shutdown', 'drain': True if root else 'yes'},
        # Slurm's, root's only: a lease taken would hold a GPU
        'lease': {'op': 'lease', 'slurm_job': 1, 'uid': 0, 'pid': os.getpid()},
        'lease_exit': {'op': 'lease_exit', 'slurm_job': 1, 'pid': 1,
                       'status': 0},
        'lease_end': {'op': 'lease_end', 'slurm_job': 1},
    }
    ops = ops_of_protocol(proto_c)
    check(ops == set(reqs), 'ops not covered: %s' % (ops ^ set(reqs)))
    lines = [(json.dumps(r).encode() + b'\n', senders.get(op))
             for op, r in reqs.items()]
    lines.append((b'not json\n', None))
    for _ in range(5):
        for line, user in lines:
            s = connect(SOCK, user)
            s.sendall(line)
            s.close()
    check(ask({'op': 'gpus'})['ok'], 'gpus after hang-ups')


def hangup_wait(job_id):
    """Two clients wait for a running job: one hangs up (Ctrl-C on aegis
    wait); one shuts down its sending half and is still answered."""
    gone, half = connect(SOCK), connect(SOCK)
    for s in (gone, half):
        s.sendall(json.dumps({'op': 'wait', 'ids': [job_id]}).encode() + b'\n')
    half.shutdown(socket.SHUT_WR)
    # answered after the wait requests were read: they are pending now
    check(ask({'op': 'gpus'})['ok'], 'gpus while waiting')
    gone.close()
    half.settimeout(30)
    answer = json.loads(read_line(half))
    check(answer['ok'] and answer['jobs'][0]['state'] == 'done',
          'half-closed waiter: %r' % answer)
    check(half.recv(1) == b'', 'half-closed waiter not closed after')


def busy(aegis_bin, nconns):
    """nconns idle connections of nobody; then nobody's aegis is turned away
    with a message, and root and another user are still served."""
    held = [connect(SOCK, 'nobody') for _ in range(int(nconns))]
    for _ in range(5):
        r = aegis(aegis_bin, 'ls', user='nobody')
        check(r.returncode == 1 and 'busy' in r.stderr,
              'nobody turned away: exit %d, stderr %r' % (r.returncode,
                                                          r.stderr))
    r = aegis(aegis_bin, 'gpus')
    check(r.returncode == 0, 'root locked out: %r' % r.stderr)
    r = aegis(aegis_bin, 'gpus', user='daemon')
    check(r.returncode == 0, 'user daemon locked out: %r' % r.stderr)
    for s in held:
        s.close()


def waiters(aegis_bin, job_id, nconns):
    """nconns connections of nobody wait for a running job (half of them
    half-closed) and hang up; their slots come free, and root is served
    meanwhile."""
    held = []
    for _ in range(int(nconns)):
        s = connect(SOCK, 'nobody')
        try:
            s.sendall(json.dumps({'op': 'wait', 'ids': [job_id]}).encode() +
                      b'\n')
            if len(held) % 2:  # half of them shut down writing first
                s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # turned away before the request was written
        held.append(s)
    r = aegis(aegis_bin, 'gpus')
    check(r.returncode == 0, 'root locked out: %r' % r.stderr)
    for s in held:
        s.close()
    deadline = time.time() + 20
    while not all_served('nobody', PER_USER):
        check(time.time() < deadline, 'hung-up waits still hold slots')
        time.sleep(0.1)


def all_served(user, n):
    """Whether n connections of user at once are all answered."""
    held = [connect(SOCK, user) for _ in range(n)]
    try:
        for s in held:
            s.sendall(b'{"op":"gpus"}\n')
        return all(json.loads(read_line(s))['ok'] for s in held)
    except (OSError, ValueError):
        return False
    finally:
        for s in held:
            s.close()


def cut_error():
    """An error message cut inside a UTF-8 character is still answered."""
    answer = ask({'op': 'ls', 'a' * 63 + '\u00e9': 1})
    check(answer['ok'] is False and 'unknown field' in answer['error'],
          'answer: %r' % answer)


def rss_kib(pid):
    for line in open('/proc/%s/status' % pid):
        if line.startswith('VmRSS:'):
            return int(line.split()[1])
    return 0


def flood(aegis_bin, pid, nreq, max_growth_mib):
    """nreq pipelined `ls --all` from a client that does not read: aegisd's
    memory stays bounded and another client is answered promptly."""
    base = rss_kib(pid)
    s = connect(SOCK)
    data = b'{"op":"ls","all":true}\n' * int(nreq)
    # aegisd stops reading a client that does not read: send from a thread
    sender = threading.Thread(target=lambda: _send_quietly(s, data),
                              daemon=True)
    sender.start()
    t0 = time.time()
    r = aegis(aegis_bin, 'gpus', timeout=60)
    took = time.time() - t0
    check(r.returncode == 0, 'gpus: %r' % r.stderr)
    print('gpus answered in %.2f s' % took)
    most = base
    end = time.time() + 3  # a window to watch the memory in
    while time.time() < end and most - base < max_growth_mib * 1024:
        most = max(most, rss_kib(pid))
        time.sleep(0.05)
    print('aegisd RSS %d KiB before, %d KiB at most' % (base, most))
    check(most - base < int(max_growth_mib) * 1024,
          'RSS grew by %d MiB' % ((most - base) // 1024))
    check(took < 10, 'gpus took %.1f s' % took)
    # the first answers are whole; then hang up with answers unread
    s.settimeout(30)
    f = s.makefile('rb')
    for _ in range(20):
        check(json.loads(f.readline())['ok'], 'an ls answer')
    s.shutdown(socket.SHUT_RDWR)
    s.close()
    sender.join(10)
    check(ask({'op': 'gpus'})['ok'], 'gpus after the flood')


def _send_quietly(s, data):
    try:
        s.sendall(data)
    except OSError:
        pass


ACTIONS = {'hangup': hangup, 'hangup_wait': hangup_wait, 'busy': busy,
           'waiters': waiters, 'flood': flood, 'cut_error': cut_error}

if __name__ == '__main__':
    ACTIONS[sys.argv[1]](*[int(a) if a.isdigit() else a
                           for a in sys.argv[3:]])
