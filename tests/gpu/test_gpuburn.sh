#!/bin/bash
# test_gpuburn.sh -- aegis-gpuburn without a GPU: its options, its exit
# where there is no driver, and, against the stand-in driver
# (stub_libcuda.c, whose log shows every allocation, launch and free),
# its duty cycle, its out-of-memory error and its clean exit.
#
# usage: test_gpuburn.sh GPUBURN STUB_LIBCUDA CASE
# Exit 0 pass, 1 fail.
set -u
BURN=$1 STUB=$2 CASE=$3
DIR=$(mktemp -d /tmp/aegis-gpuburn-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
export AEGIS_STUBCUDA_LOG=$DIR/cuda.log
unset CUDA_VISIBLE_DEVICES CUDA_MPS_PIPE_DIRECTORY \
      CUDA_MPS_ACTIVE_THREAD_PERCENTAGE CUDA_MPS_PINNED_DEVICE_MEM_LIMIT

fail() { echo "FAIL ($CASE): $*" >&2; cat "$DIR/err" "$DIR/cuda.log" >&2 2>/dev/null; exit 1; }
# Runs aegis-gpuburn on the stand-in driver; its exit status in $rc.
burn() { AEGIS_CUDA_LIBRARY=$STUB "$BURN" "$@" > "$DIR/out" 2> "$DIR/err"; rc=$?; }
# Lines of the driver's log matching $1.
logged() { grep -c -- "$1" "$DIR/cuda.log" 2>/dev/null; }
# burning N ARGS...: starts aegis-gpuburn ARGS... on the stand-in driver in
# the background ($pid) and waits until it has launched its kernel N times.
burning() {
    local n=$1 deadline=$((SECONDS + 20))
    shift
    AEGIS_CUDA_LIBRARY=$STUB "$BURN" "$@" > /dev/null 2> "$DIR/err" &
    pid=$!
    until [ "$(logged '^launch')" -ge "$n" ]; do
        kill -0 $pid 2>/dev/null || fail "ended after $(logged '^launch') launches, not $n"
        [ $SECONDS -lt $deadline ] || { kill $pid; fail "$(logged '^launch') launches, not $n"; }
        sleep 0.05
    done
}

case_usage() {
    "$BURN" --help | grep -q "^usage: aegis-gpuburn --mib M --seconds S" || fail "--help"
    for args in "" "--mib 10" "--seconds 1" "--mib 0 --seconds 1" \
                "--mib 10 --seconds 1 --smact 1.5" "--mib x --seconds 1" \
                "--mib 10 --seconds -1" "--mib 10 --seconds 1 --bogus" \
                "--mib 10 --seconds 1 --smact nan" "--mib 10 --seconds" \
                "--mib 10 --seconds 1 --until"; do
        burn $args
        [ "$rc" = 2 ] || fail "'$args': exit $rc, want 2"
        grep -q "^usage:" "$DIR/err" || fail "'$args': no usage on stderr"
    done
    [ ! -e "$DIR/cuda.log" ] || fail "bad usage reached the driver"
}

# No driver, a library that is not one, a driver that sees no GPU: each
# exits 77 and says why.
case_nodriver() {
    AEGIS_CUDA_LIBRARY=$DIR/no/libcuda.so.1 "$BURN" --mib 10 --seconds 1 \
        > "$DIR/out" 2> "$DIR/err"
    [ $? = 77 ] || fail "no driver: exit $?"
    grep -q "no CUDA driver: .*$DIR/no/libcuda.so.1" "$DIR/err" || fail "no driver: message"
    grep -q "^aegis-gpuburn: devices=- mps_pipe=- " "$DIR/out" || fail "first line"
    AEGIS_CUDA_LIBRARY=libc.so.6 "$BURN" --mib 10 --seconds 1 2> "$DIR/err" >/dev/null
    [ $? = 77 ] || fail "not a driver: exit"
    grep -q "libc.so.6 has no cuGetErrorName (not a CUDA driver" "$DIR/err" || fail "not a driver: message"
    AEGIS_STUBCUDA_DEVICES=0 burn --mib 10 --seconds 1
    [ "$rc" = 77 ] || fail "no GPU: exit $rc"
    grep -q "CUDA error: CUDA_ERROR_NO_DEVICE .*cuInit" "$DIR/err" || fail "no GPU: message"
}

# Two devices at SMACT 0.3 for 1 s: 1000 MiB on each, a spin kernel of
# 30 ms every 0.1 s on each (one warp per SM), everything freed.
case_duty() {
    local t0 t1
    t0=$(date +%s.%N)
    AEGIS_STUBCUDA_DEVICES=2 CUDA_VISIBLE_DEVICES=3,5 burn --mib 1000 --seconds 1 --smact 0.3
    t1=$(date +%s.%N)
    [ "$rc" = 0 ] || fail "exit $rc"
    [ "$(head -1 "$DIR/out")" = "aegis-gpuburn: devices=3,5 mps_pipe=- threads=- pinned=-" ] ||
        fail "first line: $(head -1 "$DIR/out")"
    for k in 0 1; do
        [ "$(logged "^alloc device=$k mib=1000 -> 0$")" = 1 ] || fail "alloc on $k"
        [ "$(logged "^free device=$k mib=1000$")" = 1 ] || fail "free on $k"
    done
    python3 - "$DIR/cuda.log" "$t0" "$t1" <<'PY' || fail "duty cycle"
import re, sys
spins = {0: [], 1: []}
for line in open(sys.argv[1]):
    m = re.match(r'launch device=(\d) grid=4x1x1 block=32x1x1 spin_ns=(\d+)$', line)
    if line.startswith('launch'):
        assert m, line
        spins[int(m.group(1))].append(int(m.group(2)))
wall = float(sys.argv[3]) - float(sys.argv[2])
for k, s in spins.items():
    busy = sum(s) / 1e9
    print('device', k, 'launches', len(s), 'busy', round(busy, 3), 's of', round(wall, 3))
    # Each 0.1 s period spins 0.3 of it but the last, cut short by the
    # job's end. A machine too loaded to keep the rhythm runs fewer
    # periods, never other ones: their number, the busy time and the wall
    # time are bounded on the side the job decides only.
    assert 1 <= len(s) <= 11, s
    assert all(x == 30_000_000 for x in s[:-1]) and 0 < s[-1] <= 30_000_000, s
    assert s[0] == 30_000_000 and busy <= 0.31, (s, busy)
assert wall >= 1.0, wall
PY
}

# SMACT 0 launches nothing; SMACT 1 spins the whole period.
case_smact_ends() {
    burn --mib 10 --seconds 0.3 --smact 0
    [ "$rc" = 0 ] && [ "$(logged '^launch')" = 0 ] || fail "smact 0: $rc, $(logged '^launch') launches"
    rm "$DIR/cuda.log"
    burn --mib 10 --seconds 0.3 --smact 1
    [ "$rc" = 0 ] && [ "$(logged 'spin_ns=100000000$')" -ge 2 ] || fail "smact 1"
}

# More than the device has: PyTorch's error, exit 1, nothing leaked (the
# stand-in exits 99 on a leak).
case_oom() {
    AEGIS_STUBCUDA_MIB=4096 burn --mib 5000 --seconds 5
    [ "$rc" = 1 ] || fail "exit $rc"
    grep -qx "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.88 GiB (GPU 0; 4.00 GiB total capacity; 0 bytes already allocated; 4.00 GiB free; 0 bytes reserved in total by PyTorch)" \
        "$DIR/err" || fail "OOM message"
    [ "$(logged '^launch')" = 0 ] || fail "ran after the OOM"
}

# --oom-over: runs half its time, then asks for as much again and fails
# with what it holds in the message.
case_oom_over() {
    local t0 t1
    t0=$(date +%s%N)
    AEGIS_STUBCUDA_MIB=4096 burn --mib 3000 --seconds 1 --oom-over
    t1=$(date +%s%N)
    [ "$rc" = 1 ] || fail "exit $rc"
    grep -q "Tried to allocate 2.93 GiB (GPU 0; 4.00 GiB total capacity; 2.93 GiB already allocated; 1.07 GiB free; 2.93 GiB reserved in total by PyTorch)" \
        "$DIR/err" || fail "OOM message"
    [ $(( (t1 - t0) / 1000000 )) -ge 450 ] || fail "failed before halfway"
    [ "$(logged '^launch')" -ge 4 ] || fail "did not run before its peak"
    [ "$(logged '^free device=0 mib=3000$')" = 1 ] || fail "first 3000 MiB not freed"
}

# SIGTERM while it runs: its memory freed, exit 143.
case_sigterm() {
    burning 1 --mib 100 --seconds 30
    kill -TERM $pid
    wait $pid
    rc=$?
    [ "$rc" = 143 ] || fail "exit $rc"
    [ "$(logged '^free device=0 mib=100$')" = 1 ] || fail "not freed"
}

# --until FILE: past its --seconds it burns on until FILE exists, then
# frees its memory and exits 0.
case_until() {
    burning 3 --mib 100 --seconds 0 --until "$DIR/go" # past its 0 s
    kill -0 $pid 2>/dev/null || fail "ended before its file"
    touch "$DIR/go"
    wait $pid
    rc=$?
    [ "$rc" = 0 ] || fail "exit $rc"
    [ "$(logged '^free device=0 mib=100$')" = 1 ] || fail "not freed"
}

# --oom-over with --until FILE: past halfway it burns at its first size
# until FILE exists, and only then asks for as much again (and fails).
case_oom_over_until() {
    AEGIS_STUBCUDA_MIB=4096 burning 3 --mib 3000 --seconds 0 --oom-over --until "$DIR/grow"
    [ "$(logged '^alloc')" = 1 ] || fail "grew before its file"
    touch "$DIR/grow"
    wait $pid
    rc=$?
    [ "$rc" = 1 ] || fail "exit $rc"
    grep -q "Tried to allocate 2.93 GiB (GPU 0; 4.00 GiB total capacity; 2.93 GiB already allocated" \
        "$DIR/err" || fail "OOM message"
    [ "$(logged '^free device=0 mib=3000$')" = 1 ] || fail "first 3000 MiB not freed"
}

"case_$CASE"
echo "ok: $CASE"
