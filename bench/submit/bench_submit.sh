#!/bin/bash
# bench_submit.sh AEGISD AEGIS TESTNVML [N] -- the cost of one submit,
# aegis against task-spooler (tsp) in the same run, and the time of one
# array submit of 10,000 jobs.
#
# Both queues get N one-job submits, each a fresh client process, as a
# user types them. aegisd commits each submit durably (SQLite WAL,
# an fdatasync of the log before the answer) before it answers; tsp keeps its
# queue in memory. aegisd's GPUs are drained first so no job runs and the
# figure is the submit path alone; tsp runs its `true` jobs meanwhile (it
# cannot be held), which costs it little. Goals: ratio <= 1.5, array < 1 s.
set -eu
AEGISD=$1 AEGIS=$2 NVML=$3 N=${4:-500}
command -v tsp >/dev/null || { echo "bench-submit: tsp (task-spooler) not installed"; exit 77; }
TMP=$(mktemp -d)
export AEGIS_SOCKET=$TMP/aegis.sock AEGIS_TEST_GPU_DIR=$TMP/gpu
export TS_SOCKET=$TMP/tsp.sock TS_SAVELIST=$TMP/tsp.list TMPDIR=$TMP
mkdir "$TMP/gpu"
"$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$TMP/state" --nvml-library "$NVML"
trap 'kill $(cat "$TMP/state/aegisd.lock") 2>/dev/null; tsp -K 2>/dev/null; rm -rf "$TMP"' EXIT
for g in 0 1 2; do "$AEGIS" drain $g >/dev/null; done

now() { date +%s.%N; }
t0=$(now); for i in $(seq "$N"); do tsp true >/dev/null; done; t1=$(now)
for i in $(seq "$N"); do "$AEGIS" submit -- true >/dev/null; done; t2=$(now)
seq 10000 | sed 's/^/echo job /' > "$TMP/array.txt"
t3=$(now); "$AEGIS" submit --array "$TMP/array.txt" | tail -1 >/dev/null; t4=$(now)

awk -v n="$N" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" -v t4="$t4" 'BEGIN {
    tsp = (t1 - t0) / n * 1000; ae = (t2 - t1) / n * 1000
    printf "submit, %d one-job submits each:\n", n
    printf "  tsp    %.3f ms per submit\n", tsp
    printf "  aegis  %.3f ms per submit (durable commit)\n", ae
    printf "  ratio  %.2f (goal <= 1.5)\n", ae / tsp
    printf "array submit of 10,000 jobs: %.3f s (goal < 1 s)\n", t4 - t3
}'
