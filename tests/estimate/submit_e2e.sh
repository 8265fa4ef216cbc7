#!/bin/bash
# submit_e2e.sh AEGISD AEGIS TESTNVML -- `aegis submit --model` and a spec's
# `model:` key send aegis's memory estimate as the job's mem_mib, which the
# daemon's aegis-est policy places on; a bad description is refused (exit
# 2) before anything reaches the daemon. Exit 0 pass, 1 fail.
set -u
AEGISD=$1 AEGIS=$2 NVML=$3
DIR=$(mktemp -d /tmp/aegis-est-e2e-XXXXXX)
export AEGIS_SOCKET=$DIR/aegis.sock AEGIS_TEST_GPUS=3x40960
export AEGIS_TEST_GPU_DIR=$DIR/gpu AEGIS_NVML_LIBRARY=$NVML
mkdir "$DIR/gpu" "$DIR/models"
fail() { echo "FAIL: $*" >&2; cat "$DIR/state/aegisd.log" >&2 2>/dev/null; exit 1; }
cleanup() {
    local p; p=$(cat "$DIR/state/aegisd.lock" 2>/dev/null)
    [ -n "$p" ] && [ "$(cat /proc/$p/comm 2>/dev/null)" = aegisd ] && kill "$p"
    rm -rf "$DIR"
}
trap cleanup EXIT
# and if it is killed before that trap runs (SIGKILL: ctest's TIMEOUT)
bash "$(dirname "$0")/../daemon/e2e_reap.sh" --detach $$ "$DIR" "$AEGIS_SOCKET"

cat >"$DIR/models/m.json" <<'JSON'
{"format": "aegis-model/1", "model": "mlp", "batch_size": 256,
 "optimizer": "adam", "precision": "fp32", "input_elements": 4096,
 "layers": [{"type": "Linear", "activations": 4096, "params": 16781312},
            {"type": "ReLU", "activations": 4096, "params": 0},
            {"type": "Linear", "activations": 10, "params": 40970}]}
JSON
want=$("$AEGIS" estimate --json "$DIR/models/m.json" | python3 -c \
    'import json,sys; print(json.load(sys.stdin)["estimates"]["aegis"]["estimate_mib"])') ||
    fail "aegis estimate"

# Bad descriptions are refused before the daemon is asked (none runs yet).
sed 's/"adam"/"lamb"/' "$DIR/models/m.json" >"$DIR/models/bad.json"
"$AEGIS" submit --model "$DIR/models/bad.json" -- true 2>"$DIR/err"
[ $? -eq 2 ] || fail "--model with a bad description: not exit 2"
grep -q "bad.json: optimizer: unknown value 'lamb'" "$DIR/err" || fail "no message"
printf 'command: "true"\nmodel: models/bad.json\n' >"$DIR/bad.yaml"
"$AEGIS" submit "$DIR/bad.yaml" 2>"$DIR/err"
[ $? -eq 2 ] || fail "spec with a bad model: not exit 2"
grep -q "models/bad.json: optimizer" "$DIR/err" || fail "no spec message"
# an estimate over what a job may ask is refused naming the file (it was
# cut to 1 TiB without a word)
sed 's/"params": 16781312/"params": 300000000000/' \
    "$DIR/models/m.json" >"$DIR/models/huge.json"
"$AEGIS" submit --model "$DIR/models/huge.json" -- true 2>"$DIR/err"
[ $? -eq 2 ] || fail "--model over 1 TiB: not exit 2"
grep -q "huge.json: its estimate, .* MiB, is over the 1048576 MiB a job may ask" "$DIR/err" ||
    fail "no word of the cut: $(cat "$DIR/err")"

"$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" || fail "aegisd"
cd "$DIR" || fail cd
id1=$("$AEGIS" submit --model models/m.json -- true) || fail "submit --model"
# the description's warnings come with the submit, as with estimate
sed 's/"layers": \[/"warnings": ["the forward pass depends on the input values"], "layers": [/' \
    models/m.json >models/w.json
wid=$("$AEGIS" submit --model models/w.json -- true 2>"$DIR/err") || fail "submit --model w"
grep -q "aegis submit: models/w.json: warning: the forward pass depends" "$DIR/err" ||
    fail "warnings dropped: $(cat "$DIR/err")"
# model: is relative to the spec's folder; an explicit mem_mib wins.
printf 'jobs:\n  - command: "true"\n    model: models/m.json\n  - command: "true"\n    model: models/m.json\n    mem_mib: 1234\n' \
    >"$DIR/models/../spec.yaml"
ids=$(cd / && "$AEGIS" submit "$DIR/spec.yaml") || fail "submit spec"
set -- $ids
"$AEGIS" wait "$id1" "$wid" "$@" >/dev/null || fail "jobs did not finish"
for id in "$id1" "$1"; do
    "$AEGIS" show --json "$id" | python3 -c "
import json, sys
mem = json.load(sys.stdin)['mem_mib']
assert abs(mem - $want) < 1e-3, (mem, $want)" || fail "job $id: mem_mib is not the estimate $want"
done
"$AEGIS" show --json "$2" | python3 -c "
import json, sys; assert json.load(sys.stdin)['mem_mib'] == 1234" ||
    fail "mem_mib did not win over model"
