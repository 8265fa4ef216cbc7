#!/bin/bash
# bench_pipeline_e2e.sh AEGISD AEGIS TESTNVML [RUNS] -- the end-to-end goal
# of pipelines (issue 28): Modyn's smallest integration test (20 CSV
# samples, a trigger every 2 samples, at most one trigger, a tiny model on
# the CPU) from `aegis pipeline start` to the stored model, against the
# same training command run alone on the same training set, in the same
# run. Goal: ratio <= 2. Each figure is the median of RUNS (3).
#
# The pipeline's overhead is the supervisor's start (aegisd's next tick
# at most), the trigger and the training set, the training job's
# placement (the next tick at most) and its wait.
set -eu
AEGISD=$1 AEGIS=$2 NVML=$3 RUNS=${4:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
TMP=$(mktemp -d)
export AEGIS_SOCKET=$TMP/aegis.sock AEGIS_TEST_GPU_DIR=$TMP/gpu
export AEGIS_STATE_HOME=$TMP/home
mkdir -p "$TMP/gpu" && mkdir -p -m 700 "$AEGIS_STATE_HOME"
"$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$TMP/state" --nvml-library "$NVML"
trap 'kill $(cat "$TMP/state/aegisd.lock") 2>/dev/null; rm -rf "$TMP"' EXIT
# The 20 samples, registered: a CSV file of "timestamp,label" lines and
# one pass of the dataset's watcher.
for i in $(seq 0 19); do echo "$((1700000000 + i)),$((i % 2))"; done > "$TMP/tiny.csv"
mkdir "$TMP/data" && mv "$TMP/tiny.csv" "$TMP/data/"
"$AEGIS" dataset add tiny_dataset --dir "$TMP/data" --format csv \
    --ts-column 0 --label-column 1 > /dev/null
"$AEGIS" dataset watch tiny_dataset --once --quiet > /dev/null

now() { date +%s.%N; }
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

pipeline_run() { # $1: the run's pipeline name; prints its seconds
    cat > "$TMP/$1.yaml" <<YAML
pipeline: {name: $1, maximum_triggers: 1}
data: {dataset_id: tiny_dataset}
trigger: {id: DataAmountTrigger, num_samples: 2}
selection_strategy: {name: NewDataStrategy, tail_triggers: 0}
training:
  command: [$PY, $HERE/tiny_train.py]
  batch_size: 2
  mem: 1g
YAML
    local model=$AEGIS_STATE_HOME/pipelines/$1/models/0.model t0
    t0=$(now)
    "$AEGIS" pipeline start "$TMP/$1.yaml" > /dev/null
    until [ -e "$model" ]; do sleep 0.01; done
    echo "$(now) - $t0" | bc
}

alone_run() { # the command alone on run p0's training set
    local t0; t0=$(now)
    AEGIS_TRAINSET=$AEGIS_STATE_HOME/pipelines/p0/trainsets/0.tset \
    AEGIS_MODEL_OUT=$TMP/alone.model AEGIS_BATCH_SIZE=2 \
        "$PY" "$HERE/tiny_train.py"
    echo "$(now) - $t0" | bc
}

for r in $(seq 0 $((RUNS - 1))); do pipeline_run "p$r"; done > "$TMP/pipe.txt"
for r in $(seq "$RUNS"); do alone_run; done > "$TMP/alone.txt"
pipe=$(median < "$TMP/pipe.txt") alone=$(median < "$TMP/alone.txt")
awk -v p="$pipe" -v a="$alone" -v n="$RUNS" 'BEGIN {
    printf "pipeline end to end, Modyn'"'"'s smallest test (median of %d):\n", n
    printf "  training command alone          %.2f s\n", a
    printf "  aegis pipeline start -> model   %.2f s\n", p
    printf "  ratio %.2f (goal <= 2)\n", p / a
}'
