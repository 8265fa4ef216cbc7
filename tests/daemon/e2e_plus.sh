#!/bin/bash
# e2e_plus.sh AEGISD AEGIS NVML FAKE CATALOG CASE -- aegisd's default
# policy, aegis-plus, on the test GPUs: a small job backfilled past a big
# blocked head, the REASON column of `aegis ls` and the wait_reason of
# --json (a GPU under observation rather than "behind"), a per-user
# limit holding a job back, a job over max_gpus_per_user refused,
# --nice, and a 2-GPU head's reservation: its REASON and expected start,
# a job short enough backfilled there, default_time.
set -u; AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6; source "$(dirname "$0")/e2e_lib.sh"

reason_is() { [ "$(job_field "$1" wait_reason)" = "$2" ]; }

# Starts aegisd on two test GPUs of 40960 MiB and takes 30000 MiB of
# each with a job that runs until cancelled ($big0 on GPU 0, $big1 on
# GPU 1), submitted with the options $1 and $2 (--time LIMIT, or none).
two_gpus_taken() {
    export AEGIS_TEST_GPUS=2x40960
    start
    cd "$DIR/work"
    big0=$("$AEGIS" submit ${1:-} --mem 30000 -- "$FAKE" --mib 30000 --seconds 600)
    big1=$("$AEGIS" submit ${2:-} --mem 30000 -- "$FAKE" --mib 30000 --seconds 600)
    wait_until "the big jobs active" is_active "$big0"
    wait_until "the big jobs active" is_active "$big1"
}

# Two GPUs each 30000 MiB taken: a head asking 12000 MiB (admitted with
# 2048 MiB of margin: aegisd trusts --mem whole) fits neither and keeps GPU 0; a 500 MiB job behind it
# starts on GPU 1 and ends while the head still waits, which says why.
case_plus_backfill() {
    two_gpus_taken
    head=$("$AEGIS" submit --name head --mem 12000 -- "$FAKE" --mib 12000 --seconds 1)
    small=$("$AEGIS" submit --name small --mem 500 -- "$FAKE" --mib 500 --seconds 1)
    "$AEGIS" wait "$small" >/dev/null || fail "the small job did not finish"
    is_state "$head" queued || fail "the head left the queue: $(job_field "$head" state)"
    "$AEGIS" show --json "$small" | pyjson "
a=d['attempt_list']; assert len(a)==1 and a[0]['gpus']=='1', a" ||
        fail "the small job did not run on GPU 1"
    wait_until "the head's reason" eval \
        '[ "$(job_field "$head" wait_code)" = memory ]'
    "$AEGIS" show --json "$head" | pyjson "
r=d['wait_reason']; print(r)
assert r.startswith('no GPU with 14560 MiB free (largest free: '), r" ||
        fail "the head's wait_reason"
    "$AEGIS" ls > ls.txt
    head -1 ls.txt | grep -q 'REASON$' || fail "no REASON column: $(head -1 ls.txt)"
    grep "^$head " ls.txt | grep -q "no GPU with 14560 MiB free" ||
        fail "ls: the head's reason: $(cat ls.txt)"
    grep "^$big0 " ls.txt | grep -q ' -$' || fail "ls: a running job's reason"
    "$AEGIS" show "$head" | grep -q "^waiting *no GPU with" || fail "show: waiting"
    "$AEGIS" cancel "$big0" "$big1" || fail cancel
    "$AEGIS" wait "$head" >/dev/null || fail "the head did not run once room came"
}

# As above, a 500 MiB job starts on GPU 1, which stays under observation
# until the job shows on it (once the test has seen the reason below);
# the next 500 MiB job, which GPU 1 would take but for that, says so, not
# "behind" the head, though GPU 0, kept for the head, has room for it;
# then it starts.
case_plus_observing() {
    two_gpus_taken
    head=$("$AEGIS" submit --mem 12000 -- "$FAKE" --mib 12000 --seconds 1)
    late=$("$AEGIS" submit --mem 500 -- sh -c \
        "until [ -e '$DIR/seen' ]; do sleep 0.1; done; exec '$FAKE' --mib 500 --seconds 1")
    wait_until "the late job running" is_state "$late" running
    next=$("$AEGIS" submit --mem 500 -- "$FAKE" --mib 500 --seconds 1)
    wait_until "the next job's reason" reason_is "$next" \
        "GPU 1 under observation until its new job is seen active"
    touch "$DIR/seen"
    "$AEGIS" wait "$next" >/dev/null || fail "the next job did not finish"
    is_state "$head" queued || fail "the head left the queue"
    "$AEGIS" cancel "$big0" "$big1" "$head" "$late" >/dev/null 2>&1
}

# max_jobs_per_user: 1 -- the second job waits with three GPUs idle, and
# says so, until the first ends (once the test has read the reason).
case_plus_limit() {
    echo "max_jobs_per_user: 1" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    first=$("$AEGIS" submit -- "$FAKE" --mib 1000 --seconds 0 --until "$DIR/read")
    second=$("$AEGIS" submit -- "$FAKE" --mib 1000 --seconds 1)
    wait_until "the first job running" is_state "$first" running
    # the reason comes with the next scheduling pass
    wait_until "the second job's reason" reason_is "$second" "user limit reached (1 job)"
    is_state "$second" queued || fail "the limit did not hold"
    "$AEGIS" ls | grep "^$second " | grep -q "user limit reached (1 job)" ||
        fail "ls: $("$AEGIS" ls)"
    "$AEGIS" ls --json | pyjson "
j=[j for j in d if j['id']==$second][0]
assert j['wait_code']=='user_limit', j" || fail "ls --json wait_code"
    touch "$DIR/read"
    "$AEGIS" wait "$first" "$second" >/dev/null || fail "not both done"
    python3 - "$("$AEGIS" show --json "$first")" "$("$AEGIS" show --json "$second")" <<'PY' ||
import json, sys
a, b = (json.loads(x) for x in sys.argv[1:])
ended = a['attempt_list'][0]['ended']
started = b['attempt_list'][0]['started']
assert started >= ended, (started, ended)
PY
        fail "the second job ran beside the first"
}

# max_gpus_per_user: a job asking more GPUs than the limit could never
# start. One queued before the limit came (aegisd restarted with it) stays
# queued, saying so, until someone cancels it; a new one is refused at
# submission, naming the limit (exit 2).
case_plus_gpulimit() {
    echo "max_jobs_per_user: 1" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    first=$("$AEGIS" submit -- "$FAKE" --mib 1000 --seconds 60)
    wide=$("$AEGIS" submit --gpus 2 -- true)
    wait_until "the first job running" is_state "$first" running
    [ "$(job_field "$wide" wait_reason)" = "user limit reached (1 job)" ] ||
        fail "reason before the restart: $(job_field "$wide" wait_reason)"
    sed -i 's/^max_jobs_per_user: 1$/max_gpus_per_user: 1/' "$DIR/aegis.yaml"
    restart
    local why="asks 2 GPUs, over max_gpus_per_user 1: cannot start"
    wait_until "the wide job's reason" eval \
        '[ "$(job_field "$wide" wait_reason)" = "$why" ]'
    "$AEGIS" cancel "$first" || fail "cancel the first job"
    wait_until "the first job gone" is_state "$first" cancelled
    "$AEGIS" ls | grep "^$wide " | grep -qF "$why" || fail "ls: $("$AEGIS" ls)"
    is_state "$wide" queued || fail "the wide job: $(job_field "$wide" state)"
    [ "$(job_field "$wide" wait_code)" = user_limit ] || fail "wait_code"
    aegis_refused "aegis submit: --gpus: 2 GPUs asked, over max_gpus_per_user 1" \
        submit --gpus 2 -- true
    "$AEGIS" cancel "$wide" || fail "cancel the wide job"
    is_state "$wide" cancelled || fail "not cancelled: $(job_field "$wide" state)"
    one=$("$AEGIS" submit -- true) || fail "a 1-GPU job refused"
    "$AEGIS" wait "$one" >/dev/null || fail "the 1-GPU job did not run"
}

# --nice: one job at a time (the limit), a niced job submitted before a
# plain one starts after it; ls --json and show carry the nice.
case_plus_nice() {
    echo "max_jobs_per_user: 1" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    # the first runs until both others are queued behind it (go): ended
    # before the plain one came, it let the niced one start alone
    first=$("$AEGIS" submit -- "$FAKE" --mib 1000 --seconds 0 --until "$DIR/go")
    niced=$("$AEGIS" submit --nice 100 -- "$FAKE" --mib 1000 --seconds 1)
    plain=$("$AEGIS" submit -- "$FAKE" --mib 1000 --seconds 1)
    wait_until "the first job running" is_state "$first" running
    touch "$DIR/go"
    "$AEGIS" submit --nice 10001 -- true 2>err.txt && fail "nice 10001 taken"
    grep -q nice err.txt || fail "nice 10001: $(cat err.txt)"
    [ "$(job_field "$niced" nice)" = 100 ] || fail "show --json nice"
    "$AEGIS" show "$niced" | grep -q "^nice *100" || fail "show: nice"
    "$AEGIS" wait "$first" "$niced" "$plain" >/dev/null || fail "not all done"
    python3 - "$("$AEGIS" show --json "$niced")" "$("$AEGIS" show --json "$plain")" <<'PY' ||
import json, sys
niced, plain = (json.loads(x)['attempt_list'][0]['started'] for x in sys.argv[1:])
assert plain < niced, (plain, niced)
PY
        fail "the niced job went first"
}

# A head asking 2 GPUs keeps both whole (with backfill_max_passes 1, at
# once: half of it have passed it). big0 has default_time's 600 s,
# big1 --time 20:00, so the head starts by big1's start + 1200 s + the
# 10 s kill grace: `show --json` gives that as expected_start, the REASON
# tells it by the clock. A job of --time 1:00 ends well before and
# backfills beside big0 or big1; one of --time 30:00 would not, and
# waits behind the head.
case_plus_reserve() {
    printf 'default_time: 600\nbackfill_max_passes: 1\n' >> "$DIR/aegis.yaml"
    two_gpus_taken "" "--time 20:00"
    [ "$(job_field "$big0" time_limit_s)" = 600.0 ] ||
        fail "default_time: $(job_field "$big0" time_limit_s)"
    head=$("$AEGIS" submit --gpus 2 --mem 12000 -- "$FAKE" --mib 12000 --seconds 1)
    long=$("$AEGIS" submit --time 30:00 --mem 500 -- "$FAKE" --mib 500 --seconds 1)
    short=$("$AEGIS" submit --time 1:00 --mem 500 -- "$FAKE" --mib 500 --seconds 1)
    "$AEGIS" wait "$short" >/dev/null || fail "the short job did not run"
    wait_until "the head's reason" eval \
        '[ "$(job_field "$head" wait_code)" = reserving ]'
    "$AEGIS" show --json "$head" | pyjson "
import math, time
r, start = d['wait_reason'], d['expected_start']
print(r)
assert r.startswith('reserving GPUs 0-1: 2 jobs on them, expected start '), r
at = time.strftime('%H:%M', time.localtime(math.ceil(start / 60) * 60))
assert r.endswith(' ' + at), (r, at)
print(start)" > head.txt || fail "the head's reason: $(cat head.txt)"
    "$AEGIS" show --json "$big1" | pyjson "
print(d['attempt_list'][0]['started'] + 1210)" > want.txt
    python3 -c "import sys; a, b = (float(open(f).read().split()[-1]) for f in sys.argv[1:]); assert abs(a - b) < 2, (a, b)" \
        head.txt want.txt || fail "expected_start: $(cat head.txt want.txt)"
    is_state "$head" queued || fail "the head left the queue"
    is_state "$long" queued || fail "the 30-minute job started"
    [ "$(job_field "$long" wait_reason)" = "behind job $head (head of queue)" ] ||
        fail "the 30-minute job's reason: $(job_field "$long" wait_reason)"
    "$AEGIS" cancel "$big0" "$big1" || fail cancel
    "$AEGIS" wait "$head" "$long" >/dev/null || fail "the head did not run"
}

# Without limits nobody knows when the head starts: the REASON says which
# job has none, expected_start is null, and no job backfills on its GPUs.
case_plus_reserve_unknown() {
    echo "backfill_max_passes: 1" >> "$DIR/aegis.yaml"
    two_gpus_taken
    head=$("$AEGIS" submit --gpus 2 --mem 12000 -- "$FAKE" --mib 12000 --seconds 1)
    short=$("$AEGIS" submit --time 1:00 --mem 500 -- "$FAKE" --mib 500 --seconds 1)
    local why="reserving GPUs 0-1: 2 jobs on them, expected start unknown"
    wait_until "the head's reason" eval \
        '[ "$(job_field "$head" wait_code)" = reserving ]'
    "$AEGIS" show --json "$head" | pyjson "
r = d['wait_reason']
assert r in ('$why (job $big0 has no time limit)',
             '$why (job $big1 has no time limit)'), r
assert d['expected_start'] is None, d" || fail "the head's reason"
    [ "$(job_field "$short" wait_reason)" = "behind job $head (head of queue)" ] ||
        fail "the short job's reason: $(job_field "$short" wait_reason)"
    is_state "$short" queued || fail "the short job started"
    "$AEGIS" cancel "$big0" "$big1" || fail cancel
    "$AEGIS" wait "$head" "$short" >/dev/null || fail "the head did not run"
}

e2e_run
