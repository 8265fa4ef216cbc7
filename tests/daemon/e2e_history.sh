#!/bin/bash
# e2e_history.sh -- end-to-end tests of what aegisd keeps and says about a
# job beyond its state: its history of memory and SM share (show
# --history, --spark, --svg), sampled every second here, across a
# restart; and the notifier it runs at the job's end (submit --notify, the
# config's notify:), as the job's user, timed and logged, never blocking.
#
# usage: e2e_history.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG CASE
set -u
AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6
source "$(dirname "$0")/e2e_lib.sh"

echo "history_period_s: 1" >> "$DIR/aegis.yaml"

# Waits for aegisd's log to hold the fixed string $1.
until_logged() {
    local deadline=$((SECONDS + 30))
    until grep -qF -- "$1" "$DIR/state/aegisd.log"; do
        [ $SECONDS -lt $deadline ] || fail "never logged: $1"
        sleep 0.1
    done
}
# A notifier that writes its user and environment to $1 (whole, by rename).
env_notifier() { echo "{ id -u; env; } > $1.tmp && mv $1.tmp $1"; }
# The value of variable $2 in the environment file $1.
env_of() { sed -n "s/^$2=//p" "$1"; }

# A running job's samples: its memory is what the test GPU reports for
# it, its GPU's use and size too; they survive a restart and go on after
# it; the table, the sparkline, --json and an SVG that parses as XML and
# names the GPU show them.
case_history_samples() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit --name plot -- "$FAKE" --mib 300 --seconds 60) ||
        fail submit
    until_job "$id" "
s=[x for x in d['history']['samples'] if x[1]]
assert len(s) >= 3, d['history']" --history
    gpu=$("$AEGIS" show --json "$id" | pyjson "print(d['gpu_ids'][0])")
    "$AEGIS" gpus --json > gpus.json || fail "aegis gpus"
    "$AEGIS" show --json --history "$id" > h1.json || fail "show --history --json"
    pyjson "
g=json.load(open('gpus.json'))['gpus'][$gpu]
h=d['history']
assert h['columns']==['t','mem_mib','gpu_used_mib','gpu_total_mib','sm_pct'], h
assert h['period_s']==1 and h['gpus'][0]['index']==$gpu, h
for t, mem, used, total, sm in h['samples']:
    assert total==g['total_mib'] and mem in (0, 300), (h, g)
    assert mem==0 or used==mem==g['used_mib'], (h, g)
ts=[x[0] for x in h['samples']]
assert ts==sorted(ts) and len(set(ts))==len(ts), ts" < h1.json ||
        fail "samples do not match the test GPU: $(cat h1.json gpus.json)"
    "$AEGIS" show --history "$id" > table.txt || fail "show --history"
    head -1 table.txt | grep -q "^TIME .*JOB_MIB .*GPU_USED_MIB .*SM%" ||
        fail "no table header: $(cat table.txt)"
    grep -Eq "^[0-9-]+ [0-9:]+ +300 +300 +40960 " table.txt ||
        fail "no row of 300 MiB: $(cat table.txt)"
    "$AEGIS" show --history --spark "$id" > spark.txt || fail "show --spark"
    [ "$(wc -l < spark.txt)" = 1 ] && grep -q "peak 300 MiB of 40960 MiB" spark.txt ||
        fail "sparkline: $(cat spark.txt)"
    before=$(pyjson "print(len(d['history']['samples']))" < h1.json)
    restart
    until_job "$id" "assert len(d['history']['samples']) > $before + 2" --history
    "$AEGIS" show --json --history "$id" | pyjson "
old=json.load(open('h1.json'))['history']['samples']
assert d['history']['samples'][:len(old)]==old" ||
        fail "samples lost across the restart"
    "$AEGIS" show "$id" --svg plot.svg > svg.out || fail "show --svg"
    [ ! -s svg.out ] || fail "--svg printed more: $(cat svg.out)"
    name=$(pyjson "print(d['gpus'][$gpu]['name'])" < gpus.json)
    [ -n "$name" ] || fail "no GPU name in $(cat gpus.json)"
    python3 - plot.svg "$id" "$name" <<'PY' || fail "SVG: $(head -c 2000 plot.svg)"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == '{http://www.w3.org/2000/svg}svg', root.tag
text = ' '.join(''.join(t.itertext()) for t in root.iter('{http://www.w3.org/2000/svg}text'))
assert 'job %s (plot)' % sys.argv[2] in text and sys.argv[3] in text, text
lines = root.findall('{http://www.w3.org/2000/svg}polyline')
assert len(lines) == 3 and all(l.get('points').strip() for l in lines), lines
PY
    aegis_refused "no such job" show --history 999
    "$AEGIS" cancel "$id" > /dev/null || fail cancel
}

# What the history is for: a job that ran out of memory beside a
# neighbour on one GPU keeps its samples after its OOM, and they show the
# neighbour's memory (its GPU's use) beside its own, in the table too.
case_history_oom() {
    export AEGIS_TEST_GPUS=1x40960
    start
    cd "$DIR/work"
    big=$("$AEGIS" submit --name neighbour --mem 34000 -- \
          "$FAKE" --mib 34000 --seconds 600) || fail "submit neighbour"
    until_job "$big" "assert d['state']=='running' and d['active']"
    # beside it (4000 + 2048 MiB fit), then 4000 MiB more: OOM. It grows
    # once the test has seen a sample of it (--until grow), not at a time
    # a loaded machine's sampler may not reach.
    id=$("$AEGIS" submit --name grows --mem 4000 -- \
         "$FAKE" --mib 4000 --seconds 8 --oom-over --until "$DIR/work/grow") ||
        fail "submit grows"
    until_job "$id" "assert [x for x in d['history']['samples'] if x[1]]" --history
    touch grow
    until_job "$id" "assert d['attempt_list'][0]['how']=='oom', d"
    "$AEGIS" show --json --history "$id" | pyjson "
s=[x for x in d['history']['samples'] if x[1]]
assert s, d['history']
assert all(mem==4000 and used==38000 and total==40960 for t, mem, used, total, sm in s), s" ||
        fail "no samples of 4000 MiB beside 34000: $("$AEGIS" show --json --history "$id")"
    "$AEGIS" show --history "$id" > table.txt || fail "show --history"
    grep -Eq "^[0-9-]+ [0-9:]+ +4000 +38000 +40960 " table.txt ||
        fail "no row of 4000 of 38000 MiB: $(cat table.txt)"
    "$AEGIS" cancel "$big" "$id" > /dev/null 2>&1
}

# The notifier runs at the job's end as the job's user (submitted as
# nobody), with the job's id, name, user, state, exit status and duration
# in its environment; a cancelled job's too; the config's notify: serves
# the jobs without --notify, and --notify '' turns it off.
case_notify_env() {
    needs_root
    echo "notify: '$(env_notifier "$DIR/work/default.env")'" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    id=$(as nobody "$AEGIS" submit --name nj --notify "$(env_notifier "$DIR/work/nj.env")" \
         -- sh -c 'sleep 1; exit 3') || fail submit
    until_file nj.env
    [ "$(head -1 nj.env)" = "$(id -u nobody)" ] || fail "notifier not run as nobody"
    [ "$(stat -c %U nj.env)" = nobody ] || fail "nj.env not nobody's"
    [ "$(env_of nj.env AEGIS_JOB_ID)" = "$id" ] || fail "id: $(cat nj.env)"
    [ "$(env_of nj.env AEGIS_JOB_NAME)" = nj ] || fail "name: $(cat nj.env)"
    [ "$(env_of nj.env AEGIS_JOB_USER)" = nobody ] || fail "user: $(cat nj.env)"
    [ "$(env_of nj.env AEGIS_JOB_STATE)" = failed ] || fail "state: $(cat nj.env)"
    [ "$(env_of nj.env AEGIS_JOB_REASON)" = "exit 3" ] || fail "reason: $(cat nj.env)"
    [ "$(env_of nj.env AEGIS_JOB_EXIT_STATUS)" = 3 ] || fail "status: $(cat nj.env)"
    d=$(env_of nj.env AEGIS_JOB_DURATION_S)
    [ "$d" -ge 1 ] && [ "$d" -le 20 ] || fail "duration '$d': $(cat nj.env)"
    until_job "$id" "assert any(e['text']=='notifier exit 0' for e in d['events']), d"
    "$AEGIS" show --json "$id" | pyjson "assert 'nj.env' in d['notify'], d" ||
        fail "show lacks the notifier"
    "$AEGIS" show "$id" | grep -q "^notify .*nj.env" || fail "show text: no notify"
    as daemon "$AEGIS" show --json "$id" | pyjson "assert 'notify' not in d, d" ||
        fail "another user sees the notifier"
    # cancelled while it runs
    long=$("$AEGIS" submit --notify "$(env_notifier "$DIR/work/c.env")" -- sleep 60) ||
        fail "submit long"
    until_job "$long" "assert d['state']=='running'"
    "$AEGIS" cancel "$long" > /dev/null || fail cancel
    until_file c.env
    [ "$(env_of c.env AEGIS_JOB_STATE)" = cancelled ] || fail "cancelled: $(cat c.env)"
    [ "$(env_of c.env AEGIS_JOB_EXIT_STATUS)" = 143 ] || fail "SIGTERM: $(cat c.env)"
    # the config's default, and none
    none=$("$AEGIS" submit --notify '' -- true) || fail "submit none"
    "$AEGIS" wait "$none" > /dev/null || fail "wait none"
    dflt=$("$AEGIS" submit -- true) || fail "submit default"
    until_file default.env
    [ "$(env_of default.env AEGIS_JOB_ID)" = "$dflt" ] ||
        fail "default notifier ran for $(env_of default.env AEGIS_JOB_ID), not $dflt"
    [ "$(env_of default.env AEGIS_JOB_STATE)" = done ] &&
        [ "$(env_of default.env AEGIS_JOB_EXIT_STATUS)" = 0 ] ||
        fail "default: $(cat default.env)"
}

# A failing notifier is logged once with its status, a hanging one killed
# (with its session) after notify_timeout_s and logged; neither is retried,
# and aegisd answers while a notifier runs.
case_notify_fail() {
    # Under a limit no wait here reaches (the TIMEOUT is 180 s), a
    # notifier runs until the test has had aegisd's answer: the answer
    # comes while it runs, however slow the machine.
    echo "notify_timeout_s: 600" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    busy=$("$AEGIS" submit --notify \
           'echo $$ > busy.pid; until [ -e answered ]; do sleep 0.1; done' -- true) ||
        fail "submit busy"
    until_file busy.pid
    timeout 60 "$AEGIS" ls > /dev/null || fail "aegisd did not answer"
    [ -e /proc/"$(cat busy.pid)" ] || fail "the notifier did not wait"
    touch answered
    until_job "$busy" "assert any(e['text']=='notifier exit 0' for e in d['events']), d['events']"
    # the notifiers started from now on are killed after 8 s
    sed -i 's/^notify_timeout_s: 600$/notify_timeout_s: 8/' "$DIR/aegis.yaml"
    reload
    bad=$("$AEGIS" submit --notify 'exit 7' -- true) || fail "submit bad"
    until_logged "job $bad: notifier"
    grep -q "job $bad: notifier (pid [0-9]*) failed: exit 7; not retried" \
        "$DIR/state/aegisd.log" || fail "failure not logged"
    hang=$("$AEGIS" submit --notify 'echo $$ > hang.pid; sleep 617; touch late' -- true) ||
        fail "submit hang"
    "$AEGIS" wait "$hang" > /dev/null || fail "wait hang"
    until_file hang.pid
    until_logged "job $hang: notifier (pid "
    grep -q "job $hang: notifier (pid [0-9]*) killed after its 8 s limit" \
        "$DIR/state/aegisd.log" || fail "kill not logged"
    local deadline=$((SECONDS + 10))
    while [ -e /proc/"$(cat hang.pid)" ]; do
        [ $SECONDS -lt $deadline ] || fail "notifier still running"
        sleep 0.1
    done
    pgrep -f "sleep 617" > /dev/null && fail "its sleep outlived it"
    [ "$(grep -c "job $bad: notifier" "$DIR/state/aegisd.log")" = 1 ] ||
        fail "logged more than once, or retried"
    "$AEGIS" show "$hang" | grep -q "notifier killed after its 8 s limit" ||
        fail "no event for the killed notifier"
}

# A notifier's processes that left its session (setsid) and outlived its
# shell are still its own: killed at notify_timeout_s with the rest.
case_notify_setsid() {
    echo "notify_timeout_s: 2" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit --notify \
        'setsid sleep 1000 & echo $! > left.pid; setsid sh -c "sleep 1001 & echo \$! > deep.pid; wait" &' \
        -- true) || fail submit
    until_file left.pid
    until_file deep.pid
    until_job "$id" "assert any('notifier killed after its 2 s limit' in e['text'] for e in d['events']), d['events']"
    for f in left.pid deep.pid; do
        [ "$(cat /proc/"$(cat $f)"/comm 2>/dev/null)" = sleep ] &&
            fail "$f: its sleep outlived the notifier"
    done
}

# Cancelling 40 jobs at once starts at most 32 notifiers at a time; the
# others wait for their turn, and every one runs.
case_notify_many() {
    start
    cd "$DIR/work"
    mkdir running done
    blocker=$("$AEGIS" submit -- sleep 60) || fail "submit blocker"
    "$AEGIS" submit --array 0-39 --after "$blocker" --notify \
        'mkdir running/$AEGIS_JOB_ID && ls running | wc -l > done/$AEGIS_JOB_ID.n &&
         sleep 1; rmdir running/$AEGIS_JOB_ID; mv done/$AEGIS_JOB_ID.n done/$AEGIS_JOB_ID' \
        -- true > ids.txt || fail "submit array"
    [ "$(wc -l < ids.txt)" = 40 ] || fail "ids: $(cat ids.txt)"
    "$AEGIS" cancel $(cat ids.txt) > /dev/null || fail cancel
    local deadline=$((SECONDS + 30))
    until [ "$(ls done | grep -vc '\.n$')" = 40 ]; do
        [ $SECONDS -lt $deadline ] || fail "notified: $(ls done | wc -l) of 40"
        sleep 0.2
    done
    most=$(cat done/* | sort -n | tail -1)
    [ "$most" -le 32 ] && [ "$most" -ge 2 ] || fail "$most notifiers at once"
    "$AEGIS" cancel "$blocker" > /dev/null || fail "cancel blocker"
}

# A job that ends while aegisd is down is notified when aegisd comes back
# and finds it ended.
case_notify_restart() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit --notify "$(env_notifier "$DIR/work/r.env")" \
         -- sh -c 'while [ ! -e go ]; do sleep 0.1; done') || fail submit
    until_job "$id" "assert d['state']=='running'"
    kill -TERM "$(daemon_pid)"
    while [ -n "$(daemon_pid)" ]; do sleep 0.1; done
    touch go
    local deadline=$((SECONDS + 10))
    while pgrep -f "while \[ ! -e go \]" > /dev/null; do
        [ $SECONDS -lt $deadline ] || fail "job did not end"
        sleep 0.1
    done
    [ ! -e r.env ] || fail "notified without aegisd"
    start
    until_file r.env
    [ "$(env_of r.env AEGIS_JOB_STATE)" = done ] || fail "state: $(cat r.env)"
}

e2e_run
