#!/bin/bash
# e2e_abi.sh -- aegisd against the behaviours of the real NVIDIA libraries
# that the test NVML library models (docs/nvidia.md): a driver whose
# process-list ABI differs, a GPU in MIG mode read without privileges, a
# MIG mode change on a busy GPU, and a MIG instance that processes keep
# after its job has ended.
#
# usage: e2e_abi.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG CASE
# Each case waits on events (aegis wait, log lines) with deadlines, never
# on fixed sleeps. Exit 0 pass, 1 fail.
set -u
AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6
source "$(dirname "$0")/e2e_lib.sh"

# Polls until the daemon's log has a line matching $1 (grep -E), or fails
# after 20 s.
await_log() {
    local i
    for i in $(seq 200); do
        grep -qE "$1" "$DIR/state/aegisd.log" 2>/dev/null && return 0
        sleep 0.1
    done
    fail "no log line /$1/"
}

# A process outside aegis holding $2 MiB on test GPU $1 until killed; its
# pid in STRANGER.
stranger() {
    sleep 60 &
    STRANGER=$!
    echo "$2 0.0000" > "$AEGIS_TEST_GPU_DIR/gpu$1.$STRANGER"
}

# A 535.54-era driver fills 32-byte entries behind _v3: every job on a
# shared GPU must still be found by its pid. Three MIG jobs, submitted in
# one spec, start in one scheduling pass, so they all run on the GPU at
# once whatever order NVML lists them in.
case_abi_driver535() {
    export AEGIS_TEST_GPUS=1x40960 AEGIS_TEST_NVML_DRIVER=535.54.03
    echo "sharing: mig" >> "$DIR/aegis.yaml"
    start 2> "$DIR/start.err"
    grep -q "NVML: 1 GPUs, driver 535.54.03" "$DIR/start.err" ||
        fail "driver not logged: $(cat "$DIR/start.err")"
    cd "$DIR/work"
    {
        echo "jobs:"
        for i in 1 2 3; do
            echo "  - mem_mib: 2000"
            echo "    command: [$FAKE, --mib, '2000', --seconds, '0', --until, '$DIR/go']"
        done
    } > spec.yaml
    ids=$("$AEGIS" submit spec.yaml) || fail "submit spec"
    # they run until each has been seen on the GPU
    for id in $ids; do
        wait_until "job $id seen on its GPU" \
            eval '"$AEGIS" show "$id" | grep -q "seen on GPU 0"'
    done
    touch "$DIR/go"
    "$AEGIS" wait $ids >/dev/null || fail "jobs on a 535.54 driver"
    for id in $ids; do
        "$AEGIS" show "$id" | grep -q "seen on GPU 0" ||
            fail "job $id never seen on its GPU: $("$AEGIS" show "$id")"
    done
}

# MIG mode, unprivileged: the whole-GPU handle refuses memory and the
# process list (NO_PERMISSION), NVML has no utilization. aegisd still
# starts, says how it reads the GPU, and runs a MIG job seen on its GPU.
case_abi_mig_unprivileged() {
    export AEGIS_TEST_GPUS=1x40960 AEGIS_TEST_NVML_UNPRIVILEGED=1
    echo "sharing: mig" >> "$DIR/aegis.yaml"
    echo "mode 1" > "$AEGIS_TEST_GPU_DIR/mig0"
    start
    await_log "GPU 0: memory and processes read per MIG device"
    await_log "GPU 0: NVML has no utilization for it"
    cd "$DIR/work"
    # it runs until it has been seen on its GPU
    id=$("$AEGIS" submit --mem 2000 -- "$FAKE" --mib 2000 --seconds 0 --until "$DIR/go")
    wait_until "MIG job seen on GPU 0" eval '"$AEGIS" show "$id" | grep -q "seen on GPU 0"'
    touch "$DIR/go"
    "$AEGIS" wait "$id" >/dev/null || fail "MIG job, unprivileged"
    "$AEGIS" show "$id" | grep -q "seen on GPU 0" ||
        fail "MIG job never seen: $("$AEGIS" show "$id")"
    "$AEGIS" gpus --json | pyjson "
g=d['gpus'][0]; assert g['total_mib']==40960, g" || fail "total of a MIG GPU"
}

# MIG mode cannot change while a process outside aegis holds the GPU:
# NVML leaves it pending (IN_USE). The job is not failed but put back,
# the change is not left pending, and the job runs once the GPU is idle.
case_abi_mig_busy() {
    export AEGIS_TEST_GPUS=1x40960
    echo "sharing: mig" >> "$DIR/aegis.yaml"
    stranger 0 100
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit --mem 2000 -- "$FAKE" --mib 2000 --seconds 1)
    await_log "job $id: not started, its GPU is busy \(retried\): .*GPU 0"
    grep -q pending "$AEGIS_TEST_GPU_DIR/mig0" 2>/dev/null &&
        fail "MIG mode change left pending: $(cat "$AEGIS_TEST_GPU_DIR/mig0")"
    "$AEGIS" show --json "$id" | pyjson "assert d['state']=='queued', d" ||
        fail "job not back in the queue"
    kill "$STRANGER"
    "$AEGIS" wait "$id" >/dev/null || fail "job after the GPU went idle"
    "$AEGIS" show "$id" | grep -q "not started, its GPU is busy" || fail "no event"
    grep -q "pending a GPU reset" "$DIR/state/aegisd.log" &&
        fail "a busy GPU reported as pending a reset"
    return 0
}

# Polls the shell condition $1 for up to 20 s; $2 says what failed.
await_cond() {
    local i
    for i in $(seq 200); do
        eval "$1" && return 0
        sleep 0.1
    done
    fail "$2"
}

# A process keeps running in the job's MIG instance when the job ends: NVML
# refuses to destroy it (IN_USE). aegisd keeps it recorded, retries, and
# destroys it once the process is gone; a job placed on those slices
# meanwhile waits instead of failing. The process is not the job's (the
# shim kills what is left of a job when it ends): the test starts it on
# the job's MIG device, as a user could from outside aegis.
case_abi_mig_leftover() {
    export AEGIS_TEST_GPUS=1x40960
    echo "sharing: mig" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    a=$("$AEGIS" submit --mem 2000 -- sh -c 'echo "$CUDA_VISIBLE_DEVICES" > mig.tmp
        mv mig.tmp mig; until [ -e go ]; do sleep 0.05; done')
    await_cond '[ -s mig ]' "job $a never ran"
    # it holds the instance past job a, until job b has been placed or waits
    CUDA_VISIBLE_DEVICES=$(cat mig) "$FAKE" --mib 100 --seconds 0 --until "$DIR/gone.go" \
        </dev/null >/dev/null 2>&1 &
    await_cond 'ls "$AEGIS_TEST_GPU_DIR" | grep -q "^gpu0\."' \
        "the process on $(cat mig) never started"
    touch go
    "$AEGIS" wait "$a" >/dev/null || fail "first job"
    "$AEGIS" show "$a" | grep -q "MIG instance 1g.5gb not destroyed yet" ||
        fail "no event for the held instance: $("$AEGIS" show "$a")"
    b=$("$AEGIS" submit --mem 2000 -- "$FAKE" --mib 2000 --seconds 1)
    # placed, or waiting for the held slices
    wait_until "job $b placed or waiting" eval \
        '! is_state "$b" queued || [ -n "$(job_field "$b" wait_code)" ]'
    touch "$DIR/gone.go"
    await_log "MIG instance 1 \(1g.5gb\) of job $a, attempt 1, left by its processes: destroyed"
    "$AEGIS" wait "$b" >/dev/null || fail "job after the held instance"
    grep -q "^gi " "$AEGIS_TEST_GPU_DIR/mig0" &&
        fail "instances left: $(cat "$AEGIS_TEST_GPU_DIR/mig0")"
    return 0
}

e2e_run
