#!/bin/bash
# slurm.sh -- aegisd under a real Slurm: batch jobs that ask for GPU memory
# with spank_aegis.so's --aegis-mem get their GPU from aegisd on the node.
#
# usage: slurm.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG PLUGIN CASE
# Each case starts aegisd on the test GPUs (3 x 40960 MiB) and a one-node
# Slurm cluster (slurm_lib.sh); jobs run as nobody. Exit 0 pass, 1 fail,
# 77 skipped (no Slurm).
set -u
AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 PLUGIN=$6 CASE=$7
source "$(dirname "$0")/slurm_lib.sh"

# A job that takes MIB on its GPU for SECS seconds, asking aegis for MEM:
# aegis_job MEM MIB SECS [sbatch options]. It prints its
# CUDA_VISIBLE_DEVICES first.
aegis_job() {
    local mem=$1 mib=$2 secs=$3; shift 3
    submit --aegis-mem="$mem" --gres=aegis_mem:"$mem" "$@" --wrap \
        "echo CVD=\$CUDA_VISIBLE_DEVICES; exec $FAKE --mib $mib --seconds $secs"
}
# The aegis job (ls --json) of a Slurm job, as a Python expression's input.
aegis_of() {
    "$AEGIS" ls --all --json | pyjson "
j=[j for j in d if j.get('slurm_job')==$1]
assert j, 'no aegis job for Slurm job $1'
print(j[-1]['id'], j[-1]['state'])"
}
aegis_running() { [ "$(aegis_of "$1" 2>/dev/null | cut -d' ' -f2)" = running ]; }

# Every job gets the GPU aegisd chose for it: the CUDA_VISIBLE_DEVICES its
# script sees is the UUID of the GPU `aegis gpus` lists the job on, and
# `aegis show` names that GPU. Four jobs on three GPUs: two share one.
case_slurm_place() {
    start; slurm_start
    cd "$DIR/work"
    ids=""
    for i in 1 2 3 4; do ids="$ids $(aegis_job 4000 3000 30)"; done
    for id in $ids; do
        await 40 aegis_running "$id" || fail "Slurm job $id not running in aegis"
        await 10 grep -q CVD= "job-$id.out" || fail "job $id printed nothing"
    done
    "$AEGIS" gpus --json > gpus.json
    for id in $ids; do
        aid=$(aegis_of "$id" | cut -d' ' -f1)
        cvd=$(sed -n 's/^CVD=//p' "job-$id.out")
        "$AEGIS" show --json "$aid" > show.json
        python3 - gpus.json show.json "$aid" "$cvd" <<'PY' ||
import json, sys
gpus, show = (json.load(open(f)) for f in sys.argv[1:3])
aid, cvd = int(sys.argv[3]), sys.argv[4]
g = [g for g in gpus['gpus'] if aid in g['jobs']]
assert len(g) == 1 and cvd == g[0]['uuid'], (cvd, g)
assert show['attempt_list'][-1]['gpus'] == str(g[0]['index']), show
PY
            fail "Slurm job $id (aegis $aid): CUDA_VISIBLE_DEVICES $cvd"
        "$AEGIS" show "$aid" | grep -q "slurm job  $id " ||
            fail "show $aid: no Slurm job $id"
    done
    pyjson "assert max(len(g['jobs']) for g in d['gpus'])>=2, d" < gpus.json ||
        fail "no two Slurm jobs collocated"
    node_ok || fail "node $(node_state) while jobs run"
}

# The steps of a job (srun inside sbatch) share its lease: one aegis job,
# one GPU for all.
case_slurm_steps() {
    start; slurm_start
    cd "$DIR/work"
    id=$(submit --aegis-mem=4000 --gres=aegis_mem:4000 --wrap \
        'echo "batch $CUDA_VISIBLE_DEVICES"; srun sh -c "echo step \$CUDA_VISIBLE_DEVICES"
         srun sh -c "echo step \$CUDA_VISIBLE_DEVICES"')
    await 30 job_gone "$id" || fail "job $id did not end"
    # srun may add its own lines ("step creation temporarily disabled",
    # when slurmctld has not yet seen the previous step end): count ours.
    [ "$(grep -c "GPU-" "job-$id.out")" = 3 ] &&
        [ "$(grep -E '^(batch|step) ' "job-$id.out" | cut -d' ' -f2 | sort -u | wc -l)" = 1 ] ||
        fail "steps' GPUs: $(cat "job-$id.out")"
    "$AEGIS" ls --all --json | pyjson "
assert [j['state'] for j in d if j.get('slurm_job')==$id]==['done'], d" ||
        fail "not one lease for job $id"
}

# `scontrol show node -d` counts the aegis_mem of the running jobs
# (GresUsed; AllocTRES too where slurmdbd runs, AccountingStorageTRES),
# and gives it back when they end. A job given --aegis-mem alone asks for
# the GRES too (aegis's cli_filter.lua). A job asking a mode the node's
# GPUs do not share in fails at once, saying why.
case_slurm_tres() {
    start; slurm_start
    cd "$DIR/work"
    a=$(aegis_job 4000 1000 30)
    b=$(submit --aegis-mem=6000 --wrap "exec $FAKE --mib 1000 --seconds 30")
    scontrol show job "$b" | grep -q "TresPerNode=gres:aegis_mem:6000" ||
        fail "job $b given --aegis-mem=6000 alone: $(scontrol show job "$b")"
    await 40 aegis_running "$a" && await 40 aegis_running "$b" ||
        fail "jobs not running"
    scontrol show node -d localhost > node.txt
    grep -q "GresUsed=aegis_mem:10000" node.txt || fail "GresUsed: $(cat node.txt)"
    scancel "$a" "$b"
    await 20 eval 'scontrol show node -d localhost | grep -q "GresUsed=aegis_mem:0"' ||
        fail "aegis_mem still allocated after scancel"
    # mps asked of a node whose GPUs do not run MPS: refused, with why
    c=$(submit --aegis-mem=1000 --aegis-mode=mps --wrap "echo ran")
    await 20 job_gone "$c" || fail "job $c did not end"
    grep -q "mode mps: GPU 0 shares as naive" "job-$c.out" ||
        fail "job $c: $(cat "job-$c.out")"
    grep -q ran "job-$c.out" && fail "job $c ran"
}

# Three jobs fill the three GPUs; a fourth that fits only beside none of
# them is RUNNING for Slurm (the node has the aegis_mem) and waits in
# aegisd, which says why. scancel of the first starts it, and the node's
# Epilog releases the first one's lease.
case_slurm_wait() {
    start; slurm_start
    cd "$DIR/work"
    first=$(aegis_job 30000 30000 60)
    await 40 aegis_running "$first" || fail "first not running"
    ids="$first $(aegis_job 30000 30000 60) $(aegis_job 30000 30000 60)"
    for id in $ids; do await 40 aegis_running "$id" || fail "$id not running"; done
    last=$(aegis_job 30000 1000 60)
    await 40 job_is "$last" RUNNING || fail "Slurm did not start $last"
    await 20 eval '[ "$(aegis_of $last | cut -d" " -f2)" = queued ]' ||
        fail "$last not waiting in aegis: $(aegis_of "$last")"
    aid=$(aegis_of "$last" | cut -d' ' -f1)
    "$AEGIS" ls | grep -E "^ *$aid " | grep -q "MiB free" ||
        fail "no reason shown: $("$AEGIS" ls)"
    [ -s "job-$last.out" ] && fail "the waiting job already ran: $(cat "job-$last.out")"
    scancel "$first"
    await 30 aegis_running "$last" || fail "$last did not start after scancel"
    await 20 grep -q "release --slurm-job $first: exit 0" "$SDIR/log/epilog.log" ||
        fail "Epilog did not release $first"
    aegis_running "$first" && fail "$first still running in aegis"
    node_ok || fail "node $(node_state)"
}

# A job that fails with a CUDA out-of-memory error on its first run, on a
# GPU it shares (alone there, it would simply fail), is requeued by aegisd
# through Slurm (scontrol requeue); its second run (SLURM_RESTART_COUNT 1)
# is leased at the ladder's next floor, or alone.
case_slurm_oom() {
    start; slurm_start
    cd "$DIR/work"
    busy=""
    for i in 1 2 3; do
        busy="$busy $(aegis_job 10000 10000 60)"
        await 40 aegis_running "${busy##* }" || fail "${busy##* } not running"
    done
    id=$(submit --aegis-mem=4000 --gres=aegis_mem:4000 --wrap \
        "echo run \${SLURM_RESTART_COUNT:-0}; if [ \${SLURM_RESTART_COUNT:-0} = 0 ];
         then exec $FAKE --mib 50000 --seconds 1; fi; exec $FAKE --mib 1000 --seconds 1")
    await 20 eval '[ "$(aegis_of $id | cut -d" " -f2)" = failed ]' ||
        fail "first run of $id not failed in aegis"
    # Its next run may want a GPU of its own: the others make room.
    scancel $busy
    await 30 grep -q "run 1" "job-$id.out" || fail "job $id not requeued"
    await 30 job_gone "$id" || fail "second run did not end"
    runs=$("$AEGIS" ls --all --json | pyjson "
print(*[j['id'] for j in d if j.get('slurm_job')==$id])")
    set -- $runs
    [ $# = 2 ] || fail "aegis jobs of Slurm job $id: $runs"
    "$AEGIS" show --json "$1" > run0.json && "$AEGIS" show --json "$2" > run1.json
    python3 - run0.json run1.json <<'PY' || fail "second run not on the ladder: $("$AEGIS" show "$2")"
import json, sys
first, second = (json.load(open(f))['attempt_list'][0] for f in sys.argv[1:])
print('floors', first['floor_mib'], second['floor_mib'], 'alone', second['exclusive'])
assert first['how'] == 'oom' and second['how'] == 'ok', (first, second)
assert second['floor_mib'] > first['floor_mib'] or second['exclusive'], second
PY
    node_ok || fail "node $(node_state)"
}

# A task that says "CUDA out of memory" while its GPU, at aegisd's last
# reading with the task on it, had most of its memory free is a plain
# failure, not an OOM: aegisd checks the tail the plugin sends against the
# lease's GPUs as it does its own jobs' (docs/daemon.md). The task holds
# 2000 MiB of a 40960 MiB GPU until aegisd has seen it there.
case_slurm_oom_room() {
    start; slurm_start
    cd "$DIR/work"
    local id
    id=$(submit --aegis-mem=4000 --gres=aegis_mem:4000 --aegis-mode=exclusive --wrap \
        "$FAKE --mib 2000 --seconds 0 --until $DIR/work/go.room || exit 3
         echo 'torch.OutOfMemoryError: CUDA out of memory.' >&2; exit 1") || exit 1
    await 40 eval '"$AEGIS" ls --all --json | pyjson "
assert [j[\"active\"] for j in d if j.get(\"slurm_job\")==$id] == [True]"' ||
        fail "the task of $id not seen on its GPU: $("$AEGIS" ls --all)"
    touch go.room
    await 30 job_gone "$id" || fail "job $id did not end"
    await 20 eval '[ "$(aegis_of $id | cut -d" " -f2)" = failed ]' ||
        fail "job $id not failed in aegis: $(aegis_of "$id")"
    "$AEGIS" show --json "$(aegis_of "$id" | cut -d' ' -f1)" | pyjson "
a = d['attempt_list'][-1]
assert a['how'] == 'failed', a
assert 'not retried as an OOM' in d['reason'], d['reason']" ||
        fail "an OOM its GPU contradicts was not told apart"
    node_ok || fail "node $(node_state)"
}

# The plugin reads a failed task's stderr tail (for an OOM message) as
# the job's user, and only from the very file the task started with. A
# job that swaps its output for a link to a root-only file holding an
# OOM message, or for a new file of its own, or for a FIFO, is not an
# OOM, and no FIFO holds the task's end; one that wrote the message to
# its own output is. Each job has a GPU to itself: an OOM there ends it
# (shared, the OOM ladder would requeue it).
case_slurm_stderr() {
    start; slurm_start
    cd "$DIR/work"
    echo "CUDA out of memory" > "$DIR/secret"
    chmod 600 "$DIR/secret"
    local swap out id
    for swap in "ln -s $DIR/secret" "echo CUDA out of memory >" "mkfifo" ""; do
        out='job-$SLURM_JOB_ID.out'
        id=$(submit --aegis-mem=1000 --gres=aegis_mem:1000 \
            --aegis-mode=exclusive --wrap \
            "echo CUDA out of memory; ${swap:+rm $out; $swap $out;} exit 1") ||
            exit 1 # submit said why
    done
    # a name longer than a lease's (144 bytes) and a NUL in the output: the
    # task started (its lease's name cut) and its OOM was read (a NUL made
    # aegisd refuse the whole end of the lease)
    submit --aegis-mem=1000 --gres=aegis_mem:1000 --aegis-mode=exclusive \
        -J "$(printf 'sweep_lr%.0s' $(seq 18))" \
        --wrap "echo CUDA out of memory; printf 'x\\0y\\n'; exit 1" > /dev/null
    # Slurm is done with them, and aegisd has heard of each end
    await 60 eval '[ -z "$(timeout 5 squeue -h)" ]' || fail "jobs did not end"
    await 20 eval '"$AEGIS" ls --all --json | pyjson "
assert [j[\"state\"] for j in d if j.get(\"slurm_job\")] == [\"failed\"] * 5"' ||
        fail "not 5 failed leases: $("$AEGIS" ls --all)"
    # the last jobs' tails were read: oom; the others' not: failed
    "$AEGIS" ls --all --json | python3 -c '
import json, subprocess, sys
jobs = sorted((j["slurm_job"], j["id"]) for j in json.load(sys.stdin))
hows = [json.loads(subprocess.run([sys.argv[1], "show", "--json", str(a)],
        capture_output=True, check=True).stdout)["attempt_list"][-1]["how"]
        for _, a in jobs]
print("Slurm jobs", [s for s, _ in jobs], "how", hows)
assert hows == ["failed"] * 3 + ["oom"] * 2, hows' "$AEGIS" ||
        fail "an OOM read where it must not be, or not where it must"
    # slurmstepd says why each tail was not read
    for why in "a symbolic link" "not the file the job started with" \
               "not a regular file"; do
        grep -q "aegis: stderr .*: $why" "$SDIR/log/slurmd.log" ||
            fail "slurmd.log does not say '$why'"
    done
    node_ok || fail "node $(node_state)"
}

# Three jobs fill the three GPUs; a job given one more waits in aegisd
# for its lease. Prints their Slurm job ids.
aegis_full() {
    local id i
    for i in 1 2 3; do
        id=$(aegis_job 30000 30000 120)
        await 40 aegis_running "$id" || fail "$id not running"
        echo "$id"
    done
}
# A job whose task waits in aegisd for its lease (aegis_full): it prints
# "script-ran" if ever its script runs. aegis_waiter [sbatch options].
aegis_waiter() {
    local id
    id=$(submit --aegis-mem=30000 "$@" --wrap "echo script-ran; exec $FAKE --mib 1000 --seconds 30")
    await 40 eval '[ "$(aegis_of $id | cut -d" " -f2)" = queued ]' ||
        fail "$id not waiting in aegis: $(aegis_of "$id")"
    echo "$id"
}
# What a job Slurm ended while its task waited must show: gone from Slurm
# in state $2, its script never run, the node not drained, and its lease
# withdrawn in aegis: aegis_ended_waiting ID STATE SECONDS.
aegis_ended_waiting() {
    local id=$1 state=$2 secs=$3
    await "$secs" job_gone "$id" || fail "job $id still $(job_state "$id")"
    scontrol show job "$id" | grep -q "JobState=$state" ||
        fail "job $id: $(scontrol show job "$id" | grep JobState)"
    await 10 eval '[ "$(aegis_of $id | cut -d" " -f2)" = cancelled ]' ||
        fail "job $id in aegis: $(aegis_of "$id")"
    grep -q script-ran "job-$id.out" 2>/dev/null && fail "job $id ran after its end"
    node_ok || fail "node $(node_state): $(scontrol show node localhost | grep Reason)"
}

# scancel of a job whose task waits for its lease ends it at once: the
# waiting task is not left unkillable in slurmstepd (which, after
# UnkillableStepTimeout, drains the node), and never runs its script
# however soon the GPUs free up after.
case_slurm_cancel_wait() {
    start; slurm_start
    cd "$DIR/work"
    local busy id
    busy=$(aegis_full) || exit 1
    id=$(aegis_waiter) || exit 1
    scancel "$id"
    # its task asks whether its job runs at steps of up to 30 s
    aegis_ended_waiting "$id" CANCELLED 45
    # cancelled, then the jobs that fill the GPUs: its grant may come
    # before the task sees the cancel, and must not start it. scancel
    # cancels the jobs it is given in threads of its own, so given them
    # all at once it may end the busy jobs first, and the grant then
    # comes while the job still runs: the cancel must be in slurmctld
    # first.
    id=$(aegis_waiter) || exit 1
    scancel "$id"
    await 45 eval '[ "$(job_state "$id")" != RUNNING ]' ||
        fail "job $id still $(job_state "$id") after scancel"
    scancel $busy
    await 45 job_gone "$id" || fail "job $id still $(job_state "$id")"
    await 10 eval '[ "$(aegis_of $id | cut -d" " -f2)" != queued ]' ||
        fail "job $id in aegis: $(aegis_of "$id")"
    grep -q script-ran "job-$id.out" && fail "job $id ran after its end"
    node_ok || fail "node $(node_state)"
}

# A job whose time limit (1 minute) passes while its task waits for its
# lease ends TIMEOUT, not run and not drained.
case_slurm_timeout_wait() {
    start; slurm_start
    cd "$DIR/work"
    aegis_full > /dev/null || exit 1
    local id; id=$(aegis_waiter -t 1) || exit 1
    aegis_ended_waiting "$id" TIMEOUT 150
}

# --aegis-mem is the job's GPU memory on a node, one lease on one GPU
# that its tasks and steps share. A step that asks more than its job's
# lease is refused (its tasks fail, saying why), not silently given the
# job's; a job of several tasks is told at submit and at its tasks' start
# that they share it.
case_slurm_job_mem() {
    start; slurm_start
    cd "$DIR/work"
    local id out
    id=$(submit --aegis-mem=3000 --wrap "srun --aegis-mem=35000 sh -c 'echo step-ran'
        srun --aegis-mem=2000 sh -c 'echo small-step \$CUDA_VISIBLE_DEVICES'; echo batch-done")
    await 30 job_gone "$id" || fail "job $id did not end"
    grep -q batch-done "job-$id.out" || fail "job $id: $(cat "job-$id.out")"
    grep -q step-ran "job-$id.out" && fail "a step asking more than its job ran"
    grep -q "a step cannot have more than its job" "job-$id.out" ||
        fail "no reason given: $(cat "job-$id.out")"
    grep -q "small-step GPU-" "job-$id.out" ||
        fail "a step asking less did not share the lease: $(cat "job-$id.out")"
    out=$(runuser -u nobody -- sbatch --parsable -D "$DIR/work" \
        -o "$DIR/work/job-%j.out" -n2 --aegis-mem=1000 \
        --wrap 'srun sh -c "echo task \$SLURM_PROCID \$CUDA_VISIBLE_DEVICES"' 2>&1) ||
        fail "sbatch -n2: $out"
    echo "$out" | grep -q "not each task's" || fail "sbatch -n2 said: $out"
    id=$(echo "$out" | tail -n 1)
    await 30 job_gone "$id" || fail "job $id did not end"
    grep -q "the 2 tasks of this step on this node share one GPU" "job-$id.out" ||
        fail "job $id: $(cat "job-$id.out")"
}

# cli_filter.lua: a job submitted from inside a job (sbatch in a batch
# script, with SLURM_JOB_ID set) is a job of its own and asks for its
# aegis_mem GRES; a step (srun inside a job) does not. --aegis-mode
# without --aegis-mem is said to be ignored.
case_slurm_filter() {
    start; slurm_start
    cd "$DIR/work"
    local id child out
    id=$(submit --aegis-mem=1000 --wrap "sbatch --parsable -o $DIR/work/job-%j.out \
        --aegis-mem=2000 --wrap 'echo child' > $DIR/work/child.id
        srun --aegis-mem=1000 sh -c 'echo step'")
    await 30 eval '[ -s child.id ]' || fail "no child job: $(cat "job-$id.out")"
    child=$(cat child.id)
    scontrol show job "$child" | grep -q "TresPerNode=gres:aegis_mem:2000" ||
        fail "child job $child: $(scontrol show job "$child" | grep -i tres)"
    await 30 job_gone "$id" || fail "job $id did not end"
    grep -q "^step" "job-$id.out" || fail "the step did not run: $(cat "job-$id.out")"
    out=$(runuser -u nobody -- sbatch --parsable -D "$DIR/work" \
        -o "$DIR/work/job-%j.out" --aegis-mode=exclusive --wrap true 2>&1)
    echo "$out" | grep -q "without --aegis-mem is ignored" ||
        fail "--aegis-mode alone: $out"
}

# A task's end reaches aegisd within its 3 s grace while slurmctld hangs
# (stopped: every request to it waits MessageTimeout, 10 s): the plugin
# asks slurmctld nothing then. A task that exits 3 fails "exit 3", and
# one that ran alone and says CUDA out of memory is an OOM (not "done:
# its processes have exited", nor an exit "with no lease"). It holds
# most of its GPU, so that a reading taken while it runs (a slow
# machine's) agrees with its message (oom_check.h).
case_slurm_exit_ctld_down() {
    start; slurm_start
    cd "$DIR/work"
    local exit3 oom ctld rc=0
    exit3=$(submit --aegis-mem=1000 --wrap         "$FAKE --mib 1000 --seconds 0 --until $DIR/work/go; exit 3")
    oom=$(submit --aegis-mem=30000 --aegis-mode=exclusive --wrap         "$FAKE --mib 30000 --seconds 0 --until $DIR/work/go
         echo 'torch.OutOfMemoryError: CUDA out of memory.' >&2; exit 1")
    await 40 aegis_running "$exit3" && await 40 aegis_running "$oom" ||
        fail "jobs not running"
    ctld=$(cat "$SDIR/slurmctld.pid")
    kill -STOP "$ctld"
    touch go
    await 30 eval '[ "$(aegis_of $exit3 | cut -d" " -f2)" = failed ] &&
        [ "$(aegis_of $oom | cut -d" " -f2)" = failed ]' || rc=1
    kill -CONT "$ctld"
    [ $rc = 0 ] || fail "not both failed: $("$AEGIS" ls --all)"
    "$AEGIS" show --json "$(aegis_of "$exit3" | cut -d' ' -f1)" | pyjson "
assert d['attempt_list'][-1]['how'] == 'failed', d
assert d['reason'] == 'exit 3', d['reason']" ||
        fail "exit 3: $("$AEGIS" show "$(aegis_of "$exit3" | cut -d' ' -f1)")"
    "$AEGIS" show --json "$(aegis_of "$oom" | cut -d' ' -f1)" | pyjson "
assert d['attempt_list'][-1]['how'] == 'oom', d" ||
        fail "OOM: $("$AEGIS" show "$(aegis_of "$oom" | cut -d' ' -f1)")"
    await 30 job_gone "$exit3" || fail "$exit3 did not end"
}

# kill -9 of aegisd while Slurm jobs run: after the restart the one still
# running keeps its GPU, and the lease of one cancelled meanwhile (its
# Epilog could not reach aegisd) is dropped.
case_slurm_restart() {
    start; slurm_start
    cd "$DIR/work"
    keep=$(aegis_job 4000 3000 60) gone=$(aegis_job 4000 3000 60)
    await 40 aegis_running "$keep" && await 40 aegis_running "$gone" ||
        fail "jobs not running"
    "$AEGIS" gpus --json > before.json
    kill -KILL "$(daemon_pid)"
    scancel "$gone"
    await 20 job_gone "$gone" || fail "$gone not cancelled"
    start
    # each lease found at the start is checked against Slurm by an
    # `scontrol listpids` aegisd runs apart from its loop: its answers
    await 30 grep -q "Slurm job $gone is gone" "$DIR/state/aegisd.log" ||
        fail "stale lease of $gone kept"
    await 30 grep -q "lease of Slurm job $keep kept after a restart" \
        "$DIR/state/aegisd.log" || fail "$keep not checked after the restart"
    aegis_running "$keep" || fail "$keep not running after restart: $(aegis_of "$keep")"
    aegis_running "$gone" && fail "stale lease of $gone kept"
    aid=$(aegis_of "$keep" | cut -d' ' -f1)
    "$AEGIS" gpus --json > after.json
    python3 - before.json after.json "$aid" <<'PY' || fail "$keep moved"
import json, sys
gpu = lambda f: [g['index'] for g in json.load(open(f))['gpus'] if int(sys.argv[3]) in g['jobs']]
assert gpu(sys.argv[1]) == gpu(sys.argv[2]) != [], (gpu(sys.argv[1]), gpu(sys.argv[2]))
PY
    job_is "$keep" RUNNING || fail "$keep not running in Slurm"
    node_ok || fail "node $(node_state) after the Epilog without aegisd"
}

# aegisd stopped: with the plugin required, a job fails within the retry
# time without running, and the node stays idle, not drained. A retry past
# a day is ignored (it was taken: the job waited 10^14 s).
case_slurm_down() {
    slurm_start retry=2 retry=99999999999999
    cd "$DIR/work"
    id=$(submit --aegis-mem=1000 --gres=aegis_mem:1000 --wrap "echo ran")
    await 30 job_gone "$id" || fail "job $id did not end"
    # its retry time, 2 s (not the default 30 s): the task says it
    grep -q "aegis: .*; trying again for 2 s$" "job-$id.out" ||
        fail "not retried for 2 s: $(cat "job-$id.out")"
    scontrol show job "$id" | grep -q "JobState=FAILED" ||
        fail "job $id: $(scontrol show job "$id")"
    grep -q ran "job-$id.out" 2>/dev/null && fail "job $id ran without aegisd"
    await 10 node_is idle || fail "node $(node_state), not idle"
    grep -q "argument 'retry=99999999999999' ignored" "$SDIR"/log/slurm*.log ||
        fail "the retry past a day is not reported"
}

# aegisd stopped, the plugin optional: the job runs without aegis (no
# CUDA_VISIBLE_DEVICES from it) once the retry time is over.
case_slurm_optional() {
    slurm_start optional retry=1
    cd "$DIR/work"
    id=$(submit --aegis-mem=1000 --gres=aegis_mem:1000 --wrap 'echo "ran CVD=$CUDA_VISIBLE_DEVICES"')
    await 30 job_gone "$id" || fail "job $id did not end"
    grep -qx "ran CVD=" "job-$id.out" || fail "job $id: $(cat "job-$id.out")"
    scontrol show job "$id" | grep -q "JobState=COMPLETED" ||
        fail "job $id: $(scontrol show job "$id")"
    node_is idle || fail "node $(node_state), not idle"
}

e2e_run
