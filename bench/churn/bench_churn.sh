#!/bin/bash
# bench_churn.sh AEGISD AEGIS TESTNVML [N] [GPUS] [FLOOR_SERVER] --
# short-job churn: N `true` jobs through aegisd on GPUS test GPUs, against
# task-spooler (tsp) running the same N jobs GPUS at a time, in the same
# run.
#
# Prints two ratios:
#   - root's `aegis gpus` p99 while the jobs churn, against its p99 with
#     aegisd idle (goal <= 3): starting and ending jobs must not stall the
#     answers to other clients;
#   - jobs per second of aegisd against tsp's (goal >= 1).
# With FLOOR_SERVER (the build's churn_floor_server), the same client asks
# that server, which does no work, after each aegisd request during the
# churn (each request after a pause of its own), and the script prints
# its p99 against aegisd's idle one: the
# first ratio as it would be if aegisd answered as fast as a server doing
# nothing, so the least this machine allows while the jobs hold its cores.
# Each is timed from its first submit to its last job's end: aegisd gets
# one array submit, tsp one `tsp true` per job (a tsp client is its job's
# runner: it cannot take them any other way, nor hold them back, since it
# keeps a connection per queued job).
# N defaults to 20,000; a smaller N suits a slow or shared machine.
set -eu
AEGISD=$1 AEGIS=$2 NVML=$3 N=${4:-20000} GPUS=${5:-8} FLOOR=${6:-}
command -v tsp >/dev/null || { echo "bench-churn: tsp (task-spooler) not installed"; exit 77; }
TMP=$(mktemp -d)
export AEGIS_SOCKET=$TMP/aegis.sock AEGIS_TEST_GPU_DIR=$TMP/gpu
export AEGIS_TEST_GPUS=${GPUS}x40960 AEGIS_NVML_LIBRARY=$NVML
export TS_SOCKET=$TMP/tsp.sock TS_SAVELIST=$TMP/tsp.list TMPDIR=$TMP
mkdir "$TMP/gpu"
# as aegisd.service runs it (Nice=-5; its jobs run at the default), where
# allowed: nice runs it anyway otherwise
nice -n -5 "$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$TMP/state"
trap 'kill $(cat "$TMP/state/aegisd.lock") $floor_pid 2>/dev/null; tsp -K 2>/dev/null; rm -rf "$TMP"' EXIT
floor_pid=
ref=()
if [ -n "$FLOOR" ]; then
    # at aegisd's priority, answering as large an answer as its `gpus`
    nice -n -5 "$FLOOR" "$TMP/floor.sock" 2116 & floor_pid=$!
    ref=("$TMP/floor.sock" "$TMP/floor.txt")
    while [ ! -S "$TMP/floor.sock" ]; do
        kill -0 "$floor_pid" || { echo "bench-churn: $FLOOR did not start"; exit 1; }
        sleep 0.05
    done
fi

now() { date +%s.%N; }
# gpus_times NAME [REF...]: times root's `aegis gpus` request (ms, one a
# line) into $TMP/NAME.txt, and with REF (the floor server's socket and a
# file) that server's answer to the same request after each, until
# $TMP/stop exists, then removes it.
gpus_times() {
    local name=$1; shift
    # a higher priority where allowed (nice runs it anyway otherwise): on
    # a loaded machine the client is starved between and inside requests
    nice -n -5 python3 "$(dirname "$0")/gpus_latency.py" "$AEGIS_SOCKET" "$TMP/$name.txt" "$TMP/stop" "$@"
    rm -f "$TMP/stop"
}
# nearest rank (ceil(0.99 n)): with few samples it is the slowest, never
# one below it (with 7 samples, rank 6 hid a 23.9 s wait)
p99() { sort -n "$1" | awk '{ v[NR] = $1 } END { i = int(NR * 0.99); if (i < NR * 0.99) i++; if (i < 1) i = 1; printf "%.2f", v[i] }'; }

# aegisd idle: as many samples as fit in 10 s
gpus_times idle & sampler=$!; sleep 10; touch "$TMP/stop"; wait "$sampler"

seq "$N" | sed 's/.*/true/' > "$TMP/array.txt"
gpus_times busy "${ref[@]}" & sampler=$!
t0=$(now)
"$AEGIS" submit --array "$TMP/array.txt" > "$TMP/ids.txt"
# first come, first served: the last id ends last but for GPUS - 1
"$AEGIS" wait "$(tail -1 "$TMP/ids.txt")" > /dev/null || true
split -l 1000 "$TMP/ids.txt" "$TMP/wait."
for f in "$TMP"/wait.*; do "$AEGIS" wait $(cat "$f") >> "$TMP/ends.txt" || true; done
t1=$(now)
touch "$TMP/stop"; wait "$sampler"
failed=$(awk '$2 != "done"' "$TMP/ends.txt" | wc -l)
floor=0
[ -z "$FLOOR" ] || floor=$(p99 "$TMP/floor.txt")

tsp -S "$GPUS" > /dev/null
t2=$(now)
for i in $(seq "$N"); do last=$(tsp true); done
tsp -w "$last" > /dev/null 2>&1 || true
t3=$(now)

awk -v n="$N" -v g="$GPUS" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" \
    -v idle="$(p99 "$TMP/idle.txt")" -v busy="$(p99 "$TMP/busy.txt")" \
    -v ni="$(wc -l < "$TMP/idle.txt")" -v nb="$(wc -l < "$TMP/busy.txt")" \
    -v failed="$failed" -v floor="$floor" 'BEGIN {
    ae = n / (t1 - t0); ts = n / (t3 - t2)
    printf "churn: %d `true` jobs on %d test GPUs (%d not done)\n", n, g, failed
    printf "  aegis gpus p99: idle %.2f ms (%d requests), churning %.2f ms (%d requests)\n", idle, ni, busy, nb
    printf "  ratio %.2f (goal <= 3)\n", busy / idle
    if (floor > 0)
        printf "  a server doing no work, asked alike: churning %.2f ms, %.2f x aegisd idle (the least this machine allows); aegisd %.2f x it\n", floor, floor / idle, busy / floor
    printf "  aegisd %.1f jobs/s (%.1f s), tsp -S %d %.1f jobs/s (%.1f s)\n", ae, t1 - t0, g, ts, t3 - t2
    printf "  ratio %.2f (goal >= 1)\n", ae / ts
}'
