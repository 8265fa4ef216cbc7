#!/bin/bash
# e2e_habits.sh -- end-to-end tests of the daemon-side habits of Slurm and
# task-spooler users: holding a queued job and releasing it, a time limit
# (--time) that stops a job over it, drains that keep their reason across
# a restart, stopping aegisd from the CLI (aegis shutdown), and clients
# that wait across a restart of aegisd (aegis wait, aegis log -f).
#
# usage: e2e_habits.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG CASE
set -u
AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6
source "$(dirname "$0")/e2e_lib.sh"

# A held job stays queued across a restart while a later job runs past it;
# released, it runs. Only its owner or root may hold it, and not while it
# runs. `aegis ls` gives it the REASON held.
case_habits_hold() {
    needs_root
    start
    cd "$DIR/work"
    # a job filling every GPU: what follows is queued
    big=$("$AEGIS" submit --gpus 3 -- "$FAKE" --mib "$FULL_MIB" --seconds 600) || fail submit
    until_job "$big" "assert d['state']=='running'"
    held=$(as nobody "$AEGIS" submit -- sh -c 'echo held-ran') || fail "submit held"
    aegis_refused "only a queued job" hold "$big"
    as daemon "$AEGIS" hold "$held" 2>&1 | grep -q "permission denied" ||
        fail "hold by another user"
    [ "$(as nobody "$AEGIS" hold "$held")" = "held $held" ] || fail "hold by owner"
    "$AEGIS" ls --json | pyjson "
j=[j for j in d if j['id']==$held][0]
assert j['state']=='queued' and j['held'] is True, j
assert j['wait_code']=='held' and j['wait_reason']=='held', j" ||
        fail "ls: not held, or its reason is not held"
    "$AEGIS" ls | grep -q "^$held .* held .* held$" || fail "ls text: $("$AEGIS" ls)"
    restart
    "$AEGIS" show --json "$held" | pyjson "assert d['held'] is True, d" ||
        fail "hold lost across a restart"
    later=$("$AEGIS" submit -- sh -c 'echo later') || fail "submit later"
    "$AEGIS" cancel "$big" > /dev/null || fail "cancel big"
    # the queue is first come, first served: the later job running first
    # shows the held one is skipped
    "$AEGIS" wait "$later" > /dev/null || fail "later job"
    "$AEGIS" show --json "$held" | pyjson "
assert d['state']=='queued' and d['attempts']==0, d" || fail "held job ran"
    "$AEGIS" show "$held" | grep -q "held by nobody" || fail "no hold event"
    [ "$("$AEGIS" release "$held")" = "released $held" ] || fail release
    "$AEGIS" wait "$held" > /dev/null || fail "released job not done"
    [ "$("$AEGIS" log "$held")" = held-ran ] || fail "released job's output"
    aegis_refused "already finished" release "$held"
}

# A job over its --time limit is stopped and ends as timeout, counted from
# its attempt's start, across a restart of aegisd; a bad limit is refused.
case_habits_time() {
    start
    cd "$DIR/work"
    aegis_refused "--time: '10 min' is not a time limit" submit --time '10 min' -- true
    aegis_refused "--time: '0' is not a time limit" submit --time 0 -- true
    fast=$("$AEGIS" submit --time 1:00 -- true) || fail "submit fast"
    "$AEGIS" wait "$fast" > /dev/null || fail "a job within its limit"
    id=$("$AEGIS" submit --time 0:04 -- "$FAKE" --mib 100 --seconds 60) || fail submit
    "$AEGIS" show "$id" | grep -q "time limit  *0:04" || fail "show: no limit"
    until_job "$id" "assert d['state']=='running'"
    restart
    "$AEGIS" wait "$id" > wait.txt && fail "timeout reported as done"
    grep -q "^$id timeout over its 0:04 limit$" wait.txt ||
        fail "wait: $(cat wait.txt)"
    "$AEGIS" show "$id" | grep -q "timeout: over its 0:04 limit" ||
        fail "no timeout event"
    "$AEGIS" show --json "$id" | pyjson "
a=d['attempt_list'][-1]
assert d['state']=='timeout' and len(d['attempt_list'])==1, d
assert a['how']=='timeout', a
ran=a['ended']-a['started']
assert 4 <= ran < 4 + 10, ('stopped after', ran)" || fail "timeout state"
    "$AEGIS" ls --all --state timeout --json | pyjson "
assert [j['id'] for j in d]==[$id], d" || fail "ls --state timeout"
    # a job that outlives its SIGTERM is killed after the grace, as cancel's
    stubborn=$("$AEGIS" submit --time 1s -- sh -c 'trap "" TERM; sleep 60') ||
        fail "submit stubborn"
    "$AEGIS" wait "$stubborn" | grep -q " timeout " || fail "stubborn job"
}

# A job that ignores SIGTERM runs past its --time limit and is stopped;
# aegisd is killed -9 before the job has ended and started again: the stop
# is committed as a cancel is, and the job still ends as timeout, killed
# once its grace time is up, not as cancelled.
case_habits_time_crash() {
    start
    cd "$DIR/work"
    # it runs 60 s: well past the 10 s grace and a restart on a loaded machine
    id=$("$AEGIS" submit --time 1s -- sh -c 'trap "echo TERM >> terms" TERM
        i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
        touch finished') || fail submit
    local deadline=$((SECONDS + 20))
    until [ -s terms ]; do
        [ $SECONDS -lt $deadline ] || fail "never stopped: $("$AEGIS" show "$id")"
        sleep 0.05
    done
    kill -9 "$(daemon_pid)"
    while [ -n "$(daemon_pid)" ]; do sleep 0.05; done
    start
    "$AEGIS" wait "$id" > out.txt
    grep -q "^$id timeout over its 0:01 limit$" out.txt ||
        fail "after a crash: $(cat out.txt); $("$AEGIS" show "$id")"
    [ -e finished ] && fail "the stopped job ran to its end"
}

# A drain keeps its reason, shown by `aegis gpus`, across a restart; a
# resume clears it for good.
case_habits_drain() {
    needs_root
    start
    cd "$DIR/work"
    [ "$("$AEGIS" drain 1 --reason 'fan noise, ticket 42')" = "GPU 1 drained" ] ||
        fail drain
    as nobody "$AEGIS" drain 0 --reason x 2>&1 | grep -q "permission denied" ||
        fail "drain by another user"
    "$AEGIS" gpus | grep -q "fan noise, ticket 42" || fail "gpus: no reason"
    # drained again without a reason: the first one's kept (it was wiped);
    # a GPU not drained resumed: said so (it said "resumed")
    [ "$("$AEGIS" drain 1)" = "GPU 1 was drained already" ] || fail "drain again"
    "$AEGIS" gpus | grep -q "fan noise, ticket 42" || fail "reason lost by a second drain"
    [ "$("$AEGIS" resume 2)" = "GPU 2 was not drained" ] || fail "resume of GPU 2"
    restart
    "$AEGIS" gpus --json | pyjson "
g=d['gpus']
assert g[1]['drained'] and g[1]['drain_reason']=='fan noise, ticket 42', g[1]
assert g[1]['drained_by']=='root', g[1]
assert not g[0]['drained'] and not g[2]['drained'], g" ||
        fail "drain lost across a restart"
    # the drained GPU takes no job: three one-GPU jobs at once use 0 and 2
    ids=""
    for k in 1 2 3; do
        ids="$ids $("$AEGIS" submit --mem 1000 -- "$FAKE" --mib 1000 --seconds 1)"
    done
    "$AEGIS" wait $ids > /dev/null || fail "jobs beside a drained GPU"
    for id in $ids; do
        "$AEGIS" show --json "$id" | pyjson "
assert d['attempt_list'][0]['gpus']!='1', d" || fail "job $id on drained GPU 1"
    done
    "$AEGIS" resume 1 > /dev/null || fail resume
    restart
    "$AEGIS" gpus --json | pyjson "
assert not any(g['drained'] for g in d['gpus']), d" || fail "resume lost"
}

# `aegis shutdown` stops aegisd for root (or aegisd's user) and returns
# once it is gone; running jobs are left to the next aegisd, or with
# --drain waited for. Another user is refused.
case_habits_shutdown() {
    needs_root
    start
    cd "$DIR/work"
    as nobody "$AEGIS" shutdown > out.txt 2>&1 && fail "shutdown by nobody"
    grep -q "permission denied" out.txt || fail "refusal: $(cat out.txt)"
    [ -n "$(daemon_pid)" ] || fail "aegisd stopped for another user"
    id=$("$AEGIS" submit -- "$FAKE" --mib 100 --seconds 30) || fail submit
    until_job "$id" "assert d['state']=='running'"
    "$AEGIS" shutdown > out.txt || fail "shutdown: $(cat out.txt)"
    [ -z "$(daemon_pid)" ] || fail "aegisd still runs after shutdown returned"
    grep -q "aegisd stopped; 1 running job keeps running" out.txt ||
        fail "shutdown said: $(cat out.txt)"
    start
    until_job "$id" "assert any('re-adopted' in e['text'] for e in d['events'])"
    short=$("$AEGIS" submit -- sh -c 'sleep 2; echo drained-out') || fail submit2
    until_job "$short" "assert d['state']=='running'"
    "$AEGIS" cancel "$id" > /dev/null
    "$AEGIS" shutdown --drain > out.txt || fail "shutdown --drain"
    [ -z "$(daemon_pid)" ] || fail "aegisd still runs after shutdown --drain"
    grep -q "aegisd stopped after its running jobs ended" out.txt ||
        fail "shutdown --drain said: $(cat out.txt)"
    start
    "$AEGIS" show --json "$short" | pyjson "assert d['state']=='done', d" ||
        fail "drained job not done"
    "$AEGIS" --socket "$DIR/none.sock" shutdown 2> err.txt
    [ $? = 1 ] || fail "shutdown of no aegisd: not exit 1"
}

# Whether process $1 holds a connected Unix socket (its request is with
# aegisd): each socket:[INODE] among its descriptors is looked up in
# /proc/net/unix, whose St column is 03 for a connected one.
connected() {
    local fd inode
    for fd in /proc/"$1"/fd/*; do
        inode=$(readlink "$fd" 2>/dev/null) || continue
        case $inode in socket:\[*\]) inode=${inode#socket:[}; inode=${inode%]} ;;
            *) continue ;; esac
        awk -v i="$inode" '$7 == i && $6 == "03" { f = 1 } END { exit !f }' \
            /proc/net/unix && return 0
    done
    return 1
}

# `aegis wait` and `aegis log -f` outlive a crash and restart of aegisd,
# as the job they watch does: they say aegisd went away, ask again, and
# end as they would have. With AEGIS_RECONNECT_S=0 a wait fails at once
# instead, and a wait that never reached aegisd fails at once either way.
case_habits_wait_restart() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit -- sh -c 'echo first; until [ -e go ]; do sleep 0.1; done; echo second') ||
        fail submit
    until_job "$id" "assert d['state']=='running'"
    "$AEGIS" wait "$id" > wait.txt 2> wait.err & waiter=$!
    "$AEGIS" log -f "$id" > log.txt 2> log.err & follower=$!
    AEGIS_RECONNECT_S=0 "$AEGIS" wait "$id" > quick.txt 2> quick.err & quick=$!
    wait_until "wait connected" connected "$waiter"
    wait_until "quick wait connected" connected "$quick"
    wait_until "log -f printed the first line" grep -q first log.txt
    kill -9 "$(daemon_pid)"
    wait "$quick" && fail "a wait with AEGIS_RECONNECT_S=0 outlived aegisd"
    grep -q "closed the connection" quick.err || fail "quick: $(cat quick.err)"
    grep -q "asking again" quick.err && fail "quick asked again: $(cat quick.err)"
    wait_until "wait noticed" grep -q "asking again for up to 120 s" wait.err
    wait_until "log -f noticed" grep -q "asking again" log.err
    kill -0 "$waiter" || fail "wait gave up: $(cat wait.err)"
    start
    touch go
    wait "$waiter" || fail "wait across a restart: exit $? ($(cat wait.err))"
    grep -q "^$id done" wait.txt || fail "wait said: $(cat wait.txt)"
    grep -q "aegisd is back" wait.err || fail "wait.err: $(cat wait.err)"
    wait "$follower" || fail "log -f across a restart: $(cat log.err)"
    [ "$(cat log.txt)" = "$(printf 'first\nsecond')" ] ||
        fail "log -f printed: $(cat log.txt)"
    "$AEGIS" --socket "$DIR/none.sock" wait "$id" 2> none.err
    [ $? = 1 ] || fail "wait on no aegisd: not exit 1"
    grep -q "asking again" none.err && fail "asked an aegisd never reached"
    true
}

# A stopped aegisd still takes connections (the kernel queues them) and
# answers none: `aegis ls` gives up after AEGIS_TIMEOUT_S with exit 1,
# saying why, where it waited for ever; so it does once the queue is full
# (each client that gave up left its place taken), when its connect
# blocked. `aegis wait`, whose answer comes when the job ends, waits on
# past that limit; `aegis log -f` asks again. Once aegisd goes on, both
# end as they would have.
case_habits_stopped() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit -- sh -c 'echo first; until [ -e go ]; do sleep 0.1; done; echo second') ||
        fail submit
    until_job "$id" "assert d['state']=='running'"
    AEGIS_TIMEOUT_S=1 "$AEGIS" wait "$id" > wait.txt 2> wait.err & waiter=$!
    AEGIS_TIMEOUT_S=1 "$AEGIS" log -f "$id" > log.txt 2> log.err & follower=$!
    wait_until "wait connected" connected "$waiter"
    wait_until "log -f printed the first line" grep -q first log.txt
    local pid; pid=$(daemon_pid)
    kill -STOP "$pid"
    AEGIS_TIMEOUT_S=1 "$AEGIS" ls > ls.txt 2> ls.err
    local rc=$?
    # connections until the queue takes no more, held
    /usr/bin/python3 - "$AEGIS_SOCKET" "$DIR/queue_full" <<'PY' & filler=$!
import socket, sys, time
held = []
while True:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect(sys.argv[1])
    except BlockingIOError:
        break
    held.append(s)
open(sys.argv[2], "w").close()
time.sleep(600)
PY
    until_file "$DIR/queue_full"
    AEGIS_TIMEOUT_S=1 "$AEGIS" ls > full.txt 2> full.err
    local full_rc=$?
    kill "$filler"
    kill -CONT "$pid"
    [ $rc = 1 ] || fail "ls of a stopped aegisd: exit $rc ($(cat ls.err))"
    grep -q "no answer from aegisd .* in 1 s (AEGIS_TIMEOUT_S)" ls.err ||
        fail "ls said: $(cat ls.err)"
    [ $full_rc = 1 ] || fail "ls with the queue full: exit $full_rc ($(cat full.err))"
    grep -q "took no connection in 1 s (AEGIS_TIMEOUT_S)" full.err ||
        fail "ls with the queue full said: $(cat full.err)"
    # the ls waited its second out after the wait had connected: a limit
    # on the wait's answer would have ended it by now
    connected "$waiter" || fail "wait gave up: $(cat wait.err)"
    touch go
    wait "$waiter" || fail "wait: exit $? ($(cat wait.err))"
    grep -q "^$id done" wait.txt || fail "wait said: $(cat wait.txt)"
    wait "$follower" || fail "log -f: $(cat log.err)"
    [ "$(cat log.txt)" = "$(printf 'first\nsecond')" ] ||
        fail "log -f printed: $(cat log.txt)"
    "$AEGIS" ls > /dev/null || fail "ls once aegisd goes on"
}

e2e_run
