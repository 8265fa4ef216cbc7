#!/bin/sh
# bench_sim.sh AEGIS [JOBS] [RUNS] -- times `aegis sim` on a big synthetic
# trace against awk summing one column of the same file, in the same run,
# and prints both times (medians of RUNS, default 5) and their ratio (goal:
# at most 3). One more run, with --check (core_check() after every event),
# prints what the check costs: a line of its own, not in the ratio.
#
# The cluster is 128 servers of 8 GPUs (1024 GPUs). The catalog's mean job
# needs about 2164 GPU-seconds, so arrivals every 2.2 s ask for
# 2164 / 2.2 = 984 GPUs: 96% of the cluster under exclusive allocation,
# which collocation brings down, so the queue stays bounded.
set -eu
AEGIS=$1
JOBS=${2:-1000000}
RUNS=${3:-5}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
TRACE=$TMP/trace.csv

"$AEGIS" gen-trace --jobs "$JOBS" --seed 1 --mean-gap-s 2.2 >"$TRACE"

# seconds FILE CMD...: runs CMD, its stdout to FILE, and prints wall time.
seconds() {
    out=$1
    shift
    start=$(date +%s.%N)
    "$@" >"$out"
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
}

# Interleaved runs, the median of each: one run of either can be off by a
# third on a shared machine.
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
: >"$TMP/awk.times"
: >"$TMP/sim.times"
i=0
while [ $i -lt "$RUNS" ]; do
    seconds "$TMP/awk.out" awk -F, '{s+=$1} END {print s}' "$TRACE" \
        >>"$TMP/awk.times"
    seconds "$TMP/sim.out" "$AEGIS" sim --servers 128 --gpus 8 \
        --policy aegis --trace "$TRACE" --quiet >>"$TMP/sim.times"
    i=$((i + 1))
done
check_s=$(seconds "$TMP/check.out" "$AEGIS" sim --servers 128 --gpus 8 \
    --policy aegis --trace "$TRACE" --quiet --check)
awk_s=$(median <"$TMP/awk.times")
sim_s=$(median <"$TMP/sim.times")
printf 'jobs            %d\n' "$JOBS"
printf 'runs            %d of each, interleaved; medians below\n' "$RUNS"
printf 'awk             %.3f s  (%s)\n' "$awk_s" "$(tr '\n' ' ' <"$TMP/awk.times")"
printf 'aegis sim       %.3f s  (%s)\n' "$sim_s" "$(tr '\n' ' ' <"$TMP/sim.times")"
printf 'ratio           %.2f (goal <= 3)\n' \
    "$(awk -v a="$awk_s" -v s="$sim_s" 'BEGIN { print s / a }')"
printf 'with --check    %.3f s  (one run: %.1f times aegis sim)\n' "$check_s" \
    "$(awk -v c="$check_s" -v s="$sim_s" 'BEGIN { print c / s }')"
