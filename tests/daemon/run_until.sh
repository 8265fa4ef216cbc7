#!/bin/sh
# run_until.sh FILE COMMAND [ARG...] -- a test job that ends when its test
# says so, not after a number of seconds a loaded machine may outrun: it
# runs COMMAND until FILE exists, then stops it (SIGTERM) and exits 0. A
# COMMAND that ends first gives its own exit status. SIGTERM to the job's
# process group (aegis cancel) stops both as usual.
[ $# -ge 2 ] || { echo "usage: run_until.sh FILE COMMAND [ARG...]" >&2; exit 2; }
file=$1
shift
"$@" &
pid=$!
until [ -e "$file" ]; do
    kill -0 "$pid" 2>/dev/null || { wait "$pid"; exit $?; }
    sleep 0.1
done
kill -TERM "$pid" 2>/dev/null
wait "$pid"
exit 0
