#!/bin/bash
# e2e_conn.sh -- aegisd against careless and hostile clients: hang-ups at
# every moment, idle and waiting connections by the hundred, pipelined
# requests never read, bulk cancels, logs that are not text, and the exit
# status of refused requests. The raw-socket clients are e2e_conn.py.
#
# usage: e2e_conn.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG CASE
set -u; AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6; source "$(dirname "$0")/e2e_lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
client() { python3 "$HERE/e2e_conn.py" "$1" "$AEGIS_SOCKET" "${@:2}"; }
alive() { [ -n "$(daemon_pid)" ] && "$AEGIS" gpus > /dev/null || fail "$1: aegisd died"; }
needs_root() { [ "$(id -u)" = 0 ] || { echo "needs root for other users"; exit 77; }; }

# Every kind of request from a client that closes before the answer; a
# client that hangs up while it waits (Ctrl-C on `aegis wait`), then the
# job ends.
case_conn_hangup() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit -- true) && "$AEGIS" wait "$id" > /dev/null || fail submit
    client hangup "$HERE/../../src/daemon/proto.c" "$id" || fail "hang-ups"
    alive "requests then hang-ups"
    id=$("$AEGIS" submit -- sleep 2) || fail submit
    until "$AEGIS" show --json "$id" | pyjson "assert d['state']=='running'" 2>/dev/null; do sleep 0.1; done
    client hangup_wait "$id" || fail "wait then hang-up"
    "$AEGIS" wait "$id" > /dev/null || fail "second waiter not answered"
    alive "a waiter's hang-up"
}

# 600 idle connections of one user: that user's next `aegis` is turned
# away with a message (exit 1, not a SIGPIPE), root and other users are
# still served.
case_conn_busy() {
    needs_root
    start
    client busy "$AEGIS" 600 || fail "idle connections lock users out"
    alive "idle connections"
}

# 600 waits of one user that hang up: root is served meanwhile, the slots
# come free; a wait naming one id twice is answered.
case_conn_waiters() {
    needs_root
    start
    cd "$DIR/work"
    long=$("$AEGIS" submit -- sleep 60) || fail submit
    client waiters "$AEGIS" "$long" 600 || fail "hung-up waits"
    id=$("$AEGIS" submit -- true) || fail submit
    timeout 20 "$AEGIS" wait "$id" "$id" > wait.out || fail "wait ID ID unanswered"
    [ "$(cat wait.out)" = "$id done exit 0" ] || fail "wait ID ID: $(cat wait.out)"
    "$AEGIS" cancel "$long" > /dev/null && "$AEGIS" wait "$long" > /dev/null
    alive "waiters gone"
}

# NVML holds aegisd's loop (a GPU recovering; the stand-in's `stall`
# file): root's `aegis gpus` is still answered, by the front thread from
# the loop's last copy, while a request only the loop serves waits for it
# and is answered once NVML lets go (front.h).
case_conn_front() {
    start
    cd "$DIR/work"
    "$AEGIS" gpus > /dev/null || fail "gpus"
    : > "$AEGIS_TEST_GPU_DIR/stall"
    until [ -e "$AEGIS_TEST_GPU_DIR/stalled" ]; do sleep 0.1; done
    "$AEGIS" ls > ls.out & ls_pid=$!
    timeout 30 "$AEGIS" gpus > gpus.out ||
        { rm -f "$AEGIS_TEST_GPU_DIR/stall"; fail "gpus unanswered while NVML holds the loop"; }
    grep -q "aegis test GPU" gpus.out || fail "gpus: $(cat gpus.out)"
    kill -0 "$ls_pid" 2>/dev/null || fail "ls done while the loop was held: $(cat ls.out)"
    rm "$AEGIS_TEST_GPU_DIR/stall"
    wait "$ls_pid" || fail "ls failed once the loop went on"
    alive "the stall"
}

# Starts aegisd with every GPU drained and queues $1 `true` jobs, which
# therefore stay queued; their ids go to ids.txt.
queue_drained() {
    start
    cd "$DIR/work"
    for g in 0 1 2; do "$AEGIS" drain $g > /dev/null || fail drain; done
    seq "$1" | sed 's/.*/true/' > array.txt
    "$AEGIS" submit --array array.txt > ids.txt || fail submit
}

# 8000 pipelined `ls --all` of 200 jobs from a client that does not read:
# aegisd's memory stays bounded (the old daemon queued every answer,
# ~16 KB each, ~120 MiB) and `aegis gpus` is answered meanwhile.
case_conn_flood() {
    queue_drained 200
    client flood "$AEGIS" "$(daemon_pid)" 8000 40 || fail "pipelined requests"
    alive "the flood"
}

# Cancelling 5000 queued jobs in one command is one transaction, not a
# commit (and fsync) each: aegisd makes fewer write calls than there are
# jobs (the old daemon made ~9 per job), and answers within seconds.
case_conn_cancel_many() {
    queue_drained 5000
    ids=$(cat ids.txt)
    pid=$(daemon_pid)
    writes() { awk '/^syscw:/ {print $2}' /proc/$pid/io; }
    w0=$(writes) t0=$(date +%s.%N)
    "$AEGIS" cancel $ids > cancel.out || fail cancel
    took=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { print a - b }') w=$(($(writes) - w0))
    echo "cancelled 5000 jobs in $took s with $w write calls"
    [ "$(wc -l < cancel.out)" = 5000 ] || fail "cancelled $(wc -l < cancel.out)"
    [ "$w" -lt 5000 ] || fail "$w write calls for 5000 cancels"
    awk -v t="$took" 'BEGIN { exit !(t < 10) }' || fail "5000 cancels took $took s"
    "$AEGIS" ls --all --json | pyjson "
assert len(d)==5000 and all(j['state']=='cancelled' for j in d)" || fail "not all cancelled"
}

# A cancel naming more ids than aegisd takes in one request (100,000)
# sends them in several: the jobs named past the first 100,000 are
# cancelled too, each unknown id is named, and the exit status is 1.
case_conn_cancel_batches() {
    queue_drained 2
    ids=$(cat ids.txt)
    "$AEGIS" cancel $(seq 1001 101000) $ids > cancel.out 2> cancel.err
    [ $? = 1 ] || fail "exit $?, not 1: $(tail -2 cancel.err)"
    [ "$(cat cancel.out)" = "$(printf 'cancelled %s\n' $ids)" ] ||
        fail "cancelled: $(cat cancel.out)"
    [ "$(wc -l < cancel.err)" = 100000 ] || fail "$(wc -l < cancel.err) unknown ids named"
    "$AEGIS" ls --all --json | pyjson "
assert [j['state'] for j in d]==['cancelled']*2, d" || fail "not cancelled"
}

# A log is bytes: NUL, invalid UTF-8 and 300 KB of random bytes (several
# answers) come back exactly, on stdout and stderr, whole and followed.
case_conn_log_bytes() {
    start
    cd "$DIR/work"
    printf 'a\0b\377\303\251c\300' > want.small
    head -c 300000 /dev/urandom > want.random
    small=$("$AEGIS" submit -- printf 'a\0b\377\303\251c\300') || fail submit
    rnd=$("$AEGIS" submit -- sh -c 'cat want.random; cat want.random >&2') || fail submit
    "$AEGIS" wait "$small" "$rnd" > /dev/null || fail wait
    "$AEGIS" log "$small" > got.small || fail "log small"
    cmp want.small got.small || fail "NUL and invalid UTF-8 changed"
    "$AEGIS" log "$rnd" | cmp - want.random || fail "random stdout changed"
    "$AEGIS" log --stderr "$rnd" | cmp - want.random || fail "random stderr changed"
    "$AEGIS" log -f "$rnd" | cmp - want.random || fail "followed log changed"
}

# Refused requests exit 2 (bad input), an unreachable aegisd exits 1; an
# error message cut inside a character is still answered.
case_conn_exit() {
    needs_root
    start
    cd "$DIR/work"
    client cut_error || fail "error message not answered"
    own=$("$AEGIS" submit -- sleep 30) || fail submit
    for args in "show 99999" "wait 99999" "log 99999" \
                "submit --gpus 4 -- true"; do
        "$AEGIS" $args > /dev/null 2>&1; rc=$?
        [ $rc = 2 ] || fail "aegis $args: exit $rc, not 2"
    done
    "$AEGIS" cancel 99999 > /dev/null 2>&1; rc=$? # a job it could not cancel
    [ $rc = 1 ] || fail "aegis cancel 99999: exit $rc, not 1"
    runuser -u nobody -- env AEGIS_SOCKET="$AEGIS_SOCKET" "$AEGIS" cancel "$own" \
        2> err > /dev/null; rc=$?
    [ $rc = 1 ] && grep -q "permission denied" err || fail "cancel by other: exit $rc, $(cat err)"
    "$AEGIS" cancel "$own" > /dev/null && "$AEGIS" wait "$own" > /dev/null
    [ $? = 1 ] || fail "wait on a cancelled job: not exit 1"
    AEGIS_SOCKET=$DIR/none.sock "$AEGIS" ls 2> err; rc=$?
    [ $rc = 1 ] && grep -q "cannot reach" err || fail "unreachable: exit $rc"
}

# One finished (or unknown) id in a list keeps no other job running: each
# live one is cancelled, each other one named with why, and exit 1.
case_conn_cancel_list() {
    start
    cd "$DIR/work"
    ended=$("$AEGIS" submit -- true) || fail submit
    "$AEGIS" wait "$ended" > /dev/null || fail "job $ended failed"
    a=$("$AEGIS" submit -- sleep 60) && b=$("$AEGIS" submit -- sleep 60) ||
        fail submit
    "$AEGIS" cancel "$a" "$ended" "$b" 99999 > out 2> err; rc=$?
    [ $rc = 1 ] || fail "exit $rc, not 1: $(cat out err)"
    [ "$(cat out)" = "cancelled $a
cancelled $b" ] || fail "stdout: $(cat out)"
    grep -qx "aegis cancel: job $ended: already finished" err &&
        grep -qx "aegis cancel: job 99999: no such job" err ||
        fail "stderr: $(cat err)"
    wait_until "both cancelled" eval 'is_state "$a" cancelled && is_state "$b" cancelled'
}

e2e_run
