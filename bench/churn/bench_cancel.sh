#!/bin/bash
# bench_cancel.sh AEGISD AEGIS TESTNVML [N] -- one `aegis cancel` of N
# queued jobs (50,000 by default; its GPUs drained, so none runs), and
# root's `aegis gpus` request meanwhile: prints how long the cancel took,
# and the slowest `gpus` answer during it against the p99 with aegisd
# idle (goal: other clients are not frozen; the ratio stays small).
set -eu
AEGISD=$1 AEGIS=$2 NVML=$3 N=${4:-50000}
TMP=$(mktemp -d)
export AEGIS_SOCKET=$TMP/aegis.sock AEGIS_TEST_GPU_DIR=$TMP/gpu
export AEGIS_TEST_GPUS=3x40960 AEGIS_NVML_LIBRARY=$NVML
mkdir "$TMP/gpu"
"$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$TMP/state"
trap 'kill $(cat "$TMP/state/aegisd.lock") 2>/dev/null; rm -rf "$TMP"' EXIT
gpus_times() {
    python3 "$(dirname "$0")/gpus_latency.py" "$AEGIS_SOCKET" "$1" "$TMP/stop"
    rm -f "$TMP/stop"
}
gpus_times "$TMP/idle.txt" & sleep 5; touch "$TMP/stop"; wait
for g in 0 1 2; do "$AEGIS" drain $g > /dev/null; done
seq 10000 | sed 's/.*/true/' > "$TMP/array.txt"
for i in $(seq $(((N + 9999) / 10000))); do
    "$AEGIS" submit --array "$TMP/array.txt" >> "$TMP/ids.txt"
done
head -n "$N" "$TMP/ids.txt" > "$TMP/cancel.txt"
gpus_times "$TMP/busy.txt" &
t0=$(date +%s.%N)
"$AEGIS" cancel $(cat "$TMP/cancel.txt") > /dev/null
t1=$(date +%s.%N)
touch "$TMP/stop"; wait
p99=$(sort -n "$TMP/idle.txt" | awk '{ v[NR] = $1 } END { i = int(NR * 0.99); if (i < 1) i = 1; print v[i] }')
worst=$(sort -n "$TMP/busy.txt" | tail -1)
awk -v n="$N" -v t0="$t0" -v t1="$t1" -v p="$p99" -v worst="$worst" \
    -v ni="$(wc -l < "$TMP/idle.txt")" -v nb="$(wc -l < "$TMP/busy.txt")" 'BEGIN {
    printf "cancel of %d queued jobs: %.2f s\n", n, t1 - t0
    printf "  aegis gpus: idle p99 %.2f ms (%d requests), slowest during the cancel %.2f ms (%d requests)\n", p, ni, worst, nb
    printf "  ratio %.1f\n", worst / p
}'
