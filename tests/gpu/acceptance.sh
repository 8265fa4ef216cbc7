#!/bin/bash
# acceptance.sh -- the first thing to run on a new GPU server: aegis on
# the real NVIDIA libraries, checked against what the machine itself says
# (nvidia-smi, NVML read directly), in thirteen checks of a few seconds
# each.
# docs/gpu-acceptance.md explains each check and how to read a failure.
#
# usage: tests/gpu/acceptance.sh [BUILD_DIR]     (default: build/)
#
# It builds nothing: it runs BUILD_DIR's aegisd, aegis and aegis-gpuburn
# with a temporary state folder and socket, on GPU $AEGIS_GPU_TEST_GPU
# (default 0; aegisd's other GPUs are drained for the run). Each check
# prints one line, PASS, FAIL or SKIP with its measured figure, and the
# summary goes to $AEGIS_GPU_TEST_SUMMARY (default BUILD_DIR/
# gpu-acceptance.json). Every job, daemon and MIG instance it made is
# gone when it exits, and a GPU's MIG mode is as it found it.
#
# environment:
#   AEGIS_GPU_TEST_STANDIN=1  run against the stand-ins instead (test NVML,
#       DCGM and MPS control, aegis-fakegpu, the feed's fake libcuda), as
#       CI does so that this script cannot rot
#   AEGIS_GPU_TEST_MIG=1  let check 8 turn MIG on and create instances
#       (never by default: a shared machine's MIG settings are not ours)
#   AEGIS_GPU_TEST_GPU=N  the GPU to test (default 0)
#   AEGIS_GPU_TEST_KEEP=DIR  copy aegisd's logs and the jobs' there at the
#       end, to read a failure after the temporary folder is gone
#
# exit status: 0 no check failed, 1 a check failed, 2 bad usage or an
# incomplete build, 77 no NVIDIA driver here (nothing was run).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd) ||
    { echo "acceptance: no build folder ${1:-$ROOT/build}" >&2; exit 2; }
# python3 is the interpreter itself, not a version manager's shim in front
# of it: pyenv's costs seconds a call on a loaded machine, and a test calls
# python3 dozens of times. (A shell function would not do: `python3 ... &`
# would then give $! of a subshell, not of python.)
PATH=$(dirname "$(python3 -c 'import sys; print(sys.executable)')"):$PATH
HELPER="python3 $ROOT/tests/gpu/acceptance.py"
STANDIN=${AEGIS_GPU_TEST_STANDIN:-0}
G=${AEGIS_GPU_TEST_GPU:-0}
SUMMARY=${AEGIS_GPU_TEST_SUMMARY:-$BUILD/gpu-acceptance.json}
AEGISD=$BUILD/src/daemon/aegisd AEGIS=$BUILD/src/cli/aegis
TESTGPU=$BUILD/src/testgpu
T0=$SECONDS

# ---- the machine: real GPUs or the stand-ins --------------------------------
DIR=$(mktemp -d /tmp/aegis-gpu-acceptance-XXXXXX)
chmod 755 "$DIR"
STATE=$DIR/state
export AEGIS_SOCKET=$DIR/aegis.sock
# Killed before its EXIT trap runs (SIGKILL, as ctest's TIMEOUT sends), it
# still leaves no aegisd or job behind (MIG modes are not put back then).
bash "$ROOT/tests/daemon/e2e_reap.sh" --detach $$ "$DIR" "$AEGIS_SOCKET"
DAEMON_OPTS=()
if [ "$STANDIN" = 1 ]; then
    MODE=standin
    export AEGIS_TEST_GPU_DIR=$DIR/gpu AEGIS_TEST_GPUS=2x40960
    mkdir -m 777 "$AEGIS_TEST_GPU_DIR"
    NVML=$TESTGPU/libaegis-testnvml.so
    DAEMON_OPTS=(--dcgm-library "$TESTGPU/libaegis-testdcgm.so")
    BURN=$TESTGPU/aegis-fakegpu
    MPS_CONTROL=$TESTGPU/aegis-fake-mps-control
    FEED_CUDA=$BUILD/tests/feed/libfake_libcuda.so
    : "${AEGIS_GPU_TEST_MIG:=1}"  # the test GPUs are this run's own
    # the stand-ins answer at once: short jobs and windows keep the run
    # under a minute
    LONG=5 SHORT=5 SAMPLE=0.25 OBSERVE=0.5 MPS_SECS=2
else
    MODE=gpu
    NVML=libnvidia-ml.so.1
    BURN=$TESTGPU/aegis-gpuburn
    MPS_CONTROL=$(command -v nvidia-cuda-mps-control)
    FEED_CUDA=
    LONG=15 SHORT=12 SAMPLE=1 OBSERVE=1 MPS_SECS=12
fi
export AEGIS_NVML_LIBRARY=$NVML
for f in "$AEGISD" "$AEGIS" "$BURN"; do
    [ -x "$f" ] || { echo "acceptance: $f is missing: build $BUILD first" >&2
                     rm -rf "$DIR"; exit 2; }
done
if ! $HELPER probe "$NVML" > "$DIR/probe0.json" 2> "$DIR/probe0.err"; then
    echo "SKIP: no NVIDIA driver here ($(cat "$DIR/probe0.err"))"
    rm -rf "$DIR"
    exit 77
fi

# ---- results ------------------------------------------------------------------
: > "$DIR/results"
# result N NAME PASS|FAIL|SKIP FIGURE: one line on stdout, one in the
# summary, each with the seconds since the run began.
result() {
    printf '%-4s %d %s: %s [%d s]\n' "$3" "$1" "$2" "$4" $((SECONDS - T0))
    printf '%d\t%s\t%s\t%d\t%s\n' "$1" "$2" "$3" $((SECONDS - T0)) "$4" \
        >> "$DIR/results"
}
# Reads JSON on stdin and runs python on it as d.
pyjson() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
# GPU G's UUID: what CUDA_VISIBLE_DEVICES names it by for the MPS checks.
UUID=$(pyjson "print(d['gpus'][$G]['uuid'] if $G < len(d['gpus']) else '')" \
       < "$DIR/probe0.json")
# The GPU under test in aegis gpus --json, as d (an empty program prints it).
gpu_json() { "$AEGIS" gpus --json | pyjson "d=d['gpus'][$G]; $1"; }
# Polls the shell condition $2 every 0.2 s for at most $1 seconds.
await() {
    local deadline=$((SECONDS + $1))
    until eval "$2"; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.2
    done
}
# The job's latest attempt field $2 (show --json), or nothing.
attempt() {
    "$AEGIS" show --json "$1" 2>/dev/null |
        pyjson "a=d['attempt_list']; print(a[-1]['$2'] if a else '')"
}
state_of() { "$AEGIS" show --json "$1" 2>/dev/null | pyjson "print(d['state'])"; }
seen() { "$AEGIS" show "$1" 2>/dev/null | grep -q "seen on GPU $G"; }
elapsed() { python3 -c "import time; print('%.1f' % (time.time() - $1))"; }
now() { python3 -c "import time; print(time.time())"; }

# ---- the daemon ---------------------------------------------------------------
daemon_pid() {
    local p; p=$(cat "$STATE/aegisd.lock" 2>/dev/null)
    [ -n "$p" ] && [ "$(cat /proc/$p/comm 2>/dev/null)" = aegisd ] && echo "$p"
}
# Starts aegisd with the YAML lines given, drains every GPU but G and
# waits for its first sample. Returns 1 (and says why) when it cannot.
start_daemon() {
    printf 'window_samples: 2\nobserve_s: %s\nsample_period_s: %s\n' \
        "$OBSERVE" "$SAMPLE" > "$DIR/aegis.yaml"
    printf '%s\n' "$@" >> "$DIR/aegis.yaml"
    "$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$STATE" \
        --config "$DIR/aegis.yaml" "${DAEMON_OPTS[@]}" 2>> "$DIR/aegisd.err" ||
        { echo "acceptance: aegisd did not start: $(tail -3 "$DIR/aegisd.err")" >&2
          return 1; }
    local n
    n=$("$AEGIS" gpus --json | pyjson "print(len(d['gpus']))") || return 1
    [ "$G" -lt "$n" ] || { echo "acceptance: no GPU $G (aegisd sees $n)" >&2; return 1; }
    for ((k = 0; k < n; k++)); do
        [ $k = "$G" ] || "$AEGIS" drain $k > /dev/null
    done
    await 10 'gpu_json "assert d[\"total_mib\"] > 0" 2>/dev/null' || return 1
    IDLE_MIB=$(gpu_json "print(d['used_mib'])")
}
# Waits until the GPU shows no job and the memory it had idle: a check
# reads free memory only from a sample taken after the last job ended.
settle() {
    await 20 "gpu_json 'assert not d[\"jobs\"] and d[\"used_mib\"] <= $IDLE_MIB + 64' 2>/dev/null"
}
# Cancels what is left, stops aegisd and waits until it is gone.
stop_daemon() {
    local p ids
    p=$(daemon_pid) || return 0
    ids=$("$AEGIS" ls --json 2>/dev/null | pyjson "
print(' '.join(str(j['id']) for j in d if j['state'] in ('queued', 'running')))")
    if [ -n "$ids" ]; then
        "$AEGIS" cancel $ids > /dev/null 2>&1
        timeout 30 "$AEGIS" wait $ids > /dev/null 2>&1
    fi
    kill -TERM "$p" 2>/dev/null
    await 15 '[ -z "$(daemon_pid)" ]' || kill -KILL "$p" 2>/dev/null
    await 5 '[ -z "$(daemon_pid)" ]'
}
# Submits a job ($@: aegis submit's arguments), remembering its id.
submit() {
    local id
    id=$("$AEGIS" submit "$@") || return 1
    echo "$id" >> "$DIR/jobs"
    echo "$id"
}

MIG_FOUND=       # the GPU's MIG mode before check 8 changed it
cleanup() {
    stop_daemon
    # a job that outlived its daemon (it should not): its pid from the store
    for id in $(cat "$DIR/jobs" 2>/dev/null); do
        local pid; pid=$(cat "$DIR/pids.$id" 2>/dev/null)
        [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    done
    mpsd_quit
    for pid in $($HELPER mps-procs "$STATE/mps/$G/pipe" 2>/dev/null); do
        kill -TERM "$pid" 2>/dev/null
    done
    if [ -n "$MIG_FOUND" ]; then
        $HELPER set-mig "$NVML" "$G" "$MIG_FOUND" > /dev/null 2>&1
    fi
    if [ -n "${AEGIS_GPU_TEST_KEEP:-}" ]; then
        mkdir -p "$AEGIS_GPU_TEST_KEEP" &&
            cp -r "$DIR/aegisd.err" "$STATE/aegisd.log" "$STATE/logs" \
                "$AEGIS_GPU_TEST_KEEP/" 2>/dev/null
    fi
    rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
# Records job $1's pid for cleanup, once it runs.
note_pid() { attempt "$1" job_pid > "$DIR/pids.$1"; }

# ---- the checks ---------------------------------------------------------------
# 1. aegis gpus --json against nvidia-smi (or NVML read directly): three
# tries a second apart, as utilization and power move between two reads.
check_telemetry() {
    local ref=nvidia-smi figure
    for try in 1 2 3; do
        "$AEGIS" gpus --json > "$DIR/gpus.json"
        if [ "$MODE" = gpu ] && command -v nvidia-smi > /dev/null; then
            $HELPER smi > "$DIR/ref.json" || { result 1 telemetry FAIL "nvidia-smi failed"; return; }
        else
            ref="NVML read directly"
            $HELPER probe "$NVML" > "$DIR/ref.json"
        fi
        if figure=$($HELPER compare "$DIR/gpus.json" "$DIR/ref.json"); then
            result 1 telemetry PASS "against $ref: $figure"
            return
        fi
        sleep 1
    done
    result 1 telemetry FAIL "against $ref: $figure"
}

# 2. A 2000 MiB job is seen on its GPU within 10 s, its pid in NVML's
# process list and its memory in the telemetry. It runs on until check 6
# is done ($DIR/load.done), however long that takes on a loaded machine,
# and check 5 waits for its end; its id is left in $LOAD.
check_seen() {
    local used0 t pid used
    used0=$(gpu_json "print(d['used_mib'])")
    t=$(now)
    LOAD=$(submit --name burn-2000 --mem 2000 -- "$BURN" --mib 2000 \
           --seconds "$LONG" --until "$DIR/load.done" --smact 0.5) || { result 2 job-seen FAIL "submit failed"; return; }
    if ! await 10 "seen $LOAD"; then
        result 2 job-seen FAIL "job $LOAD not seen on GPU $G within 10 s ($(state_of "$LOAD"))"
        return
    fi
    local secs; secs=$(elapsed "$t")
    note_pid "$LOAD"
    pid=$(cat "$DIR/pids.$LOAD")
    await 10 "gpu_json 'assert d[\"used_mib\"] >= $used0 + 1900' 2>/dev/null"
    used=$(gpu_json "print(round(d['used_mib'] - $used0))")
    local listed
    listed=$($HELPER probe "$NVML" | pyjson "
p=d['gpus'][$G]['pids']; print('unknown' if p is None else 'yes' if $pid in p else 'no')")
    if [ "$listed" = no ] || [ "$used" -lt 1900 ]; then
        result 2 job-seen FAIL "seen after ${secs} s, pid $pid in NVML's list: $listed, memory +$used MiB (want +2000)"
    else
        result 2 job-seen PASS "seen after ${secs} s, pid $pid in NVML's list: $listed, memory +$used MiB"
    fi
}

# 6. DCGM under the load of check 2: the SMACT/SMOCC/DRAMA filter is on and
# reads values (DCGM's first comes one update cycle after the watch).
check_dcgm() {
    if ! grep -q "DCGM: SMACT/SMOCC/DRAMA pressure filter" "$DIR/aegisd.err" "$STATE/aegisd.log" 2>/dev/null; then
        local why; why=$(grep -ho "no DCGM: .*" "$DIR/aegisd.err" "$STATE/aegisd.log" 2>/dev/null | head -1)
        if [ "$MODE" = gpu ] && ! ldconfig -p 2>/dev/null | grep -qE 'libdcgm\.so\.[34] '; then
            result 6 dcgm SKIP "no libdcgm.so.4 or .3 here"
        else
            result 6 dcgm FAIL "DCGM is installed but aegisd did not use it: $why"
        fi
        return
    fi
    if await 30 'gpu_json "assert d[\"smact\"] and d[\"smact\"] > 0" 2>/dev/null'; then
        result 6 dcgm PASS "$(gpu_json "print('smact %.2f smocc %.2f drama %.2f (the job runs at 0.5)' % (d['smact'], d['smocc'] or 0, d['drama'] or 0))")"
    else
        result 6 dcgm FAIL "no SMACT under load in 30 s: $(gpu_json "print(d['smact'], d['smocc'], d['drama'])" 2>/dev/null || echo "no smact in aegis gpus --json") $(grep -h 'DCGM read failed' "$STATE/aegisd.log" | tail -1)"
    fi
}

# 5. The GPU's energy counter advances over a job, and aegis report gives
# the job a share of it. $1: the counter before the job.
check_energy() {
    local e0=$1 e1
    timeout $((LONG + 30)) "$AEGIS" wait "$LOAD" > /dev/null
    e1=$(gpu_json "print(d['energy_j'])")
    "$AEGIS" report --json > "$DIR/report.json"
    local figure
    figure=$(pyjson "
j={r['job_id']: r for r in d['jobs']}[$LOAD]
gpu=$e1 - $e0
print('GPU counter +%.0f J over the run, job %d: %.0f J (%.0f%%)' % (gpu, $LOAD, j['energy_j'], 100 * j['energy_j'] / gpu if gpu > 0 else 0))
assert $e0 >= 0 and gpu > 0 and j['state'] == 'done'
assert 0 < j['energy_j'] <= gpu * 1.05 + 1
" < "$DIR/report.json" 2> "$DIR/energy.err")
    if [ $? = 0 ]; then
        result 5 energy PASS "$figure"
    else
        result 5 energy FAIL "${figure:-no figure} $(tail -1 "$DIR/energy.err")"
    fi
}

# 3. Two small jobs share the GPU once the first has been observed; a third
# whose demand (--mem + est_margin_mib) exceeds the free memory left waits
# for them, though it fits the GPU alone.
check_collocation() {
    local free guard total a b c t
    settle
    free=$(gpu_json "print(int(d['total_mib'] - d['used_mib']))")
    total=$(gpu_json "print(int(d['total_mib']))")
    guard=$(python3 -c "print(int(max(512, 0.01 * $total)))")
    # demand = mem + 2048 = what is free less the guard less 1000 MiB:
    # fits alone, not beside 2 x 1000 MiB
    local mem=$((free - guard - 2048 - 1000))
    t=$(now)
    # they run on until the third job has had its chance beside them
    local secs=$SHORT
    a=$(submit --name small-a --mem 1000 -- "$BURN" --mib 1000 --seconds $secs \
        --until "$DIR/c.tried" --smact 0.1)
    b=$(submit --name small-b --mem 1000 -- "$BURN" --mib 1000 --seconds $secs \
        --until "$DIR/c.tried" --smact 0.1)
    if ! await 20 "seen $a && seen $b"; then
        result 3 collocation FAIL "jobs $a, $b not both seen in 20 s: $(state_of "$a"), $(state_of "$b")"
        return
    fi
    note_pid "$a"; note_pid "$b"
    local together; together=$(elapsed "$t")
    c=$(submit --name too-big --mem "$mem" -- "$BURN" --mib 100 --seconds 0 --smact 0)
    # four samples and an observation window: time enough to be placed
    sleep "$(python3 -c "print(4 * $SAMPLE + $OBSERVE)")"
    local c_state; c_state=$(state_of "$c")
    [ "$(state_of "$a") $(state_of "$b")" = "running running" ] ||
        c_state="$c_state (but jobs $a, $b had ended: make them longer)"
    local shared; shared=$("$AEGIS" show --json "$b" | pyjson "print(not d['attempt_list'][0]['exclusive'])")
    touch "$DIR/c.tried"
    timeout $((secs + 30)) "$AEGIS" wait "$a" "$b" "$c" > /dev/null
    local order
    order=$(python3 - "$("$AEGIS" show --json "$a")" "$("$AEGIS" show --json "$b")" \
                      "$("$AEGIS" show --json "$c")" <<'PY'
import json, sys
a, b, c = (json.loads(x) for x in sys.argv[1:])
first_end = min(x['attempt_list'][0]['ended'] for x in (a, b))
print(c['state'] == 'done' and c['attempt_list'][0]['started'] >= first_end - 0.5)
PY
)
    local figure="jobs $a and $b on GPU $G together ${together} s after submission (second one shared: $shared); job $c (demand $((mem + 2048)) MiB, more than the $free MiB free less their 2000 and the $guard MiB guard) was $c_state beside them and ran once one ended: $order"
    if [ "$shared" = True ] && [ "$c_state" = queued ] && [ "$order" = True ]; then
        result 3 collocation PASS "$figure"
    else
        result 3 collocation FAIL "$figure"
    fi
}

# 4. A job asks for more than a big job leaves free: a real CUDA OOM,
# classified oom, requeued higher on the ladder, done once it fits.
check_oom() {
    local free total guard hog oomjob used0
    settle
    free=$(gpu_json "print(int(d['total_mib'] - d['used_mib']))")
    total=$(gpu_json "print(int(d['total_mib']))")
    used0=$(gpu_json "print(int(d['used_mib']))")
    guard=$(python3 -c "print(int(max(512, 0.01 * $total)))")
    # the hog leaves the 5120 MiB a job without --mem is admitted with,
    # plus 3 GiB for the hog's own CUDA context; the job then asks for
    # 1 GiB more than that: it fits once the hog is gone
    local hog_mib=$((free - guard - 5120 - 2048 - 1024))
    local want=$((free - hog_mib + 1024))
    # the hog runs on until the job has run out of memory beside it
    hog=$(submit --name hog --mem "$hog_mib" -- "$BURN" --mib "$hog_mib" --seconds "$SHORT" \
          --until "$DIR/oom.seen" --smact 0.1)
    if ! await 20 "gpu_json 'assert d[\"used_mib\"] >= $used0 + 0.95 * $hog_mib' 2>/dev/null"; then
        result 4 oom-ladder FAIL "the $hog_mib MiB job $hog never showed its memory ($(state_of "$hog"))"
        return
    fi
    note_pid "$hog"
    oomjob=$(submit --name oom -- "$BURN" --mib "$want" --seconds 1 --smact 0.1)
    await 60 "attempt $oomjob how | grep -qx -e oom -e ok"
    touch "$DIR/oom.seen"
    timeout $((SHORT + 60)) "$AEGIS" wait "$hog" "$oomjob" > /dev/null
    local figure
    figure=$("$AEGIS" show --json "$oomjob" | pyjson "
a=d['attempt_list']
print('job %d (%d MiB, beside %d MiB): %s; attempts %s' % ($oomjob, $want, $hog_mib, d['state'],
      ', '.join('%s at floor %d' % (x['how'], x['floor_mib']) for x in a)))
assert d['state'] == 'done' and a[0]['how'] == 'oom' and len(a) >= 2
assert a[-1]['floor_mib'] > a[0]['floor_mib']" 2> "$DIR/oom.err")
    if [ $? = 0 ] && "$AEGIS" log --stderr "$oomjob" | grep -q "CUDA out of memory"; then
        result 4 oom-ladder PASS "$figure"
    else
        result 4 oom-ladder FAIL "${figure:-no attempts} $(tail -1 "$DIR/oom.err")"
    fi
}

# 7. MPS: two jobs on an mps GPU are clients of its MPS server, and the
# control daemon aegisd started is gone once aegisd stops.
check_mps() {
    if [ -z "$MPS_CONTROL" ]; then
        result 7 mps SKIP "no nvidia-cuda-mps-control here"
        return
    fi
    local pipe=$STATE/mps/$G/pipe a b
    start_daemon "sharing:" "  default: naive" "  $G: mps" "mps_control: $MPS_CONTROL" ||
        { result 7 mps FAIL "aegisd did not start with GPU $G in mps mode"; return; }
    # (the real server is asked about its clients while both run; the
    # stand-in has none, so its jobs need not outlast the second's start)
    a=$(submit --name mps-a --mem 1000 -- "$BURN" --mib 1000 --seconds "$MPS_SECS" --smact 0.1)
    b=$(submit --name mps-b --mem 1000 -- "$BURN" --mib 1000 --seconds "$MPS_SECS" --smact 0.1)
    if ! await 20 "seen $a && seen $b"; then
        result 7 mps FAIL "jobs $a, $b not both seen in 20 s: $(state_of "$a"), $(state_of "$b")"
        stop_daemon
        return
    fi
    note_pid "$a"; note_pid "$b"
    local pa pb servers clients="" s
    pa=$(cat "$DIR/pids.$a") pb=$(cat "$DIR/pids.$b")
    servers=$(echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=$pipe "$MPS_CONTROL" 2>&1)
    for s in $servers; do
        clients="$clients $(echo "get_client_list $s" | CUDA_MPS_PIPE_DIRECTORY=$pipe "$MPS_CONTROL" 2>&1)"
    done
    local piped=0
    for id in "$a" "$b"; do
        "$AEGIS" log "$id" | head -1 | grep -q "mps_pipe=$pipe " && piped=$((piped + 1))
    done
    timeout $((MPS_SECS + 30)) "$AEGIS" wait "$a" "$b" > /dev/null
    local t; t=$(now)
    stop_daemon
    local gone=yes
    await 10 '[ -z "$($HELPER mps-procs "$pipe")" ]' || gone="no: $($HELPER mps-procs "$pipe")"
    local figure="jobs given the pipe: $piped of 2; servers: ${servers:-none}; clients:${clients:- none}; control daemon gone $(elapsed "$t") s after aegisd stopped: $gone"
    local ok=1
    [ "$piped" = 2 ] && [ "$gone" = yes ] || ok=0
    # the stand-in control daemon runs no server; a real one must list both
    if [ "$MODE" = gpu ]; then
        case " $clients " in *" $pa "*) ;; *) ok=0 ;; esac
        case " $clients " in *" $pb "*) ;; *) ok=0 ;; esac
    fi
    [ $ok = 1 ] && result 7 mps PASS "$figure" || result 7 mps FAIL "$figure"
}

# 8. MIG: the GPU's mode and, with MIG on, its profiles; with
# AEGIS_GPU_TEST_MIG=1 also a job in an instance aegisd makes and destroys.
check_mig() {
    local mig
    mig=$($HELPER probe "$NVML" | pyjson "
m=d['gpus'][$G]['mig']
print('' if m is None else '%d %d %s' % (m['current'], m['pending'],
      ','.join('%dg.%dgb' % (p['slices'], round(p['mem_mib'] / 1024)) for p in m['profiles']) or '-'))")
    if [ -z "$mig" ]; then
        result 8 mig SKIP "GPU $G has no MIG (nvmlDeviceGetMigMode: not supported)"
        return
    fi
    set -- $mig
    local figure="mode $1 (pending $2), profiles ${3/-/readable with MIG on only}"
    if [ "${AEGIS_GPU_TEST_MIG:-0}" != 1 ]; then
        result 8 mig PASS "$figure; no instances made (AEGIS_GPU_TEST_MIG unset)"
        return
    fi
    MIG_FOUND=$1
    start_daemon "sharing:" "  default: naive" "  $G: mig" ||
        { result 8 mig FAIL "$figure; aegisd did not start with GPU $G in mig mode"; return; }
    local j
    j=$(submit --name mig --mem 2000 -- "$BURN" --mib 2000 --seconds 1 --smact 0.1)
    timeout 60 "$AEGIS" wait "$j" > /dev/null
    local dev made gone st
    st=$(state_of "$j")
    dev=$("$AEGIS" log "$j" | head -1 | sed -n 's/.* devices=\([^ ]*\) .*/\1/p')
    made=$("$AEGIS" show "$j" | grep -o "MIG instance [^ ]* created" | head -1)
    gone=$("$AEGIS" show "$j" | grep -c "MIG instance [^ ]* destroyed")
    stop_daemon
    figure="$figure; job $j $st on ${dev:-?} (${made:-no instance created}), instances destroyed: $gone"
    if [ "$st" = done ] && [ "${dev#MIG-}" != "$dev" ] &&
       [ -n "$made" ] && [ "$gone" -ge 1 ]; then
        result 8 mig PASS "$figure"
    else
        result 8 mig FAIL "$figure"
    fi
}

# An MPS control daemon of our own on GPU G's pipe folder $MPSD/pipe
# (not aegisd's), for checks 10 and 11: mpsd ARGS runs the control program
# in its environment.
MPSD=
mpsd() {
    CUDA_VISIBLE_DEVICES=$UUID CUDA_MPS_PIPE_DIRECTORY=$MPSD/pipe \
        CUDA_MPS_LOG_DIRECTORY=$MPSD/log "$MPS_CONTROL" "$@"
}
mpsd_quit() {
    [ -n "$MPSD" ] || return 0
    echo quit | mpsd > /dev/null 2>&1
    await 10 '[ -z "$($HELPER mps-procs "$MPSD/pipe")" ]'
    MPSD=
}

# 10. A second `nvidia-cuda-mps-control -d` on a pipe folder whose daemon
# runs refuses, leaving one daemon there: what aegisd relies on when it
# keeps a daemon across its restart (it asks the control socket first).
check_mps_second() {
    if [ -z "$MPS_CONTROL" ]; then
        result 10 mps-second-daemon SKIP "no nvidia-cuda-mps-control here"
        return
    fi
    MPSD=$DIR/mpsd
    mkdir -p "$MPSD/pipe" "$MPSD/log"
    if ! mpsd -d > "$DIR/mpsd1.out" 2>&1; then
        result 10 mps-second-daemon FAIL "the first -d failed: $(tail -1 "$DIR/mpsd1.out")"
        MPSD=
        return
    fi
    mpsd -d > "$DIR/mpsd2.out" 2>&1
    local rc=$? n
    n=$($HELPER mps-procs "$MPSD/pipe" | wc -w)
    local figure="second -d: exit $rc ($(head -1 "$DIR/mpsd2.out")); control daemons on the pipe: $n"
    if [ "$rc" != 0 ] && [ "$n" = 1 ]; then
        result 10 mps-second-daemon PASS "$figure"
    else
        result 10 mps-second-daemon FAIL "$figure"
    fi
}

# Whether pid is in one of NVML's process lists of GPU G (the answer in
# $DIR/lists.json).
listed() {
    $HELPER lists "$NVML" "$G" "$1" > "$DIR/lists.new" 2>/dev/null &&
        mv "$DIR/lists.new" "$DIR/lists.json" &&
        pyjson 'assert d["compute"] or d["mps"]' < "$DIR/lists.json" 2>/dev/null
}

# 11. Which of NVML's process lists holds an MPS client: aegis reads both
# (the compute list and nvmlDeviceGetMPSComputeRunningProcesses) and needs
# the job in one of them to see it. Uses check 10's control daemon.
check_mps_lists() {
    if [ -z "$MPSD" ]; then
        result 11 mps-lists SKIP "no MPS control daemon (check 10)"
        return
    fi
    CUDA_VISIBLE_DEVICES=$UUID CUDA_MPS_PIPE_DIRECTORY=$MPSD/pipe \
        "$BURN" --mib 500 --seconds "$LONG" --smact 0.1 > "$DIR/mpsjob.out" 2>&1 &
    local pid=$!
    echo '{}' > "$DIR/lists.json"
    await 20 "listed $pid"
    local ok=$?
    kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    mpsd_quit
    local figure="client pid $pid: $(pyjson "
print('in the compute list: %s, in the MPS list: %s' % (d.get('compute'), d.get('mps')))" < "$DIR/lists.json")"
    if [ $ok = 0 ]; then
        result 11 mps-lists PASS "$figure"
    else
        result 11 mps-lists FAIL "$figure; in neither after 20 s ($(tail -1 "$DIR/mpsjob.out"))"
    fi
}

# The DCGM library aegisd loads, or nothing.
dcgm_library() {
    if [ "$MODE" = standin ]; then
        echo "$TESTGPU/libaegis-testdcgm.so"
    else
        ldconfig -p 2>/dev/null | grep -oE '/[^ ]*libdcgm\.so\.[34]$' | head -1
    fi
}

# 12. Whether SMACT, SMOCC and DRAMA can be watched in one pass, as aegisd
# watches them (one field group): some GPUs need several passes for them,
# and DCGM then refuses the watch.
check_dcgm_one_pass() {
    local lib; lib=$(dcgm_library)
    if [ -z "$lib" ]; then
        result 12 dcgm-one-pass SKIP "no libdcgm.so.4 or .3 here"
        return
    fi
    local out rc
    out=$($HELPER dcgm-watch "$lib" 2>&1)
    rc=$?
    case $rc in
    0) result 12 dcgm-one-pass PASS "$out" ;;
    4) result 12 dcgm-one-pass SKIP "$out" ;;
    *) result 12 dcgm-one-pass FAIL "$out (aegisd then filters on utilization alone)" ;;
    esac
}

# 13. MIG mode switched on while DCGM watches the GPU, as aegisd's own
# embedded DCGM engine does when a mig or auto GPU needs MIG: whether
# NVML applies it or leaves it pending. Only with AEGIS_GPU_TEST_MIG=1 on
# a MIG GPU whose mode is off; the mode is set back afterwards.
check_mig_under_dcgm() {
    local lib mig
    lib=$(dcgm_library)
    mig=$($HELPER probe "$NVML" | pyjson "
m=d['gpus'][$G]['mig']; print('' if m is None else m['current'])")
    if [ -z "$lib" ] || [ -z "$mig" ] || [ "${AEGIS_GPU_TEST_MIG:-0}" != 1 ] ||
       [ "$mig" != 0 ]; then
        result 13 mig-under-dcgm SKIP "needs DCGM (${lib:-none}), a MIG GPU with MIG off (mode ${mig:-none}) and AEGIS_GPU_TEST_MIG=1"
        return
    fi
    : "${MIG_FOUND:=$mig}"
    $HELPER dcgm-hold "$lib" 60 > "$DIR/hold.out" 2>&1 &
    local holder=$! out
    if ! await 20 'grep -q watching "$DIR/hold.out"'; then
        kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
        result 13 mig-under-dcgm FAIL "DCGM did not watch the GPU: $(tail -1 "$DIR/hold.out")"
        return
    fi
    out=$($HELPER set-mig "$NVML" "$G" 1 2>&1)
    local now; now=$($HELPER probe "$NVML" | pyjson "
m=d['gpus'][$G]['mig']; print('mode %d, pending %d' % (m['current'], m['pending']))")
    kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
    $HELPER set-mig "$NVML" "$G" 0 > /dev/null 2>&1
    local figure="$out; then $now"
    case $now in
    "mode 1,"*) result 13 mig-under-dcgm PASS "$figure" ;;
    *) result 13 mig-under-dcgm FAIL "$figure: aegisd's own DCGM engine would keep MIG off" ;;
    esac
}

# 9. The feed's CUDA IPC path between two processes: the feed's own GPU
# test (its stand-in driver under AEGIS_GPU_TEST_STANDIN).
check_feed() {
    local t="$BUILD/tests/feed/test_feed_gpu" rc
    if [ ! -x "$t" ]; then
        result 9 feed-ipc SKIP "$t not built"
        return
    fi
    if [ "$MODE" = standin ]; then
        [ -e "$FEED_CUDA" ] || { result 9 feed-ipc SKIP "no fake libcuda (built without cuda.h)"; return; }
        AEGIS_CUDA_LIBRARY=$FEED_CUDA timeout 120 "$t" > "$DIR/feed.out" 2>&1
    else
        timeout 120 "$t" > "$DIR/feed.out" 2>&1
    fi
    rc=$?
    case $rc in
    0) result 9 feed-ipc PASS "$(grep '^ok' "$DIR/feed.out" | tail -1)" ;;
    77) result 9 feed-ipc SKIP "$(tail -1 "$DIR/feed.out")" ;;
    *) result 9 feed-ipc FAIL "exit $rc: $(tail -2 "$DIR/feed.out" | tr '\n' ' ')" ;;
    esac
}

# ---- the run --------------------------------------------------------------------
echo "aegis GPU acceptance ($MODE): GPU $G of $(pyjson "print(len(d['gpus']), 'x', d['gpus'][$G]['name'] if $G < len(d['gpus']) else '?', '- driver', d['driver'] or 'unknown')" < "$DIR/probe0.json")"
if start_daemon; then
    check_telemetry
    e0=$(gpu_json "print(d['energy_j'])")
    LOAD=
    check_seen
    check_dcgm
    touch "$DIR/load.done"
    if [ -n "$LOAD" ]; then check_energy "$e0"; else result 5 energy FAIL "no job ran"; fi
    check_collocation
    check_oom
    stop_daemon
else
    for n in 1 2 6 5 3 4; do result $n aegisd FAIL "aegisd did not start"; done
fi
check_mps
check_mps_second
check_mps_lists
check_dcgm_one_pass
check_mig_under_dcgm
check_mig
check_feed
$HELPER summary "$DIR/results" "$SUMMARY" mode="$MODE" gpu="$G" \
    build="$BUILD" seconds=$((SECONDS - T0)) \
    driver="$(pyjson "print(d['driver'])" < "$DIR/probe0.json")"
read -r pass fail skip < <(pyjson "print(d['pass'], d['fail'], d['skip'])" < "$SUMMARY")
echo "aegis GPU acceptance: $pass PASS, $fail FAIL, $skip SKIP in $((SECONDS - T0)) s (summary: $SUMMARY)"
[ "$fail" = 0 ]
