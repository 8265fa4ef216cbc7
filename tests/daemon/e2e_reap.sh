#!/bin/bash
# e2e_reap.sh [--after PID | --detach PID] DIR SOCKET -- ends what a test
# that drives aegisd started, and removes its folder DIR: every process with
# AEGIS_SOCKET=SOCKET in its environment (aegisd, its shims and MPS
# control daemons, every job they ran, whoever its user: a job inherits it
# from the aegis that submitted it) gets SIGTERM, then SIGKILL until none
# is left, for at most 5 s; a file system mounted in DIR (a case's small
# tmpfs) is unmounted before DIR is removed.
#
# With --after PID it first waits for process PID (the test) to end, and
# does nothing if the test removed DIR itself. --detach PID starts that
# out of the caller's process tree (setsid, in a subshell that ends at
# once) and returns: a test does so at its start, so that when ctest's
# TIMEOUT kills it with SIGKILL, which runs no trap and reaches only the
# test's descendants, the aegisd that daemonized away is still stopped.
set -u
# Run without the socket in its own environment, or its own subshells,
# which share it, would be found and killed over and over.
[ -z "${AEGIS_SOCKET:-}" ] || exec env -u AEGIS_SOCKET bash "$0" "$@"
usage="usage: e2e_reap.sh [--after PID | --detach PID] DIR SOCKET"
after=
case "${1:-}" in
--after) after=${2:?$usage}; shift 2 ;;
--detach)
    [ $# = 4 ] || { echo "$usage" >&2; exit 2; }
    # not on ctest's output pipe, or ctest would wait for it to close
    (setsid bash "$0" --after "$2" "$3" "$4" \
        < /dev/null > /dev/null 2>&1 &)
    exit 0 ;;
esac
[ $# = 2 ] || { echo "$usage" >&2; exit 2; }
dir=$1 sock=$2

# The pids with the socket in their environment, but its caller's (the
# test, when it calls this from its EXIT trap).
socket_pids() {
    local f
    for f in $(grep -lzxF "AEGIS_SOCKET=$sock" /proc/[0-9]*/environ 2>/dev/null); do
        f=${f#/proc/}; f=${f%/environ}
        [ "$f" != "$PPID" ] && echo "$f"
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
# a file system a case mounted in its folder (a small tmpfs, to fill)
awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts |
    sort -r | xargs -r -n 1 umount -l
rm -rf "$dir"
