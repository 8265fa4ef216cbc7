#!/bin/bash
# e2e_queue.sh AEGISD AEGIS NVML FAKE CATALOG CASE -- queue control as
# Slurm users know it (issue 30 item 7): `ls --state held`, release of a
# job that is not held refused, `aegis priority` (sprio) and `aegis
# fairshare` (sshare) under aegis-plus and under a FIFO policy, the
# PRIORITY column of `ls --priority`, `aegis update` (scontrol update:
# an owner may only lower, root may raise) and --gpu-mem.
set -u; AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6; source "$(dirname "$0")/e2e_lib.sh"

# Fills the three test GPUs with one job ($big): what follows waits.
fill_gpus() {
    start "$@"
    cd "$DIR/work"
    big=$("$AEGIS" submit --gpus 3 -- "$FAKE" --mib "$FULL_MIB" --seconds 600) || fail submit
    until_job "$big" "assert d['state']=='running'"
}

# A held job is listed by --state held and not by --state queued; release
# of a job not held (queued, or already released) is an error.
case_queue_held() {
    fill_gpus
    held=$("$AEGIS" submit -- true) || fail "submit held"
    plain=$("$AEGIS" submit -- true) || fail "submit plain"
    "$AEGIS" hold "$held" > /dev/null || fail hold
    "$AEGIS" ls --state held --json | pyjson "
assert [j['id'] for j in d]==[$held], d" || fail "ls --state held"
    "$AEGIS" ls --state queued --json | pyjson "
assert [j['id'] for j in d]==[$plain], d" || fail "ls --state queued"
    aegis_refused "job $plain: not held" release "$plain"
    aegis_refused "not held" release "$held" "$plain"
    "$AEGIS" show --json "$held" | pyjson "assert d['held'] is True, d" ||
        fail "a refused release released a job"
    "$AEGIS" release "$held" > /dev/null || fail release
    aegis_refused "job $held: not held" release "$held"
    aegis_refused "'bogus' is not a state: queued, held," ls --state bogus
}

# Under aegis-plus each queued job has a priority, fair share less nice;
# ls --priority shows it, fairshare counts the GPU time the big job held.
case_queue_priority() {
    fill_gpus
    a=$("$AEGIS" submit -- true) || fail "submit a"
    b=$("$AEGIS" submit --nice 40 -- true) || fail "submit b"
    "$AEGIS" priority --json | pyjson "
assert d['priorities'] is True and d['policy']=='aegis-plus', d
j={r['id']: r for r in d['jobs']}
assert set(j)=={$a, $b}, j
assert j[$b]['nice']==40 and j[$a]['nice']==0, j
assert abs(j[$b]['priority'] - (j[$b]['fair_share'] - 40)) < 1e-6, j
assert j[$a]['priority'] > j[$b]['priority'], j
assert j[$a]['head_start_s']==0, j" || fail "priority --json"
    "$AEGIS" priority | grep -q "^$b  *root  *[0-9]*  *[0-9]*  *40  *0$" ||
        fail "priority text: $("$AEGIS" priority)"
    "$AEGIS" ls --priority | head -1 | grep -q "STATE  *PRIORITY  *GPUS" ||
        fail "ls --priority header: $("$AEGIS" ls --priority)"
    "$AEGIS" ls --priority | grep -q "^$big .* running  *- " ||
        fail "ls --priority: a running job has a priority"
    "$AEGIS" ls --priority --json | pyjson "
p={j['id']: j['priority'] for j in d}
assert p[$big] is None and p[$a] > p[$b], p" || fail "ls --priority --json"
    wait_until "GPU time counted" eval "\"$AEGIS\" fairshare --json | pyjson \"
u=[u for u in d['users'] if u['user']=='root'][0]
assert u['usage_gpu_s'] > 0 and 0 < u['decayed_gpu_s'] <= u['usage_gpu_s'], u
assert u['running']==1 and u['queued']==2 and u['factor'] <= 1, u\""
    "$AEGIS" fairshare | grep -q "^root " || fail "fairshare text"
}

# Under the estimator-free aegis a job's --mem is trusted whole too, as
# under aegis-plus: 30000 MiB (+ the 2048 margin) do not fit beside a job
# holding 20000 of a 40960-MiB GPU, where the flat 5120 MiB would.
case_queue_declared() {
    echo "policy: aegis" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    big=$("$AEGIS" submit --gpus 3 -- "$FAKE" --mib 20000 --seconds 600) || fail submit
    until_job "$big" "assert d['state']=='running'"
    id=$("$AEGIS" submit --mem 30000 -- true) || fail "submit declared"
    until_job "$id" "assert d['wait_code']=='memory', d"
    "$AEGIS" cancel "$big" > /dev/null || fail cancel
    "$AEGIS" wait "$id" > /dev/null || fail "the declared job after the big one"
}

# A FIFO policy says it has no priorities.
case_queue_fifo() {
    echo "policy: aegis" >> "$DIR/aegis.yaml"
    fill_gpus
    "$AEGIS" submit -- true > /dev/null || fail submit
    "$AEGIS" priority | grep -q "policy aegis .* have no priorities" ||
        fail "priority under aegis: $("$AEGIS" priority)"
    "$AEGIS" priority --json | pyjson "
assert d['priorities'] is False and d['jobs']==[], d" || fail "priority --json"
}

# update: the owner may raise nice and lower the time limit, change the
# memory and the name, and not the other way; root may; a running job
# cannot be updated; the change outlasts a restart.
case_queue_update() {
    needs_root
    fill_gpus
    # 8 GiB and 9 GiB do not fit beside the big job (36000 of 40960 MiB):
    # a smaller request could join it once aegisd trusts its placement.
    id=$(as nobody "$AEGIS" submit --time 30:00 --nice 10 --gpu-mem 8g -- true) ||
        fail submit
    [ "$(job_field "$id" mem_mib)" = 8192.0 ] || fail "--gpu-mem: $(job_field "$id" mem_mib)"
    as nobody "$AEGIS" update "$id" --nice 20 --time 10:00 --gpu-mem 9g \
        --name smaller > /dev/null || fail "owner lowers"
    "$AEGIS" show --json "$id" | pyjson "
assert d['nice']==20 and d['time_limit_s']==600 and d['mem_mib']==9216, d
assert d['name']=='smaller', d" || fail "update not shown"
    as nobody "$AEGIS" update "$id" --nice 5 2> err.txt && fail "owner raised nice"
    grep -q "only root may" err.txt || fail "nice raise: $(cat err.txt)"
    as nobody "$AEGIS" update "$id" --time 1:00:00 2> err.txt &&
        fail "owner raised the limit"
    grep -q "only root may" err.txt || fail "time raise: $(cat err.txt)"
    as daemon "$AEGIS" update "$id" --nice 30 2> err.txt && fail "another user"
    grep -q "permission denied" err.txt || fail "other user: $(cat err.txt)"
    "$AEGIS" update "$id" --nice 0 --time 2:00:00 > /dev/null || fail "root raises"
    "$AEGIS" priority --json | pyjson "
j=[r for r in d['jobs'] if r['id']==$id][0]
assert j['nice']==0, j" || fail "the core's nice not updated"
    # none said: null, as show gives it, and so says the event
    plain=$("$AEGIS" submit -- true) || fail "submit plain"
    "$AEGIS" update "$plain" --nice 3 --json | pyjson "
assert d['time_limit_s'] is None and d['mem_mib'] is None and d['nice']==3, d" ||
        fail "update --json of a job without limit or memory"
    "$AEGIS" show "$plain" | grep -q "time limit none, nice 3, memory not given" ||
        fail "update event: $("$AEGIS" show "$plain")"
    aegis_refused "only a queued or held job" update "$big" --nice 5
    aegis_refused "at least one of" update "$id"
    restart
    "$AEGIS" show --json "$id" | pyjson "
assert d['nice']==0 and d['time_limit_s']==7200 and d['name']=='smaller', d" ||
        fail "update lost across a restart"
}

e2e_run
