#!/bin/bash
# bench_pipeline_eval.sh AEGISD AEGIS TESTNVML -- the evaluation goal of
# issue 29: 20 models of a replayed pipeline evaluated on 50 sliding
# windows, each overlapping the next by half, against one inference pass
# per model over the union of the windows (the same command run alone on
# those samples), in the same run. Goal: ratio <= 3.
#
# The stream: `aegis dataset gen tabular --format csv` (a timestamp a
# sample), 20,000 samples, one a minute.
# The pipeline: a trigger every 1,000 samples, a linear model
# (linear_model.py, numpy), and one after_pipeline handler of
# PeriodicEvalStrategy windows. aegis runs one evaluation job a model
# over the windows' samples, each once, and cuts the metrics per window;
# Modyn before its batching ran one per model and window: that cost is
# estimated from 5 such runs and printed beside.
set -eu
AEGISD=$1 AEGIS=$2 NVML=$3
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
TMP=$(mktemp -d)
export AEGIS_SOCKET=$TMP/aegis.sock AEGIS_TEST_GPU_DIR=$TMP/gpu
export AEGIS_STATE_HOME=$TMP/home PYTHONPATH=$HERE/../../python
mkdir -p "$TMP/gpu" && mkdir -p -m 700 "$AEGIS_STATE_HOME"
"$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$TMP/state" --nvml-library "$NVML"
trap 'kill $(cat "$TMP/state/aegisd.lock") 2>/dev/null; rm -rf "$TMP"' EXIT
T0=1700000000
"$AEGIS" dataset gen tabular --out "$TMP/data" --samples 20000 --format csv \
    --start-ts $T0 > /dev/null
add=$($PY -c "import json; a = json.load(open('$TMP/data/drift.json'))['dataset_add']; print(a if isinstance(a, str) else ' '.join(a))")
"$AEGIS" dataset add stream --dir "$TMP/data" $add > /dev/null
"$AEGIS" dataset watch stream --once --quiet > /dev/null
# 50 windows of W seconds every W/2 cover the 20,000 minutes: 25.5 W
W=47000
cat > "$TMP/p.yaml" <<YAML
pipeline: {name: p}
data: {dataset_id: stream}
trigger: {id: DataAmountTrigger, num_samples: 1000}
selection_strategy: {name: NewDataStrategy, tail_triggers: 0}
training: {command: [$PY, $HERE/linear_model.py, train]}
evaluation:
  command: [$PY, $HERE/linear_model.py, predict]
  handlers:
    - {name: sliding, execution_time: after_pipeline, models: matrix,
       strategy: {type: PeriodicEvalStrategy, every: $((W / 2))s,
                  start_timestamp: $T0, end_timestamp: $((T0 + 49 * W / 2)),
                  interval: "[+0s;+${W}s)"}}
  datasets: [{dataset_id: stream, metrics: [{name: Accuracy}]}]
YAML
"$AEGIS" pipeline replay "$TMP/p.yaml" --from $T0 --to $((T0 + 20000 * 60)) > /dev/null
# The evaluation phase, as aegisd recorded it: the first evaluation job's
# submit to the last one's end (they run one after another).
"$AEGIS" ls --json --all | $PY -c "
import json, sys
jobs = [j for j in json.load(sys.stdin) if ':w' in j['name']]
assert len(jobs) == 20, len(jobs)
print(max(j['finished'] for j in jobs) - min(j['submitted'] for j in jobs))
" > "$TMP/aegis.txt"
evals=$AEGIS_STATE_HOME/pipelines/p.replay/evals
$PY - "$evals" <<'PY'
import json, os, sys
docs = [json.load(open(os.path.join(sys.argv[1], f)))
        for f in os.listdir(sys.argv[1]) if f.endswith(".end.json")]
assert len(docs) == 20 and all(d["state"] == "done" for d in docs), docs
assert all(len(d["results"]) == 50 for d in docs)
PY
now() { date +%s.%N; }
# The reference: one pass per model over the union of the windows (every
# sample the windows hold), the command alone.
$PY "$HERE/window_keys.py" "$AEGIS_STATE_HOME/datasets/stream" $T0 \
    $((T0 + 49 * W / 2 + W)) "$TMP/union.tset"
t0=$(now)
for m in $(seq 0 19); do
    AEGIS_EVAL_KEYS=$TMP/union.tset AEGIS_EVAL_OUT=$TMP/ref.pred \
    AEGIS_MODEL=$AEGIS_STATE_HOME/pipelines/p.replay/models/$m.model \
    AEGIS_DATASET=$AEGIS_STATE_HOME/datasets/stream \
        $PY "$HERE/linear_model.py" predict
done
ref=$(echo "$(now) - $t0" | bc)
# Modyn's way before batching: a process per model and window, 5 timed.
$PY "$HERE/window_keys.py" "$AEGIS_STATE_HOME/datasets/stream" $T0 \
    $((T0 + W)) "$TMP/one.tset"
t0=$(now)
for r in 1 2 3 4 5; do
    AEGIS_EVAL_KEYS=$TMP/one.tset AEGIS_EVAL_OUT=$TMP/one.pred \
    AEGIS_MODEL=$AEGIS_STATE_HOME/pipelines/p.replay/models/0.model \
    AEGIS_DATASET=$AEGIS_STATE_HOME/datasets/stream \
        $PY "$HERE/linear_model.py" predict
done
one=$(echo "($(now) - $t0) / 5" | bc -l)
awk -v a="$(cat "$TMP/aegis.txt")" -v r="$ref" -v o="$one" 'BEGIN {
    printf "evaluating 20 models on 50 sliding windows (each overlapping the next by half):\n"
    printf "  one pass per model over the windows'"'"' union, alone   %7.2f s\n", r
    printf "  aegis: one job per model, metrics per window      %7.2f s\n", a
    printf "  ratio %.2f (goal <= 3)\n", a / r
    printf "  one process per model and window (estimated)      %7.2f s (%.1fx)\n", o * 1000, o * 1000 / r
}'
