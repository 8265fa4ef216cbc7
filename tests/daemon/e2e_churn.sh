#!/bin/bash
# e2e_churn.sh -- how aegisd starts jobs when many short ones churn: each
# attempt's watcher is the aegis-shim program, forked by the launcher (an
# aegis-shim too) or spawned, never a fork of the daemon (whose pages a
# fork copies on write), and the watcher, not aegisd, forks the job.
#
# usage: e2e_churn.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG CASE
set -u; AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6; source "$(dirname "$0")/e2e_lib.sh"

# The program a process runs (its /proc/PID/exe) and its parent.
exe_of() { readlink "/proc/$1/exe"; }
parent_of() { awk '{print $4}' "/proc/$1/stat"; }

# A process's nice value (field 19 of /proc/PID/stat).
nice_of() { awk '{print $19}' "/proc/$1/stat"; }

# A job's watcher runs aegis-shim, not a copy of aegisd, and is aegisd's
# child (its SIGCHLD wakes aegisd), forked by the launcher; the job is the
# watcher's child. An
# aegisd run at a higher priority (aegisd.service: Nice=-5) does not pass
# it on: the watcher and the job run at the default.
case_churn_spawn() {
    nice -n -5 "$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" \
        --config "$DIR/aegis.yaml" 2>/dev/null || fail "aegisd did not start"
    cd "$DIR/work"
    id=$("$AEGIS" submit -- sleep 60) || fail submit
    until_job "$id" "assert d['attempt_list'][-1].get('job_pid')"
    att=$("$AEGIS" show --json "$id" | pyjson "a=d['attempt_list'][-1]; print(a['shim_pid'], a['job_pid'])")
    read -r shim job <<< "$att"
    exe=$(exe_of "$shim")
    [ "${exe##*/}" = aegis-shim ] || fail "the watcher runs $exe, not aegis-shim: aegisd forked itself"
    [ "$(parent_of "$shim")" = "$(daemon_pid)" ] || fail "the watcher is not aegisd's child"
    launcher=$(pgrep -P "$(daemon_pid)" -x aegis-launcher) ||
        fail "no launcher among aegisd's children"
    [ "$(exe_of "$launcher")" = "$exe" ] || fail "the launcher runs $(exe_of "$launcher")"
    [ "$(parent_of "$job")" = "$shim" ] || fail "the job is not the watcher's child"
    # what ps shows every user: the watcher's mode and the job's id, not
    # the job's folder, command or -o paths (they travel in its environment)
    shown=$(tr '\0' ' ' < "/proc/$shim/cmdline")
    [ "$shown" = "aegis-shim job $id " ] ||
        fail "the watcher's arguments show more than the job's id: $shown"
    if [ "$(nice_of "$(daemon_pid)")" = -5 ]; then # root may raise it
        [ "$(nice_of "$shim")" = 0 ] && [ "$(nice_of "$job")" = 0 ] ||
            fail "nice: aegisd -5, watcher $(nice_of "$shim"), job $(nice_of "$job")"
        # where the CPU is shared by session, aegisd's weighs as its nice
        # value
        if [ -r "/proc/$shim/autogroup" ]; then
            grep -q ' nice -5$' "/proc/$(daemon_pid)/autogroup" ||
                fail "aegisd's session: $(cat "/proc/$(daemon_pid)/autogroup")"
        fi
    fi
    # and the job's, the watcher's and the launcher's as job_session_nice,
    # 10 by default
    may_weigh_sessions && sessions_weigh 10 "$launcher" "$shim" "$job"
    # `gpus` is answered ahead of the jobs where aegisd may (this test may)
    if chrt -f 1 true 2>/dev/null; then
        policies=$(for t in /proc/"$(daemon_pid)"/task/*; do policy_of "$t"; done)
        grep -qx 1 <<< "$policies" ||
            fail "no thread of aegisd is SCHED_FIFO (1): $(echo $policies)"
        grep -q '`gpus` is answered ahead of the jobs' "$DIR/state/aegisd.log" ||
            fail "the log does not say the front runs ahead of the jobs"
    fi
    "$AEGIS" cancel "$id" > /dev/null || fail cancel
    "$AEGIS" wait "$id" > /dev/null
    is_state "$id" cancelled || fail "not cancelled: $("$AEGIS" show "$id")"
    # the watcher's arguments are aegisd's: run by hand, it refuses
    "$(dirname "$AEGISD")/aegis-shim" 2> err.txt; rc=$?
    [ "$rc" = 2 ] && grep -q "started by aegisd only" err.txt ||
        fail "aegis-shim by hand: exit $rc, $(cat err.txt)"
}

# A task's scheduling policy (field 41 of its stat, counted past the
# command's parentheses): 0 ordinary, 1 FIFO.
policy_of() { sed 's/.*) //' "$1/stat" | awk '{print $39}'; }

# Whether aegisd can weigh its jobs' sessions: where the kernel shares CPU
# by session (autogroups), with CAP_SYS_ADMIN (bit 21 of its effective
# set); without it the kernel takes one change a tenth of a second,
# machine-wide, and refuses the others.
may_weigh_sessions() {
    local caps
    [ -r /proc/self/autogroup ] || return 1
    caps=$(awk '/^CapEff:/ {print $2}' "/proc/$(daemon_pid)/status")
    (( (16#$caps >> 21) & 1 ))
}

# sessions_weigh NICE PID...: each PID's session weighs as NICE.
sessions_weigh() {
    local want=$1 pid
    shift
    for pid in "$@"; do
        grep -q " nice $want\$" "/proc/$pid/autogroup" ||
            fail "$(cat "/proc/$pid/cmdline" | tr '\0' ' '): its session: $(cat "/proc/$pid/autogroup"), not nice $want"
    done
}

# job_session_nice reaches the job, its watcher and the launcher.
case_churn_session_nice() {
    echo "job_session_nice: 3" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit -- sleep 60) || fail submit
    until_job "$id" "assert d['attempt_list'][-1].get('job_pid')"
    att=$("$AEGIS" show --json "$id" | pyjson "a=d['attempt_list'][-1]; print(a['shim_pid'], a['job_pid'])")
    read -r shim job <<< "$att"
    launcher=$(pgrep -P "$(daemon_pid)" -x aegis-launcher) || fail "no launcher"
    may_weigh_sessions || { echo "aegisd cannot weigh sessions here"; exit 77; }
    sessions_weigh 3 "$launcher" "$shim" "$job"
}

# watch_states FIRST LAST: on one connection, asks the states of jobs LAST
# and FIRST over and over until FIRST is cancelled (60 s at most); prints
# "between" if it ever saw LAST cancelled, then FIRST still queued.
watch_states() {
    python3 - "$AEGIS_SOCKET" "$1" "$2" <<'PY'
import json, socket, sys, time
path, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_UNIX); s.connect(path); f = s.makefile("rb")
def state(i):
    s.sendall(b'{"op":"show","id":%d}\n' % i)
    return json.loads(f.readline())["job"]["state"]
open("watching", "w").close()
between, deadline = False, time.time() + 60
while time.time() < deadline:
    # last, then first: a cancel that ends them all in one go cannot show
    # the last one cancelled and, later, the first one still queued
    b = state(last)
    a = state(first)
    between = between or (b == "cancelled" and a == "queued")
    if a == "cancelled":
        break
print("between" if between else "all at once")
PY
}

# Cancelling 10,000 queued jobs in one request does not freeze aegisd:
# another client is answered while they end, so it sees some of them
# cancelled and the others not yet (the old aegisd ended them all in one
# go, and answered no one meanwhile). The client that cancelled gets its
# answer once all have ended.
case_churn_cancel_many() {
    start
    cd "$DIR/work"
    for g in 0 1 2; do "$AEGIS" drain $g > /dev/null || fail drain; done
    seq 5000 | sed 's/.*/true/' > array.txt
    for i in 1 2; do "$AEGIS" submit --array array.txt >> ids.txt || fail submit; done
    watch_states "$(head -1 ids.txt)" "$(tail -1 ids.txt)" > seen.txt &
    watcher=$!
    wait_until "the watcher connects" test -e watching
    "$AEGIS" cancel $(cat ids.txt) > cancel.out || fail cancel
    [ "$(wc -l < cancel.out)" = 10000 ] || fail "cancelled $(wc -l < cancel.out)"
    # its answer came once all had ended
    "$AEGIS" show --json "$(head -1 ids.txt)" | pyjson "assert d['state']=='cancelled', d" ||
        fail "answered before its jobs ended"
    wait $watcher
    [ "$(cat seen.txt)" = between ] ||
        fail "no other client answered while the jobs were cancelled ($(cat seen.txt))"
}

e2e_run
