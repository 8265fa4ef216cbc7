#!/bin/sh
# bench_users.sh AEGIS [JOBS] [RUNS] [USERS...] -- the cost of fair share:
# aegis-plus replaying one trace whose jobs belong to many users, against
# the same jobs under one user, in the same run. Prints both times
# (medians of RUNS interleaved runs, default 3) and their ratio for each
# user count (default 2000 4000 20000; goal: ratio <= 10).
#
# gen-trace draws the jobs from the seed alone and their users after, so
# every trace holds the same jobs at the same times; 2000 jobs arriving
# every 10 s on 8 GPUs keep hundreds waiting, each of a different user
# when the users are many. A pass merges the users' queues by priority:
# its cost grows with the users that have jobs, and before it used a heap
# it grew with all of them at every job it reached (docs/benchmarks.md).
set -eu
AEGIS=$1
JOBS=${2:-2000}
RUNS=${3:-3}
shift $(($# < 3 ? $# : 3))
USERS=${*:-2000 4000 20000}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# seconds USERS: one replay of the trace of USERS users, its wall time.
seconds() {
    start=$(date +%s.%N)
    "$AEGIS" sim --trace "$TMP/u$1.csv" --policy aegis-plus --gpus 8 \
        --quiet >/dev/null
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
}
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

printf 'jobs            %d on 8 GPUs, aegis-plus\n' "$JOBS"
printf 'runs            %d of each, interleaved; medians below\n' "$RUNS"
for n in 1 $USERS; do
    "$AEGIS" gen-trace --jobs "$JOBS" --seed 1 --mean-gap-s 10 \
        --users "$n" >"$TMP/u$n.csv"
done
for n in $USERS; do
    : >"$TMP/one.times"
    : >"$TMP/many.times"
    i=0
    while [ $i -lt "$RUNS" ]; do
        seconds 1 >>"$TMP/one.times"
        seconds "$n" >>"$TMP/many.times"
        i=$((i + 1))
    done
    one=$(median <"$TMP/one.times")
    many=$(median <"$TMP/many.times")
    printf '%6d users    %.3f s against %.3f s with 1 user: ratio %.2f (goal <= 10)\n' \
        "$n" "$many" "$one" \
        "$(awk -v a="$one" -v b="$many" 'BEGIN { print b / a }')"
done
