#!/bin/bash
# device_run.sh -- the acceptance run on a borrowed GPU machine, from a
# fresh copy of the repository, in one command with a bounded time:
#
#   bash tests/gpu/device_run.sh      (results under $OUT, default ./out-gpu)
#
# It says what the machine has, builds what it can there, runs
# aegis-gpuburn alone against nvidia-smi's view, then tests/gpu/
# acceptance.sh on GPU 0. Such a machine may lack the -dev packages aegisd
# builds against (jansson, sqlite3, yaml, libuv) and cannot fetch them:
# then it uses the binaries tests/gpu/device_pack.sh put in .device-build
# (carried along), else it builds aegis-gpuburn alone (it needs only a C
# compiler) and the acceptance run is reported as not run.
#
# $OUT afterwards: env.txt (machine, driver, tools found), build.log,
# gpuburn.txt (PASS/FAIL lines), acceptance.log, gpu-acceptance.json,
# logs.tar.gz (aegisd's and the jobs' logs). Exit 0 when nothing failed.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/out-gpu}
BUILD=$ROOT/build-device
PACKED=${AEGIS_DEVICE_PREBUILT:-$ROOT/.device-build}
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
mkdir -p "$OUT"
cd "$ROOT" || exit 1
status=0

# ---- what the machine has -----------------------------------------------------
{
    echo "date: $(date -u +%FT%TZ)  host: $(uname -srm)"
    nvidia-smi --query-gpu=index,name,memory.total,driver_version,mig.mode.current \
        --format=csv,noheader 2>&1
    for tool in cmake cc gcc pkg-config python3 nvidia-cuda-mps-control ptxas; do
        printf '%-24s %s\n' "$tool" "$(command -v $tool || echo -)"
    done
    for lib in jansson sqlite3 yaml-0.1 libuv cmocka; do
        printf '%-24s %s\n' "$lib" "$(pkg-config --modversion $lib 2>/dev/null || echo -)"
    done
    ldconfig -p 2>/dev/null | grep -E 'libcuda\.so\.1 |libnvidia-ml\.so\.1 |libdcgm\.so\.[34] ' |
        sed 's/^\s*/found /'
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# ---- build ----------------------------------------------------------------------
# The full build where aegisd's libraries are there; else the packed one.
have_deps() { pkg-config --exists jansson sqlite3 yaml-0.1 libuv 2>/dev/null; }
BIN=
if command -v cmake > /dev/null && have_deps; then
    tests=ON
    pkg-config --exists cmocka 2>/dev/null || [ -e /usr/include/cmocka.h ] || tests=OFF
    if timeout 300 cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            -DAEGIS_TESTS=$tests > "$OUT/build.log" 2>&1 &&
       timeout 300 cmake --build "$BUILD" -j"$(nproc)" --target aegisd aegis \
            aegis-gpuburn $([ $tests = ON ] && echo test_feed_gpu) \
            >> "$OUT/build.log" 2>&1; then
        BIN=$BUILD
    fi
fi
if [ -z "$BIN" ] && [ -x "$PACKED/src/daemon/aegisd" ]; then
    echo "build: using the packed binaries in $PACKED" | tee -a "$OUT/build.log"
    BIN=$PACKED
    export LD_LIBRARY_PATH=$PACKED/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
BURN=${BIN:+$BIN/src/testgpu/aegis-gpuburn}
if [ -z "$BURN" ] || [ ! -x "$BURN" ]; then
    # aegis-gpuburn alone: a C compiler and the PTX made into a header
    echo "build: aegis-gpuburn alone" | tee -a "$OUT/build.log"
    mkdir -p "$BUILD/gen"
    BURN=$BUILD/aegis-gpuburn
    { if command -v cmake > /dev/null; then
          cmake -DIN=src/testgpu/gpuburn_spin.ptx -DOUT="$BUILD/gen/gpuburn_ptx.h" \
                -DNAME=gpuburn_spin_ptx -P src/testgpu/embed_text.cmake
      else
          python3 -c 'import json, sys
print("static const char gpuburn_spin_ptx[] = %s;" % json.dumps(open(sys.argv[1]).read()))' \
              src/testgpu/gpuburn_spin.ptx > "$BUILD/gen/gpuburn_ptx.h"
      fi &&
      cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I"$BUILD/gen" -Isrc/testgpu \
         src/testgpu/gpuburn.c src/testgpu/jobargs.c -ldl -o "$BURN"
    } >> "$OUT/build.log" 2>&1 || { echo "build: FAIL (build.log)"; status=1; }
fi

# ---- aegis-gpuburn against nvidia-smi -------------------------------------------
# A 2000 MiB job at SMACT 0.5 for 8 s must show in nvidia-smi's process
# list with its memory and load the GPU about half the time; asking for
# more than the GPU has must fail with PyTorch's OOM error and exit 1.
burn_check() {
    local total pid rc util=0 n=0 mem=0 u m
    total=$(nvidia-smi -i 0 --query-gpu=memory.total --format=csv,noheader,nounits | tr -d ' ')
    CUDA_VISIBLE_DEVICES=0 "$BURN" --mib 2000 --seconds 8 --smact 0.5 > "$TMPD/burn.out" 2>&1 &
    pid=$!
    sleep 2
    for i in 1 2 3 4 5; do
        u=$(nvidia-smi -i 0 --query-gpu=utilization.gpu --format=csv,noheader,nounits | tr -d ' ')
        m=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits |
            awk -F', *' -v p=$pid '$1 == p {print $2}')
        util=$((util + ${u:-0})) n=$((n + 1)) mem=${m:-$mem}
        sleep 1
    done
    wait $pid
    rc=$?
    local figure="exit $rc, pid $pid used ${mem:-0} MiB in nvidia-smi, utilization $((util / n))% (asked 50%)"
    if [ $rc = 0 ] && [ "${mem:-0}" -ge 2000 ] && [ $((util / n)) -ge 25 ] && [ $((util / n)) -le 80 ]; then
        echo "PASS gpuburn load: $figure"
    else
        echo "FAIL gpuburn load: $figure: $(tail -2 "$TMPD/burn.out")"
    fi
    CUDA_VISIBLE_DEVICES=0 "$BURN" --mib $((total + 1024)) --seconds 1 > /dev/null 2> "$TMPD/burn-oom.err"
    rc=$?
    if [ $rc = 1 ] && grep -q "CUDA out of memory. Tried to allocate" "$TMPD/burn-oom.err"; then
        echo "PASS gpuburn oom: exit 1, $(grep -o 'Tried to allocate[^;]*;[^;]*' "$TMPD/burn-oom.err")"
    else
        echo "FAIL gpuburn oom: exit $rc: $(tail -2 "$TMPD/burn-oom.err")"
    fi
}
if [ -x "$BURN" ]; then
    timeout 60 bash -c "$(declare -f burn_check); TMPD='$TMPD' BURN='$BURN' burn_check" 2>&1 |
        tee "$OUT/gpuburn.txt"
    grep -q '^FAIL' "$OUT/gpuburn.txt" && status=1
fi

# ---- the acceptance run -------------------------------------------------------------
if [ -n "$BIN" ]; then
    AEGIS_GPU_TEST_SUMMARY=$OUT/gpu-acceptance.json \
    AEGIS_GPU_TEST_KEEP=$OUT/logs PYTHONUNBUFFERED=1 \
        timeout -k 10 300 bash tests/gpu/acceptance.sh "$BIN" 2>&1 |
        tee "$OUT/acceptance.log"
    rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] || status=1
    [ "$rc" = 124 ] && echo "acceptance: stopped after 300 s" | tee -a "$OUT/acceptance.log"
    [ -d "$OUT/logs" ] && tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
else
    echo "acceptance: not run: no aegisd (its libraries are missing here and no" \
         "packed build was carried: tests/gpu/device_pack.sh)" | tee "$OUT/acceptance.log"
    status=1
fi
exit $status
