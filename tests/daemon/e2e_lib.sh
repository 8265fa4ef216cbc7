# e2e_lib.sh -- what every end-to-end case file of aegisd shares: a fresh
# folder, the test GPUs' environment, a short-window config, and helpers to
# start the daemon, find its pid, fail with its log, and check JSON.
#
# A case file sets AEGISD AEGIS NVML FAKE CATALOG CASE from its arguments,
# sources this file, defines case_NAME functions and ends with e2e_run.
set -u
DIR=$(mktemp -d /tmp/aegis-e2e-XXXXXX)
chmod 755 "$DIR"
export AEGIS_SOCKET=$DIR/aegis.sock AEGIS_TEST_GPUS=3x40960
export AEGIS_TEST_GPU_DIR=$DIR/gpu AEGIS_NVML_LIBRARY=$NVML
mkdir -m 777 "$DIR/gpu" "$DIR/work"
# Short windows so a test sees collocation in seconds, not minutes.
cat > "$DIR/aegis.yaml" <<YAML
window_samples: 2
observe_s: 1
YAML

fail() { echo "FAIL ($CASE): $*" >&2; cat "$DIR/state/aegisd.log" >&2 2>/dev/null; exit 1; }
start() { "$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" \
            --config "$DIR/aegis.yaml" "$@" || fail "aegisd did not start"; }
# The live daemon's pid, from its lock file (one place for it, whatever
# else runs).
daemon_pid() {
    local p; p=$(cat "$DIR/state/aegisd.lock" 2>/dev/null)
    [ -n "$p" ] && [ "$(cat /proc/$p/comm 2>/dev/null)" = aegisd ] && echo "$p"
}
HERE_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Stops aegisd, then kills what a failed or timed-out case left running
# (a job waiting for a file in the removed folder would wait forever: each
# has this case's socket in its environment, e2e_reap.sh) and the case's
# own background jobs, quietly.
cleanup() {
    local left
    left=$(jobs -p); disown -a # not reported as killed
    [ -n "$left" ] && kill -KILL $left 2>/dev/null
    bash "$HERE_LIB/e2e_reap.sh" "$DIR" "$AEGIS_SOCKET"
}
trap cleanup EXIT
# and if this case is killed before that trap runs (ctest's TIMEOUT)
bash "$HERE_LIB/e2e_reap.sh" --detach $$ "$DIR" "$AEGIS_SOCKET"
# MiB a job takes on a 40960 MiB test GPU to leave less free than a job
# without --mem is admitted with (5120 MiB beside the 512 MiB guard): a
# queue behind it stays queued however long the checks take.
FULL_MIB=36000
# python3 is the interpreter itself, not a version manager's shim in front
# of it: pyenv's costs seconds a call on a loaded machine, and a test calls
# python3 dozens of times. (A shell function would not do: `python3 ... &`
# would then give $! of a subshell, not of python.)
PATH=$(dirname "$(python3 -c 'import sys; print(sys.executable)')"):$PATH
# A loopback TCP port free now (the kernel picks it).
free_port() {
    python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"
}
# jq-free JSON checks: python reads the document on stdin.
pyjson() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
# `aegis ARGS...` as user $1 (another user than aegisd's).
as() { local u=$1; shift; runuser -u "$u" -- env AEGIS_SOCKET="$AEGIS_SOCKET" \
       AEGIS_TEST_GPU_DIR="$AEGIS_TEST_GPU_DIR" "$@"; }
needs_root() {
    [ "$(id -u)" = 0 ] || { echo "needs root to act as another user"; exit 77; }
}
# Waits until job $1's `show --json ${3:-}` passes the python check $2.
until_job() {
    local deadline=$((SECONDS + 30))
    until "$AEGIS" show --json ${3:-} "$1" 2>/dev/null | pyjson "$2" 2>/dev/null; do
        [ $SECONDS -lt $deadline ] || fail "job $1: never $2"
        sleep 0.1
    done
}
# Waits for file $1 to exist (a writer that makes it whole elsewhere and
# renames it into place: a notifier, a lease client), for $2 seconds at
# most (default 30).
until_file() {
    local deadline=$((SECONDS + ${2:-30}))
    until [ -e "$1" ]; do
        [ $SECONDS -lt $deadline ] || fail "$1: never written"
        sleep 0.1
    done
}
# wait_until TEXT COMMAND...: runs COMMAND until it succeeds, for 30 s.
wait_until() {
    local what=$1 deadline=$((SECONDS + 30))
    shift
    until "$@"; do
        [ $SECONDS -lt $deadline ] || fail "timed out waiting: $what"
        sleep 0.1
    done
}
# SIGHUPs aegisd with an emptied log and waits for the reload's last line:
# "SIGHUP: reloaded" or "SIGHUP: configuration not reloaded" (lines about
# single keys come before it).
hup() {
    : > "$DIR/state/aegisd.log"
    kill -HUP "$(daemon_pid)"
    wait_until "the SIGHUP's answer" \
        grep -q "SIGHUP: reloaded\|SIGHUP: configuration not reloaded" \
        "$DIR/state/aegisd.log"
}
# hup, which must reload.
reload() {
    hup
    grep -q "SIGHUP: reloaded" "$DIR/state/aegisd.log" ||
        fail "reload refused: $(cat "$DIR/state/aegisd.log")"
}
# job_field ID KEY: the key of the job's `aegis show --json`.
job_field() {
    "$AEGIS" show --json "$1" | pyjson "print(d.get('$2', ''))"
}
is_state() { [ "$(job_field "$1" state)" = "$2" ]; }
# Whether aegisd has seen job ID's processes on its GPUs.
is_active() { [ "$(job_field "$1" active)" = True ]; }
# Stops aegisd with signal $1 (TERM, or KILL: it saves and cleans up
# nothing) and waits until it is gone.
signal_stop() {
    kill -"$1" "$(daemon_pid)"
    while [ -n "$(daemon_pid)" ]; do sleep 0.1; done
}
# Stops aegisd by SIGTERM, waits until it is gone, and starts it again.
restart() {
    signal_stop TERM
    start "$@"
}


# `aegis ARGS...` exits 2, saying $1 on stderr.
aegis_refused() {
    local want=$1 rc; shift
    "$AEGIS" "$@" > out.txt 2> err.txt
    rc=$?
    [ "$rc" = 2 ] || fail "$*: exit $rc, not 2 ($(cat out.txt err.txt))"
    grep -qF -- "$want" err.txt || fail "$*: '$(cat err.txt)' lacks '$want'"
}

# Runs the case in its own folder ($DIR, unless the case file chose one
# in it): the files a case names without a folder (out.txt, check.out,
# spec.yaml) were written where ctest runs every case, so two cases
# running at once read each other's.
e2e_run() {
    case $PWD in
    "$DIR" | "$DIR"/*) ;;
    *) cd "$DIR" || fail "cd $DIR" ;;
    esac
    "case_$CASE"
    echo "ok: $CASE"
}
