#!/bin/bash
# e2e_life.sh -- a job's life across faults, end to end: processes a job
# leaves behind, GPU memory aegisd did not place, a state disk that cannot
# be written, kill -9 at random points of launches and exits, and a cancel
# across a crash.
#
# usage: e2e_life.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG CASE, with
# AEGIS_TEST_FAULT naming libaegis-testfault.so (fault_inject.c) for the
# cases that inject faults; exit 0 pass, 1 fail, 77 skipped.
set -u
AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6
source "$(dirname "$0")/e2e_lib.sh"

# LD_PRELOAD for aegisd (and so its shims) with the fault library; a
# sanitized aegisd needs its sanitizer runtimes first in the list.
fault_preload() {
    [ -n "${AEGIS_TEST_FAULT:-}" ] && [ -e "$AEGIS_TEST_FAULT" ] ||
        { echo "no AEGIS_TEST_FAULT library"; exit 77; }
    local runtimes
    runtimes=$(ldd "$AEGISD" | awk '/lib(asan|ubsan)\.so/ {printf "%s:", $3}')
    PRELOAD="$runtimes$AEGIS_TEST_FAULT"
}

# Starts aegisd with the fault library, what it says before it serves
# into file $1 (default: nowhere).
fstart() {
    LD_PRELOAD=$PRELOAD "$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" \
        --config "$DIR/aegis.yaml" 2> "${1:-/dev/null}"
}

# Polls the Python condition $2 on `show --json` of job $1 until it holds,
# for at most $3 seconds (default 30).
until_show() {
    local end=$((SECONDS + ${3:-30}))
    until "$AEGIS" show --json "$1" 2>/dev/null | pyjson "assert $2" 2>/dev/null; do
        [ $SECONDS -lt $end ] || fail "job $1 never reached: $2 ($("$AEGIS" show "$1"))"
        sleep 0.1
    done
}

# The test GPU allocation file of process $2 on GPU $1 exists.
holds() { [ -e "$AEGIS_TEST_GPU_DIR/gpu$1.$2" ]; }

# A job that exits leaving two GPU processes behind, one in its session and
# one that left it (setsid): both are killed when it ends and recorded, and
# the big job placed next on its GPU does not run out of memory.
case_life_leftover() {
    start
    cd "$DIR/work"
    a=$("$AEGIS" submit -- sh -c '"$0" --mib 30000 --seconds 60 & echo $! > kept.pid
        setsid "$0" --mib 2000 --seconds 60 & echo $! > fled.pid
        until [ -e "$AEGIS_TEST_GPU_DIR/gpu0.$(cat kept.pid)" ]; do sleep 0.05; done
        until [ -e "$AEGIS_TEST_GPU_DIR/gpu0.$(cat fled.pid)" ]; do sleep 0.05; done
        exit 0' "$FAKE") || fail submit
    "$AEGIS" wait "$a" > /dev/null || fail "first job: $("$AEGIS" show "$a")"
    for p in $(cat kept.pid fled.pid); do
        kill -0 "$p" 2>/dev/null && fail "process $p of a finished job still runs"
    done
    "$AEGIS" show "$a" | grep -q "attempt 1 left 2 processes behind: killed" ||
        fail "leftovers not recorded: $("$AEGIS" show "$a")"
    b=$("$AEGIS" submit --mem 30000 -- "$FAKE" --mib 30000 --seconds 1) || fail submit
    "$AEGIS" wait "$b" > /dev/null || fail "big job after leftovers: $("$AEGIS" show "$b")"
    "$AEGIS" show --json "$b" | pyjson "assert d['attempts']==1, d" || fail "big job retried"
}

# GPU memory held by processes aegisd did not start (one there before it
# starts, one after): those GPUs are not idle, big jobs go elsewhere, and
# the processes are left alone.
case_life_foreign() {
    cd "$DIR/work"
    f0= f1=
    trap 'kill $f0 $f1 2>/dev/null; cleanup' EXIT
    CUDA_VISIBLE_DEVICES=GPU-aegis-test-0000-0 "$FAKE" --mib 30000 --seconds 60 > /dev/null &
    f0=$!
    until holds 0 $f0; do sleep 0.05; done
    start 2> start.err
    CUDA_VISIBLE_DEVICES=GPU-aegis-test-0000-1 "$FAKE" --mib 30000 --seconds 60 > /dev/null &
    f1=$!
    wait_until "foreign memory on GPU 1 noticed" grep -q \
        "GPU 1: 30000 MiB in use by processes aegisd did not start" "$DIR/state/aegisd.log"
    grep -q "GPU 0: 30000 MiB in use by processes aegisd did not start (pid $f0)" \
        start.err || fail "foreign memory at start not noticed: $(cat start.err)"
    b1=$("$AEGIS" submit --mem 30000 -- "$FAKE" --mib 30000 --seconds 1) || fail submit
    b2=$("$AEGIS" submit --mem 30000 -- "$FAKE" --mib 30000 --seconds 1) || fail submit
    "$AEGIS" wait "$b1" "$b2" > /dev/null ||
        fail "big jobs beside foreign memory: $("$AEGIS" show "$b1") $("$AEGIS" show "$b2")"
    for b in $b1 $b2; do
        "$AEGIS" show --json "$b" | pyjson "
a=d['attempt_list']; assert [x['gpus'] for x in a]==['2'], a" || fail "job $b placed beside foreign memory"
    done
    kill -0 $f0 && kill -0 $f1 || fail "aegisd killed a process it did not start"
    kill $f0 $f1
    wait
    until grep -q "GPU 1: no memory in use by processes aegisd did not start" \
            "$DIR/state/aegisd.log"; do sleep 0.1; done
}

# The watcher cannot write its status file (the disk is full) when its job
# ends: the attempt is not lost and the job not run again; a job placed
# meanwhile waits, queued, for its status file; once the disk has room,
# both end done.
case_life_statusfull() {
    fault_preload
    export AEGIS_FAULT_PREFIX=$DIR/state/run/ AEGIS_FAULT_TRIGGER=$DIR/full
    fstart || fail "aegisd did not start"
    cd "$DIR/work"
    id=$("$AEGIS" submit -- sh -c 'echo "$AEGIS_JOB_ID $AEGIS_ATTEMPT" >> runs
        until [ -e go ]; do sleep 0.05; done; touch ended') || fail submit
    until_show "$id" "d['state']=='running'"
    touch "$DIR/full" go
    until [ -e ended ]; do sleep 0.05; done
    # the job has ended; for two seconds its outcome cannot be written
    end=$((SECONDS + 2))
    while [ $SECONDS -lt $end ]; do
        "$AEGIS" show --json "$id" | pyjson "
assert d['state']=='running' and d['attempts']==1, d" || fail "status lost: $("$AEGIS" show "$id")"
        sleep 0.2
    done
    grep -q "aegis-shim: job $id attempt 1: cannot record its end" \
        "$DIR/state/aegisd.log" || fail "no write failed: no fault injected?"
    # a job placed now cannot have a status file: it waits, and aegisd
    # takes no more jobs meanwhile
    id2=$("$AEGIS" submit -- sh -c 'echo "$AEGIS_JOB_ID $AEGIS_ATTEMPT" >> runs') || fail submit
    until "$AEGIS" submit -- true 2>&1 | grep -q "cannot write its state.*run/"; do sleep 0.1; done
    "$AEGIS" show --json "$id2" | pyjson "assert d['state']=='queued', d" ||
        fail "job not kept queued: $("$AEGIS" show "$id2")"
    grep -q "^$id2 " runs && fail "job $id2 ran without a status file"
    rm "$DIR/full"
    "$AEGIS" wait "$id" "$id2" > /dev/null ||
        fail "jobs not done: $("$AEGIS" show "$id") $("$AEGIS" show "$id2")"
    [ "$(sort runs)" = "$(printf '%s 1\n%s 1' "$id" "$id2")" ] || fail "a job ran again: $(cat runs)"
}

# The job's own process cannot record its start in the status file (the
# disk fails between the watcher's start and its fork), so it never runs
# its command: the attempt is queued again as never started, and once the
# disk is back the job runs once and ends done. Its watcher recorded the
# process's exit 126 as the job's, which failed it for good.
case_life_startfull() {
    fault_preload
    export AEGIS_FAULT_PREFIX=$DIR/state/run/ AEGIS_FAULT_TRIGGER=$DIR/full
    export AEGIS_FAULT_SHIM_WAIT=$DIR/work/hold
    fstart || fail "aegisd did not start"
    cd "$DIR/work"
    touch hold
    id=$("$AEGIS" submit -- sh -c 'echo "$AEGIS_ATTEMPT" >> runs') || fail submit
    until_show "$id" "d['state'] == 'running'"
    touch "$DIR/full"
    rm hold
    wait_until "the watcher's end" grep -q -E \
        "aegis-shim: job $id attempt 1: (its process did not record its start|cannot record its end)" \
        "$DIR/state/aegisd.log"
    rm "$DIR/full"
    "$AEGIS" wait "$id" > /dev/null || fail "not done: $("$AEGIS" show "$id")"
    "$AEGIS" show "$id" > shown
    grep -q "attempt 1 never started" shown || fail "not queued again: $(cat shown)"
    [ "$(cat runs)" = 1 ] || fail "ran as attempt $(cat runs): $(cat shown)"
}

# A state disk really full, not one the fault library stands in for: a
# small tmpfs, filled. aegisd refuses jobs saying the disk is full, keeps
# a job's end that it cannot save, and saves it once there is room, so
# that it holds across a kill -9. After that kill, with its database's
# write-ahead log still there, aegisd starts on a full disk and refuses
# jobs; stopped cleanly (the log folded in and removed), it refuses to
# start, naming the system's reason (SQLite alone said "disk I/O error").
case_life_realfull() {
    [ "$(id -u)" = 0 ] || { echo "needs root to mount a tmpfs"; exit 77; }
    mkdir "$DIR/state"
    mount -t tmpfs -o size=8m,mode=0700 aegis-e2e "$DIR/state" ||
        { echo "cannot mount a tmpfs here"; exit 77; }
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit -- sh -c 'until [ -e go ]; do sleep 0.05; done') || fail submit
    until_show "$id" "d['state'] == 'running'"
    fill() { dd if=/dev/zero of="$DIR/state/filler" bs=4k 2> /dev/null; }
    refuses_full() {
        "$AEGIS" submit -- true 2> refused && fail "a job taken on a full disk ($1)"
        grep -q "cannot write its state.*disk is full" refused ||
            fail "refused for another reason ($1): $(cat refused)"
    }
    fill
    touch go
    until_show "$id" "d['state'] == 'done'"
    refuses_full "running"
    rm "$DIR/state/filler"
    wait_until "the kept writes saved" grep -q "state saved again" "$DIR/state/aegisd.log"
    signal_stop KILL
    fill
    start
    # (a tmpfs reuses a freed page at once: an ext4 disk, which frees a
    # block only at its journal's commit, could lose a pid written after
    # the file was emptied)
    [ "$(daemon_pid)" ] || fail "no pid in the lock file on a full disk"
    refuses_full "restarted"
    "$AEGIS" show --json "$id" | pyjson "assert d['state'] == 'done', d" ||
        fail "the end saved on a full disk was lost: $("$AEGIS" show "$id")"
    rm "$DIR/state/filler"
    signal_stop TERM
    fill
    "$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" \
        --config "$DIR/aegis.yaml" 2> start.err &&
        fail "started with no room for its log: $(cat start.err)"
    grep -q "aegis.db: .*(No space left on device)" start.err ||
        fail "the refusal does not say the disk is full: $(cat start.err)"
    rm "$DIR/state/filler"
    start
    "$AEGIS" wait "$("$AEGIS" submit -- true)" > /dev/null || fail "no job runs once there is room"
}

# A job ends while aegisd is down; the next aegisd, whose database cannot
# be written, settles that end in memory only, and is killed -9 before it
# can save it. Its status file, the only record of the end, must still be
# there: the sweep of settled files took it, and the aegisd after found
# the attempt running in its database without one, queued it again as
# never started, and the job ran twice (the chaos hunt's finding).
case_life_recover_dbfull() {
    fault_preload
    # its write-ahead log only: the database opens, and its first commit
    # fails (the shared-memory file, made again at the open, must work)
    export AEGIS_FAULT_PREFIX=$DIR/state/aegis.db-wal AEGIS_FAULT_TRIGGER=$DIR/full
    fstart || fail "aegisd did not start"
    cd "$DIR/work"
    id=$("$AEGIS" submit -- sh -c 'echo "$AEGIS_ATTEMPT" >> runs
        until [ -e go ]; do sleep 0.05; done') || fail submit
    # its command runs, not only "running": the watcher is spawned off
    # aegisd's loop, and a kill before the spawn leaves no job to end
    until_file runs
    signal_stop KILL
    touch go
    status=$DIR/state/run/$id.1.status
    wait_until "the job's end recorded" grep -q " ended " "$status"
    touch "$DIR/full"
    # recovery is over once it answers; what it said before is on stderr
    fstart start.err || fail "aegisd did not start on a full disk"
    grep -q "STATE NOT SAVED" start.err || fail "the end was saved: no fault? $(cat start.err)"
    [ -e "$status" ] || fail "the unsaved end's status file was removed"
    signal_stop KILL
    rm "$DIR/full"
    fstart || fail "aegisd did not start"
    "$AEGIS" wait "$id" > /dev/null || fail "not done: $("$AEGIS" show "$id")"
    [ "$(cat runs)" = 1 ] || fail "ran again: $(cat runs); $("$AEGIS" show "$id")"
}

# aegisd cannot write its database: it refuses new jobs saying why, and
# refuses a cancel it cannot record; a job that ends meanwhile shows done
# at once and is saved once the database can be written again, when jobs
# are taken again.
case_life_dbfull() {
    fault_preload
    export AEGIS_FAULT_PREFIX=$DIR/state/aegis.db AEGIS_FAULT_TRIGGER=$DIR/full
    fstart || fail "aegisd did not start"
    cd "$DIR/work"
    j1=$("$AEGIS" submit -- sh -c 'echo "$AEGIS_JOB_ID $AEGIS_ATTEMPT" >> runs
        until [ -e go ]; do sleep 0.05; done') || fail submit
    j2=$("$AEGIS" submit -- sleep 60) || fail submit
    until_show "$j1" "d['state']=='running'"
    until_show "$j2" "d['state']=='running'"
    touch "$DIR/full"
    "$AEGIS" submit -- true > out 2> err && fail "submit accepted on a full disk"
    grep -q "cannot write its state.*aegis.db.*full" err || fail "submit refused unclearly: $(cat err)"
    grep -q "cannot write.*aegis.db" "$DIR/state/aegisd.log" || fail "not logged"
    touch go
    until_show "$j1" "d['state']=='done'" 10 # said, though not saved yet
    "$AEGIS" wait "$j1" > out || fail "j1 not done: $(cat out)"
    "$AEGIS" cancel "$j2" > out 2> err && fail "cancel answered though not recorded: $(cat out)"
    grep -q "cannot write its state" err || fail "cancel refused unclearly: $(cat err)"
    until_show "$j2" "d['state']=='running'" 2
    rm "$DIR/full"
    until "$AEGIS" submit -- true > out 2> err; do
        grep -q "cannot write its state" err || fail "submit: $(cat err)"
        sleep 0.2
    done
    until_show "$j1" "d['state']=='done' and d['attempts']==1" 5
    [ "$(cat runs)" = "$j1 1" ] || fail "j1 ran again: $(cat runs)"
    # its status file, kept while its end was not saved, goes now
    wait_until "j1's status file removed" eval "[ ! -e '$DIR/state/run/$j1.1.status' ]"
    "$AEGIS" cancel "$j2" > /dev/null || fail "cancel after recovery"
    "$AEGIS" wait "$j2" | grep -q cancelled || fail "j2 not cancelled"
    "$AEGIS" wait "$(cat out)" > /dev/null || fail "job submitted after recovery"
}

# A job that ends done while the database cannot be written: its afterok
# dependent runs and its afternotok one is cancelled. The database still
# had it running, and the dependents were judged by that: the afterok one
# cancelled ("job 1, which it runs after (afterok), running"), the
# afternotok one run.
case_life_deps_dbfull() {
    fault_preload
    export AEGIS_FAULT_PREFIX=$DIR/state/aegis.db AEGIS_FAULT_TRIGGER=$DIR/full
    fstart || fail "aegisd did not start"
    cd "$DIR/work"
    a=$("$AEGIS" submit -- sh -c 'until [ -e go ]; do sleep 0.05; done') || fail submit
    ok=$("$AEGIS" submit --after afterok:"$a" -- true) || fail submit
    notok=$("$AEGIS" submit --after afternotok:"$a" -- true) || fail submit
    until_show "$a" "d['state']=='running'"
    touch "$DIR/full"
    "$AEGIS" submit -- true > /dev/null 2>&1 && fail "submit accepted on a full disk"
    touch go
    until_show "$a" "d['state']=='done'" 10
    until_show "$notok" "d['state']=='cancelled'" 5
    until_show "$ok" "d['state']=='queued'" 2
    rm "$DIR/full"
    "$AEGIS" wait "$ok" > /dev/null || fail "afterok job: $("$AEGIS" show "$ok")"
}

# A hold, a release and a drain while the database cannot be written are
# refused, as a submit and a cancel are: answered, they were kept in memory
# only, and a kill -9 before the disk came back lost them. The first,
# whose own commit finds the disk full, says it is not saved. Once the
# disk is back they are answered, and hold across a kill -9: the held job
# is still held, the released one has run, the drain is there.
case_life_limits_dbfull() {
    fault_preload
    export AEGIS_FAULT_PREFIX=$DIR/state/aegis.db AEGIS_FAULT_TRIGGER=$DIR/full
    fstart || fail "aegisd did not start"
    cd "$DIR/work"
    # a job filling every GPU: what follows is queued
    big=$("$AEGIS" submit --gpus 3 -- "$FAKE" --mib "$FULL_MIB" --seconds 600) || fail submit
    until_show "$big" "d['state']=='running'"
    held=$("$AEGIS" submit -- true) || fail "submit held"
    freed=$("$AEGIS" submit -- true) || fail "submit freed"
    "$AEGIS" hold "$freed" > /dev/null || fail "hold before the disk is full"
    touch "$DIR/full"
    "$AEGIS" hold "$held" > /dev/null 2> err && fail "hold on a full disk answered"
    grep -q "held, but not saved: aegisd cannot write its state" err ||
        grep -q "not held: aegisd cannot write its state" err || fail "hold: $(cat err)"
    "$AEGIS" release "$freed" > /dev/null 2> err && fail "release on a full disk answered"
    grep -q "not released: aegisd cannot write its state" err || fail "release: $(cat err)"
    "$AEGIS" drain 1 --reason "full disk test" > /dev/null 2> err &&
        fail "drain on a full disk answered"
    grep -q "not drained: aegisd cannot write its state" err || fail "drain: $(cat err)"
    "$AEGIS" show --json "$freed" | pyjson "assert d['held'] is True, d" ||
        fail "a refused release was done: $("$AEGIS" show "$freed")"
    rm "$DIR/full"
    until "$AEGIS" submit -- true > out 2> err; do
        grep -q "cannot write its state" err || fail "submit: $(cat err)"
        sleep 0.2
    done
    "$AEGIS" hold "$held" > /dev/null || fail "hold once the disk is back"
    "$AEGIS" release "$freed" > /dev/null || fail "release once the disk is back"
    "$AEGIS" drain 1 --reason "full disk test" > /dev/null || fail "drain"
    signal_stop KILL
    fstart || fail "aegisd did not start again"
    "$AEGIS" show --json "$held" | pyjson "assert d['held'] is True, d" ||
        fail "hold lost: $("$AEGIS" show "$held")"
    "$AEGIS" show --json "$freed" | pyjson "assert d['held'] is False, d" ||
        fail "release lost: $("$AEGIS" show "$freed")"
    "$AEGIS" gpus --json | pyjson "
g=d['gpus'][1]
assert g['drained'] and g['drain_reason']=='full disk test', g" ||
        fail "drain lost: $("$AEGIS" gpus)"
    "$AEGIS" cancel "$big" "$held" > /dev/null || fail cancel
    "$AEGIS" wait "$freed" > /dev/null || fail "released job not done"
}

# kill -9 aegisd at random points while clients submit and cancel, with
# every fsync slowed down (its commits take longest): no acknowledged job or
# cancel is lost, no job runs twice or stays unfinished.
case_life_crash() {
    fault_preload
    export AEGIS_FAULT_FSYNC_MS=15
    fstart || fail "aegisd did not start"
    cd "$DIR/work"
    : > runs
    submitter() {
        for i in $(seq 40); do
            until id=$("$AEGIS" submit -- sh -c \
                    'echo "$AEGIS_JOB_ID $AEGIS_ATTEMPT" >> runs; sleep 0.$(($$ % 4))' \
                    2>/dev/null); do sleep 0.05; done
            echo "$id" >> "acked.$1"
        done
    }
    canceller() { # every fifth job of submitter 1, while it may still run
        local n=0
        while kill -0 "$1" 2>/dev/null || [ $n -lt 8 ]; do
            id=$(sed -n "$((n * 5 + 1))p" acked.1 2>/dev/null)
            if [ -z "$id" ]; then sleep 0.1; continue; fi
            echo "$id" >> tried # a cancel unanswered may still hold
            for try in 1 2 3 4 5 6 7 8 9 10; do # until aegisd answers
                if "$AEGIS" cancel "$id" > /dev/null 2> cancel.err; then
                    echo "$id" >> cancelled
                    break
                fi
                grep -q "already finished" cancel.err && break
                sleep 0.1
            done
            n=$((n + 1))
        done
    }
    submitter 1 & s1=$!
    submitter 2 & s2=$!
    submitter 3 & s3=$!
    canceller $s1 & c=$!
    kills=0 end=$((SECONDS + 40))
    while [ $SECONDS -lt $end ]; do
        sleep "0.$((RANDOM % 6))$((RANDOM % 10))"
        p=$(daemon_pid); [ -n "$p" ] && kill -9 "$p" && kills=$((kills + 1))
        until fstart; do sleep 0.05; done
        kill -0 $s1 $s2 $s3 $c 2>/dev/null && continue
        "$AEGIS" ls --json 2>/dev/null | pyjson "assert not d" 2>/dev/null && break
    done
    wait $s1 $s2 $s3 $c
    cat acked.1 acked.2 acked.3 > acked
    touch cancelled tried
    echo "kills: $kills, acknowledged: $(wc -l < acked), cancels: $(wc -l < cancelled), runs: $(wc -l < runs)"
    [ "$kills" -ge 10 ] || fail "only $kills kills"
    timeout 30 "$AEGIS" wait $(cat acked) > /dev/null
    [ $? = 124 ] && fail "jobs stuck: $("$AEGIS" ls)"
    "$AEGIS" ls --all --json | python3 -c "
import collections, json, sys
jobs = {j['id']: j for j in json.load(sys.stdin)}
acked = [int(x) for x in open('acked')]
cancelled = {int(x) for x in open('cancelled')}
tried = {int(x) for x in open('tried')}
runs = collections.Counter()
for line in open('runs'):
    job, attempt = map(int, line.split())
    assert attempt == 1, ('a second attempt', line)
    runs[job] += 1
assert len(acked) == 120 and len(set(acked)) == 120, acked
for i in acked:
    j = jobs.get(i)
    assert j, ('acknowledged job lost', i)
    if i in cancelled:
        assert j['state'] == 'cancelled', ('cancel lost', j)
    elif i in tried:
        assert j['state'] in ('cancelled', 'done'), j
    else:
        assert j['state'] == 'done', ('not done', j)
    assert runs[i] <= 1, ('ran twice', i, runs[i])
    assert runs[i] == 1 or j['state'] == 'cancelled', ('never ran', j)
" || { # each job run more than once or as a later attempt, with its events
        sort runs | awk '$2 != 1 || $1 == last {print $1} {last = $1}' |
            sort -u | while read -r id; do "$AEGIS" show "$id"; done
        fail "jobs after crashes"; }
}

# A watcher that cannot fork its job leaves its attempt unstarted: the job
# is queued again at that attempt, and when the watcher's end is read at
# its SIGCHLD (most times) started again in the same turn of aegisd's
# loop, its new status file under the old one's name. After the second
# such watcher in a row the job waits, longer each time, and says so.
# Once forks work again it runs once, as attempt 1, and ends done: the
# launch retired the unstarted attempt's file before making the new one,
# which the turn's end used to take from the new watcher. Three jobs, so
# that at least one start again falls in the same turn.
case_life_unstarted() {
    fault_preload
    export AEGIS_FAULT_SHIM_FORK=$DIR/work/nofork # read in aegisd's watchers
    port=$(free_port)
    echo "metrics_listen: 127.0.0.1:$port" >> "$DIR/aegis.yaml"
    fstart || fail "aegisd did not start"
    cd "$DIR/work"
    for job in 1 2 3; do
        touch nofork
        id=$("$AEGIS" submit -- sh -c 'echo "$AEGIS_ATTEMPT" >> runs') || fail submit
        until_show "$id" "'watchers in a row ended without starting it' in d.get('wait_reason', '')"
        # counted as waiting out a back-off (it was "dependency"); asked
        # again, since the job leaves it each time it is tried
        wait_until "the back-off in /metrics" eval 'curl -s -m 5 \
            "http://127.0.0.1:$port/metrics" | grep -q "^aegis_queue_jobs{reason=\"backoff\"} 1$"'
        rm nofork
        "$AEGIS" wait "$id" > /dev/null || fail "not done: $("$AEGIS" show "$id")"
        "$AEGIS" show "$id" > shown
        [ "$(cat runs)" = 1 ] || fail "ran as attempt $(cat runs): $(cat shown)"
        # two at once, then 1 s, 2 s, 4 s ... apart, however slow the
        # checks were: replaced at once every time, it was hundreds a second
        [ "$(grep -c 'never started' shown)" -le 8 ] || fail "not held back: $(cat shown)"
        rm runs
    done
}

# A job cancelled while its watcher, which will not start it, still runs:
# the watcher's end finds it cancelling, and it ends cancelled, nothing of
# it touched after that (aegisd read the freed job: a sanitizer build
# aborted), and aegisd goes on.
case_life_unstarted_cancel() {
    fault_preload
    export AEGIS_FAULT_SHIM_FORK=$DIR/work/nofork AEGIS_FAULT_SHIM_WAIT=$DIR/work/hold
    fstart || fail "aegisd did not start"
    cd "$DIR/work"
    touch nofork hold
    id=$("$AEGIS" submit -- true) || fail submit
    until_show "$id" "d['state'] == 'running'"
    "$AEGIS" cancel "$id" | grep -q "cancelled $id" || fail "cancel not answered"
    rm hold
    "$AEGIS" wait "$id" > /dev/null
    "$AEGIS" show "$id" > shown || fail "aegisd gone after the cancel"
    grep -q "^state *cancelled" shown || fail "not cancelled: $(cat shown)"
    grep -q "queued again in" shown && fail "held back after its cancel: $(cat shown)"
    rm nofork
    "$AEGIS" wait "$("$AEGIS" submit -- true)" > /dev/null || fail "the next job"
}

# A job that ignores SIGTERM is cancelled ("cancelled" answered), then
# aegisd is killed -9 and restarted: the cancel holds, the job is killed
# when its grace time is up and ends cancelled, not done.
case_life_cancel() {
    start
    cd "$DIR/work"
    # it runs 60 s: well past the 10 s grace and a restart on a loaded machine
    id=$("$AEGIS" submit -- sh -c 'trap "echo TERM >> terms" TERM; touch started
        i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done; touch finished') || fail submit
    until [ -e started ]; do sleep 0.05; done
    "$AEGIS" cancel "$id" | grep -q "cancelled $id" || fail "cancel not answered"
    signal_stop KILL
    start
    "$AEGIS" wait "$id" > out
    grep -q "cancelled" out || fail "cancel lost in a crash: $(cat out); $("$AEGIS" show "$id")"
    [ -e finished ] && fail "the cancelled job ran to its end"
    [ -s terms ] || fail "the job never got SIGTERM"
}

# A job cancelled right after it started (before aegisd's next look at
# its status file, each second) gets its SIGTERM at once: its pids are read
# as the cancel is, and the cancel's event names its session.
case_life_cancel_prompt() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit -- sh -c 'trap "echo TERM >> terms; exit 0" TERM
        touch started; while :; do sleep 0.1; done') || fail submit
    until [ -e started ]; do sleep 0.01; done
    "$AEGIS" cancel "$id" | grep -q "cancelled $id" || fail "cancel not answered"
    "$AEGIS" show --json "$id" | pyjson "
ev=[e for e in d['events'] if 'cancel: SIGTERM' in str(e)]
assert ev and 'sent to session' in str(ev[-1]) and 'session 0' not in str(ev[-1]), ev" ||
        fail "SIGTERM not sent as the cancel was: $("$AEGIS" show "$id")"
    "$AEGIS" wait "$id" | grep -q cancelled || fail "not cancelled: $("$AEGIS" show "$id")"
    [ -s terms ] || fail "the job never got SIGTERM"
}

# A cancelled job keeps its GPU until its processes have gone: one that
# saves a checkpoint as it stops (--linger) still holds its memory, so a
# job that needs that memory waits for it, where starting at once it ran
# out of memory, and on a GPU it had alone was failed for good.
case_life_cancel_gpu() {
    export AEGIS_TEST_GPUS=1x40960
    start
    cd "$DIR/work"
    old=$("$AEGIS" submit --mem 30000 -- "$FAKE" --mib 30000 --seconds 600 \
        --linger "$DIR/work/saved") || fail submit
    wait_until "the first job active" is_active "$old"
    "$AEGIS" cancel "$old" | grep -q "cancelled $old" || fail "cancel not answered"
    new=$("$AEGIS" submit --mem 30000 -- "$FAKE" --mib 30000 --seconds 1) ||
        fail submit
    wait_until "the new job's reason" eval \
        '[ -n "$(job_field "$new" wait_code)" ] || ! is_state "$new" queued'
    is_state "$new" queued ||
        fail "the new job started beside the stopping one: $("$AEGIS" show "$new")"
    touch saved
    "$AEGIS" wait "$new" > out || fail "the new job: $(cat out)"
    "$AEGIS" wait "$old" | grep -q cancelled || fail "the first job not cancelled"
}

e2e_run
