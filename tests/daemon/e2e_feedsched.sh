#!/bin/bash
# e2e_feedsched.sh AEGISD AEGIS NVML FAKE CATALOG CASE -- the data feed in
# the scheduler, on the test GPUs: a managed producer (aegis feed start)
# sleeps until its feed's first job, is placed first and started once;
# its three consumers (quiet: no gate but the observation refuses them)
# run together beside it on one GPU, waiting for it with a REASON that
# names the feed, and it stops after the last; a producer killed mid-run
# is started again for its consumer; one whose consumer ended while
# aegisd was away is stopped by the next aegisd, and one that died while
# aegisd was away is started again for its running consumer; a producer
# is its user's, woken by another user's job only where both trust each
# other.
set -u; AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6; source "$(dirname "$0")/e2e_lib.sh"

all_running() {
    local id
    for id in "$@"; do is_state "$id" running || return 1; done
}
# Whether one of the jobs waits for its feed; its reason, read from the
# same answer (the next may find it running), goes to reason.txt.
feed_reason_seen() {
    local id
    for id in "$@"; do
        "$AEGIS" show --json "$id" 2>/dev/null | pyjson "
assert d['wait_code'] == 'feed'; print(d['wait_reason'])" > reason.txt 2>/dev/null &&
            return 0
    done
    return 1
}

# On one GPU: a consumer leaves its feed's GPU for an idle one when its
# producer is not seen there within observe_s, as on a loaded machine it
# may not be (that preference is the core's, test_feeds.c).
case_feedsched_managed() {
    echo "observe_s: 2" >> "$DIR/aegis.yaml"
    export AEGIS_TEST_GPUS=1x40960
    start
    cd "$DIR/work"
    # the GPU too full for the producer until the test has seen a consumer
    # wait for it (its wait would otherwise last a few seconds)
    full=$("$AEGIS" submit -- "$FAKE" --mib 39000 --seconds 0 --until "$DIR/seen")
    wait_until "the GPU full" is_state "$full" running
    p=$("$AEGIS" feed start imagenet --mem 500 -- "$FAKE" --mib 500 --seconds 600 --smact 0.1) ||
        fail "feed start"
    aegis_refused "usage: aegis feed start NAME" feed start
    aegis_refused "give a command" feed start other --
    "$AEGIS" feed start imagenet -- true 2> err.txt && fail "a second producer taken"
    grep -q "feed imagenet has a producer already (job $p)" err.txt ||
        fail "second producer: $(cat err.txt)"
    sleep 1 # nothing may start it: no consumer yet
    is_state "$p" queued || fail "the producer started without a consumer"
    "$AEGIS" ls --json | pyjson "
j=[j for j in d if j['id']==$p][0]
assert j['kind']=='feed' and j['consumers']==0 and j['wait_code']=='feed', j
assert j['wait_reason']=='no job of feed imagenet queued yet', j" ||
        fail "ls --json of the sleeping producer"
    # they run until the test has seen them together
    c=""
    for i in 1 2 3; do
        c="$c $("$AEGIS" submit --feed imagenet --mem 1000 -- "$FAKE" --mib 1000 \
                   --seconds 0 --until "$DIR/together" --smact 0.1)"
    done
    wait_until "a consumer waiting for its feed" feed_reason_seen $c
    touch "$DIR/seen"
    grep -Eq "^waiting for feed imagenet's (GPU 0|producer)" reason.txt ||
        fail "reason: $(cat reason.txt)"
    wait_until "all three consumers running" all_running $c
    "$AEGIS" ls | grep "^$p " | grep -q "feed:imagenet (3 consumers)" ||
        fail "ls: $("$AEGIS" ls)"
    "$AEGIS" feed ls | grep -Eq "^imagenet +$p +running +$(echo $c | tr ' ' ',')$" ||
        fail "feed ls: $("$AEGIS" feed ls)"
    "$AEGIS" feed ls --json | python3 -c "
import json, sys
m = [x for x in map(json.loads, sys.stdin) if x.get('managed')]
assert len(m) == 1 and m[0]['feed'] == 'imagenet' and m[0]['producer'] == $p, m
assert m[0]['state'] == 'running' and sorted(m[0]['consumers']) == [$(echo $c | tr ' ' ',')], m
" || fail "feed ls --json: $("$AEGIS" feed ls --json)"
    "$AEGIS" show "$p" | grep -q "^feed *imagenet (its producer; 3 consumers)" ||
        fail "show: $("$AEGIS" show "$p")"
    touch "$DIR/together"
    "$AEGIS" wait $c > /dev/null || fail "the consumers did not all succeed"
    "$AEGIS" wait "$p" > wait.txt || fail "producer: $(cat wait.txt)"
    grep -q "stopped: feed imagenet's last consumer ended" wait.txt ||
        fail "producer's end: $(cat wait.txt)"
    python3 - "$("$AEGIS" show --json "$p")" $(for i in $c; do "$AEGIS" show --json "$i"; done | tr -d ' ') <<'PY' ||
import json, sys
p, *cs = (json.loads(x) for x in sys.argv[1:])
assert len(p['attempt_list']) == 1, p['attempt_list']
gpu = p['attempt_list'][0]['gpus']
for c in cs:
    a = c['attempt_list']
    assert len(a) == 1 and a[0]['gpus'] == gpu, (gpu, a)
    assert a[0]['started'] >= p['attempt_list'][0]['started'], (p, a)
assert max(c['attempt_list'][0]['started'] for c in cs) < \
       min(c['attempt_list'][0]['ended'] for c in cs), 'not all together'
assert p['attempt_list'][0]['ended'] >= max(c['attempt_list'][0]['ended'] for c in cs)
PY
        fail "placement: $("$AEGIS" ls --all)"
}

# The producer killed while its consumer runs is started again once, and
# stopped once the consumer is cancelled.
case_feedsched_restart() {
    start
    cd "$DIR/work"
    p=$("$AEGIS" feed start imagenet -- "$FAKE" --mib 500 --seconds 120 --smact 0.1) ||
        fail "feed start"
    c=$("$AEGIS" submit --feed imagenet -- "$FAKE" --mib 1000 --seconds 60)
    wait_until "producer and consumer running" all_running "$p" "$c"
    pid=$(job_field "$p" pid)
    [ -n "$pid" ] && kill -KILL "$pid" || fail "no producer pid"
    wait_until "the producer's second attempt" eval \
        '[ "$(job_field "$p" attempts)" = 2 ] && is_state "$p" running'
    "$AEGIS" show "$p" | grep -q "restarted for its consumers (1 of 3)" ||
        fail "no restart event: $("$AEGIS" show "$p")"
    grep -q "feed imagenet: producer job $p: .*restarted (1 of 3)" \
        "$DIR/state/aegisd.log" || fail "restart not logged"
    "$AEGIS" cancel "$c" || fail cancel
    "$AEGIS" wait "$p" > wait.txt || fail "producer: $(cat wait.txt)"
    is_state "$p" done || fail "producer: $(job_field "$p" state)"
}

# The consumer ends while aegisd is away: the restarted aegisd stops the
# producer it re-adopts.
case_feedsched_recover() {
    start
    cd "$DIR/work"
    p=$("$AEGIS" feed start imagenet -- "$FAKE" --mib 500 --seconds 120 --smact 0.1) ||
        fail "feed start"
    # the consumer runs until aegisd is away (c.go)
    c=$("$AEGIS" submit --feed imagenet -- "$FAKE" --mib 1000 --seconds 0 --smact 0.1 \
        --until "$DIR/c.go")
    wait_until "producer and consumer running" all_running "$p" "$c"
    cpid=$(job_field "$c" pid)
    kill -TERM "$(daemon_pid)"
    wait_until "aegisd gone" eval '[ -z "$(daemon_pid)" ]'
    touch "$DIR/c.go"
    wait_until "the consumer's end" eval '[ ! -e /proc/$cpid ]'
    start
    wait_until "the producer stopped" is_state "$p" done
    is_state "$c" done || fail "consumer: $(job_field "$c" state)"
    "$AEGIS" show "$p" | grep -q "stopped: feed imagenet's last consumer ended" ||
        fail "producer: $("$AEGIS" show "$p")"
}

# The producer dies while aegisd is away and its consumer still runs: the
# restarted aegisd starts it again for that consumer.
case_feedsched_downkill() {
    start
    cd "$DIR/work"
    p=$("$AEGIS" feed start imagenet -- "$FAKE" --mib 500 --seconds 120 --smact 0.1) ||
        fail "feed start"
    c=$("$AEGIS" submit --feed imagenet -- "$FAKE" --mib 1000 --seconds 60 --smact 0.1)
    wait_until "producer and consumer running" all_running "$p" "$c"
    pid=$(job_field "$p" pid)
    [ -n "$pid" ] || fail "no producer pid"
    kill -TERM "$(daemon_pid)"
    wait_until "aegisd gone" eval '[ -z "$(daemon_pid)" ]'
    kill -KILL "$pid"
    wait_until "the producer's end" eval '[ ! -e /proc/$pid ]'
    start
    wait_until "the producer's second attempt" eval \
        '[ "$(job_field "$p" attempts)" = 2 ] && is_state "$p" running'
    is_state "$c" running || fail "consumer: $(job_field "$c" state)"
    "$AEGIS" show "$p" | grep -q "restarted for its consumers (1 of 3)" ||
        fail "no restart event: $("$AEGIS" show "$p")"
    "$AEGIS" cancel "$c" || fail cancel
    "$AEGIS" wait "$p" > wait.txt || fail "producer: $(cat wait.txt)"
    is_state "$p" done || fail "producer: $(job_field "$p" state)"
}

# What aegisd knows of a producer survives its restart: the restarts it
# has had count on (the third is the third, not the first again), and a
# producer still winding down from its stop when aegisd went away ends
# as done, its feed's last consumer having ended, not as cancelled.
case_feedsched_durable() {
    echo "observe_s: 2" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    # on the GPU, and winding down on SIGTERM until the file "go" exists
    p=$("$AEGIS" feed start imagenet -- sh -c \
        'trap "until [ -e go ]; do sleep 0.1; done; exit 0" TERM
         "$0" --mib 500 --seconds 120 --smact 0.1 & wait' "$FAKE") ||
        fail "feed start"
    c=$("$AEGIS" submit --feed imagenet -- "$FAKE" --mib 1000 --seconds 60 --smact 0.1)
    wait_until "producer and consumer running" all_running "$p" "$c"
    kill_producer() { # N: the attempt that follows
        local pid; pid=$(job_field "$p" pid) next=$1
        [ -n "$pid" ] && kill -KILL -- "-$pid" || fail "no producer pid"
        wait_until "the producer's attempt $next" eval \
            '[ "$(job_field "$p" attempts)" = $next ] && is_state "$p" running'
    }
    restart_aegisd() {
        kill -TERM "$(daemon_pid)"
        wait_until "aegisd gone" eval '[ -z "$(daemon_pid)" ]'
        start
    }
    kill_producer 2
    restart_aegisd
    kill_producer 3
    "$AEGIS" show "$p" | grep -q "restarted for its consumers (2 of 3)" ||
        fail "the restart count did not survive aegisd: $("$AEGIS" show "$p")"
    "$AEGIS" cancel "$c" || fail cancel
    wait_until "the producer's stop" eval \
        '"$AEGIS" show "$p" | grep -q "cancel: SIGTERM sent"'
    restart_aegisd
    touch go
    "$AEGIS" wait "$p" > wait.txt
    is_state "$p" done || fail "producer: $(job_field "$p" state): $(cat wait.txt)"
    grep -q "stopped: feed imagenet's last consumer ended" wait.txt ||
        fail "producer's end: $(cat wait.txt)"
}

# A producer that never touches its GPU (its batches in host memory) is
# never seen active there: its consumer waits for that GPU's observation
# no longer than observe_s, then goes where it fits.
case_feedsched_cpuproducer() {
    echo "observe_s: 2" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    p=$("$AEGIS" feed start imagenet -- sh -c 'while :; do sleep 0.1; done') ||
        fail "feed start"
    c=$("$AEGIS" submit --feed imagenet -- "$FAKE" --mib 1000 --seconds 60 --smact 0.1)
    wait_until "producer and consumer running" all_running "$p" "$c"
    "$AEGIS" cancel "$c" || fail cancel
    "$AEGIS" wait "$p" > /dev/null
    is_state "$p" done || fail "producer: $(job_field "$p" state)"
}

# A held consumer has not ended: when the others end, the producer is
# stopped but goes back to sleep (also across a restart of aegisd), and
# the release wakes it again for the held one; after that one's end it is
# done.
# hold_setup: producer $p runs for consumer $c1; $c2, held, waits for
# $c1's end; $c1 is cancelled, and $p must go back to sleep for $c2.
hold_setup() {
    echo "observe_s: 2" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    p=$("$AEGIS" feed start imagenet -- "$FAKE" --mib 500 --seconds 120 --smact 0.1) ||
        fail "feed start"
    c1=$("$AEGIS" submit --feed imagenet -- "$FAKE" --mib 1000 --seconds 60 --smact 0.1)
    c2=$("$AEGIS" submit --feed imagenet --after "afterany:$c1" -- "$FAKE" --mib 1000 --seconds 2 --smact 0.1)
    "$AEGIS" hold "$c2" > /dev/null || fail hold
    wait_until "producer and first consumer running" all_running "$p" "$c1"
    "$AEGIS" cancel "$c1" || fail cancel
    wait_until "the producer back to sleep" eval 'asleep || is_state "$p" done'
    asleep || fail "producer: $(job_field "$p" state): $("$AEGIS" show "$p")"
}
asleep() {
    is_state "$p" queued && [ "$(job_field "$p" attempts)" = 1 ] &&
        [ "$(job_field "$p" wait_reason)" = "no job of feed imagenet queued yet" ]
}

case_feedsched_hold() {
    hold_setup
    "$AEGIS" show "$p" | grep -q "back to sleep" || fail "no event: $("$AEGIS" show "$p")"
    kill -TERM "$(daemon_pid)" # and it sleeps on across a restart
    wait_until "aegisd gone" eval '[ -z "$(daemon_pid)" ]'
    start
    asleep || fail "woken by aegisd's restart: $(job_field "$p" state)"
    "$AEGIS" release "$c2" > /dev/null || fail release
    "$AEGIS" wait "$c2" > /dev/null || fail "the held consumer failed"
    "$AEGIS" wait "$p" > wait.txt
    is_state "$p" done || fail "producer: $(job_field "$p" state): $(cat wait.txt)"
    [ "$(job_field "$p" attempts)" = 2 ] || fail "attempts: $(job_field "$p" attempts)"
}

# The held job it slept for is cancelled instead: the producer, which has
# run, ends as done rather than sleeping for ever.
case_feedsched_holdcancel() {
    hold_setup
    "$AEGIS" cancel "$c2" || fail cancel
    wait_until "the producer's end" eval '! asleep'
    is_state "$p" done || fail "producer: $(job_field "$p" state)"
}

# A feed is its owner's: user nobody's producer of "imagenet" does not
# keep user daemon from registering one; daemon's job of the feed wakes
# daemon's producer, never nobody's; nobody's job of daemon's "adata"
# wakes nothing until each names the other in AEGIS_FEED_TRUST.
case_feedsched_owners() {
    needs_root
    start
    cd "$DIR/work"
    chmod 777 .
    producer() { # USER FEED [VAR=VALUE...]: its producer's id
        local u=$1 f=$2; shift 2
        as "$u" env "$@" "$AEGIS" feed start "$f" -- sh -c \
            'id -u >> "$0"; sleep 120' "$DIR/work/$f.uids"
    }
    pb=$(producer nobody imagenet) || fail "feed start by nobody"
    pa=$(producer daemon imagenet) || fail "daemon's imagenet taken by nobody's"
    ca=$(as daemon "$AEGIS" submit --feed imagenet -- sleep 120) || fail submit
    wait_until "daemon's producer running" all_running "$pa" "$ca"
    is_state "$pb" queued || fail "nobody's producer woken: $(job_field "$pb" state)"
    [ "$(sort -u imagenet.uids)" = "$(id -u daemon)" ] ||
        fail "producers ran as: $(cat imagenet.uids)"
    pd=$(producer daemon adata) || fail "feed start adata"
    cb=$(as nobody "$AEGIS" submit --feed adata -- sleep 120) || fail submit
    wait_until "nobody's consumer running" all_running "$cb"
    is_state "$pd" queued || fail "daemon's producer woken by nobody's job"
    "$AEGIS" show "$cb" | grep -q "feed adata: user daemon's producer (job $pd) is not started" ||
        fail "no event: $("$AEGIS" show "$cb")"
    # trusted both ways: nobody's job starts daemon's producer (the GPUs
    # made free for it)
    "$AEGIS" cancel "$cb" "$pd" "$pa" "$ca" > /dev/null || fail cancel
    wait_until "the GPUs free" eval 'is_state "$pd" cancelled &&
        is_state "$pa" cancelled && is_state "$ca" cancelled'

    pt=$(producer daemon adata AEGIS_FEED_TRUST=nobody) || fail "trusting start"
    ct=$(as nobody env AEGIS_FEED_TRUST=daemon "$AEGIS" submit --feed adata -- sleep 120) ||
        fail submit
    wait_until "the trusted producer running" all_running "$pt" "$ct"
    [ "$(sort -u adata.uids)" = "$(id -u daemon)" ] || fail "adata ran as: $(cat adata.uids)"
}

e2e_run
