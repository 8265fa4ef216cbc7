#!/usr/bin/python3
"""e2e_lease.py -- the Slurm plugin's side of the lease protocol, for
e2e_lease.sh: a task that asks aegisd for a lease, runs once granted and
reports its exit, as slurmstepd's SPANK plugin does (docs/slurm.md).

usage:
  e2e_lease.py task SOCK OUT JOB RESTART UID MEM -- CMD...
      forks the task (its own session, waiting), asks for a lease for its
      pid, writes the answer to OUT (whole, by rename), runs CMD with the
      grant's env (its output to OUT.out and OUT.err), and once it exits sends
      lease_exit with its status and stderr's end, answered into OUT.exit;
      $LEASE_MODE is its mode (shared)
  e2e_lease.py send SOCK JSON [USER]
      sends one request (as USER when given) and prints the answer
"""
import json
import os
import sys

from e2e_sock import connect, read_line


def ask(s, req):
    s.sendall((json.dumps(req) + '\n').encode())
    buf = read_line(s)
    return json.loads(buf) if buf else {'ok': False, 'error': 'hung up'}


def write_whole(path, text):
    with open(path + '.tmp', 'w') as f:
        f.write(text)
    os.rename(path + '.tmp', path)


def task(sock, out, job, restart, uid, mem, cmd):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the task: waits for its grant's environment
        os.close(w)
        os.setsid()
        with os.fdopen(r) as f:
            env = json.loads(f.read() or 'null')
        if env is None:
            os._exit(0)
        for fd, name in ((1, '.out'), (2, '.err')):
            os.dup2(os.open(out + name, os.O_WRONLY | os.O_CREAT, 0o644), fd)
        os.execvpe(cmd[0], cmd, dict(os.environ, **dict(
            e.split('=', 1) for e in env)))
    os.close(r)
    s = connect(sock)
    req = {'op': 'lease', 'slurm_job': job, 'restart': restart, 'uid': uid,
           'pid': pid, 'mode': os.environ.get('LEASE_MODE', 'shared'),
           'name': 'job%d' % job}
    if mem > 0:
        req['mem_mib'] = mem
    ans = ask(s, req)
    s.close()
    ans['task_pid'] = pid
    write_whole(out, json.dumps(ans))
    with os.fdopen(w, 'w') as f:
        f.write(json.dumps(ans.get('env')) if ans.get('ok') else 'null')
    _, status = os.waitpid(pid, 0)
    tail = ''
    if os.path.exists(out + '.err'):
        with open(out + '.err', 'rb') as f:
            tail = f.read()[-8192:].decode('utf-8', 'replace')
    if ans.get('ok'):
        s = connect(sock)
        ans = ask(s, {'op': 'lease_exit', 'slurm_job': job,
                      'restart': restart, 'pid': pid, 'status': status,
                      'stderr_tail': tail})
        write_whole(out + '.exit', json.dumps(ans))


def main():
    if sys.argv[1] == 'task':
        sock, out, job, restart, uid, mem = sys.argv[2:8]
        assert sys.argv[8] == '--'
        task(sock, out, int(job), int(restart), int(uid), float(mem),
             sys.argv[9:])
    else:
        s = connect(sys.argv[2], sys.argv[4] if len(sys.argv) > 4 else None)
        print(json.dumps(ask(s, json.loads(sys.argv[3]))))


main()
