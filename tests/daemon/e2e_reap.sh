#!/bin/bash
# e2e_reap.sh [--after PID] DIR SOCKET -- ends what a test that drives
# aegisd started, and removes its folder DIR: every process with
# AEGIS_SOCKET=SOCKET in its environment (aegisd, its shims and MPS
# control daemons, every job they ran, whoever its user: a job inherits it
# from the aegis that submitted it) gets SIGTERM, then SIGKILL until none
# is left, for at most 5 s.
#
# With --after PID it first waits for process PID (the test) to end, and
# does nothing if the test removed DIR itself. A test starts it so, out of
# its own process tree (e2e_lib.sh's reap_after_me): when ctest's TIMEOUT
# kills the test with SIGKILL, which runs no trap and reaches only the
# test's descendants, this still stops the aegisd that daemonized away.
set -u
after=
if [ "${1:-}" = --after ]; then after=$2; shift 2; fi
[ $# = 2 ] || { echo "usage: e2e_reap.sh [--after PID] DIR SOCKET" >&2; exit 2; }
dir=$1 sock=$2

# The pids with the socket in their environment, but this script's own
# and its caller's (the test, when it calls this from its EXIT trap).
# grep runs without it, so as not to find itself.
socket_pids() {
    local f
    for f in $(env -u AEGIS_SOCKET grep -lzxF "AEGIS_SOCKET=$sock" \
                   /proc/[0-9]*/environ 2>/dev/null); do
        f=${f#/proc/}; f=${f%/environ}
        [ "$f" != $$ ] && [ "$f" != "$PPID" ] && echo "$f"
    done
}

if [ -n "$after" ]; then
    tail --pid="$after" -f /dev/null  # polls once a second
    [ -d "$dir" ] || exit 0
fi
left=$(socket_pids)
# SIGTERM first: aegisd then stops the MPS control daemons it started
[ -n "$left" ] && kill -TERM $left 2>/dev/null && sleep 0.2
for i in $(seq 50); do
    left=$(socket_pids); [ -z "$left" ] && break
    kill -KILL $left 2>/dev/null; sleep 0.1
done
rm -rf "$dir"
