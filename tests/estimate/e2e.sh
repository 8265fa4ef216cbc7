#!/bin/sh
# e2e.sh AEGIS CASE -- one end-to-end check of `aegis estimate`: a good
# description gives estimates that hold together, --json carries every
# component, bad input exits 2 naming the file and the field.
set -u
AEGIS=$1 CASE=$2
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL ($CASE): $*" >&2; exit 1; }

# A small CNN: conv, norm, activation, pool, view, linear, softmax.
cat >"$TMP/d.json" <<'JSON'
{"format": "aegis-model/1", "model": "small cnn", "batch_size": 64,
 "optimizer": "sgd_momentum", "precision": "fp32", "input_elements": 3072,
 "layers": [
  {"type": "Conv2d", "activations": 65536, "params": 1792},
  {"type": "BatchNorm2d", "activations": 65536, "params": 128, "buffers": 129},
  {"type": "ReLU", "activations": 65536, "params": 0},
  {"type": "MaxPool2d", "activations": 16384, "params": 0},
  {"type": "Flatten", "activations": 16384, "params": 0},
  {"type": "Linear", "activations": 100, "params": 1638500},
  {"type": "Softmax", "activations": 100, "params": 0}]}
JSON

# expect_bad PATTERN ARGS...: aegis estimate ARGS exits 2, says PATTERN on
# stderr and prints nothing on stdout.
expect_bad() {
    pattern=$1
    shift
    "$AEGIS" estimate "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    rc=$?
    cat "$TMP/err"
    [ $rc -eq 2 ] || fail "exit $rc, expected 2"
    grep -q -- "$pattern" "$TMP/err" || fail "message lacks '$pattern'"
    [ ! -s "$TMP/out" ] || fail "printed estimates for bad input"
}

case $CASE in
text)
    "$AEGIS" estimate --estimator all "$TMP/d.json" >"$TMP/out" ||
        fail "exit $?"
    cat "$TMP/out"
    grep -q "small cnn, batch 64, sgd_momentum, fp32, 7 layers" "$TMP/out" ||
        fail "no header line"
    grep -Eq "^  aegis +[0-9]+ MiB +\(predicted [0-9]+ \+ margin [0-9]+; stack aegis\)" \
        "$TMP/out" || fail "no aegis line"
    grep -Eq "^  horus +[0-9]+ MiB" "$TMP/out" || fail "no horus line" ;;
json)
    "$AEGIS" estimate --estimator all --cuda-context 300 --json \
        "$TMP/d.json" >"$TMP/out" || fail "exit $?"
    /usr/bin/python3 - "$TMP/out" <<'PY' || fail "bad JSON output"
import json, sys
doc = json.load(open(sys.argv[1]))
a = doc["estimates"]["aegis"]
c = a["components"]
parts = ["weights_mib", "gradients_mib", "optimizer_mib", "input_mib",
         "workspace_mib", "conv_workspace_mib", "cuda_context_mib",
         "rounding_mib"]
total = sum(c[p] for p in parts) + sum(c["activations_mib"].values())
assert abs(total - c["physical_total_mib"]) < 1e-3, (total, c)
assert set(c["activations_mib"]) >= {"conv", "norm", "activation", "pool",
                                     "maxpool", "linear", "softmax", "view"}
assert c["activations_mib"]["view"] == 0
# MaxPool2d keeps its output for Flatten -> Linear and its int64 indices
assert abs(c["activations_mib"]["maxpool"] - 16384 * 64 * 12 / 2**20) < 1e-9
# the convolution workspace's unit: the conv's output, 65536 * 64 * 4 bytes
assert abs(c["conv_workspace_mib"] - 16.0) < 1e-9
# sgd_momentum: one state element per parameter, as many as the gradients
assert abs(c["optimizer_mib"] - c["gradients_mib"]) < 1e-6
assert abs(a["estimate_mib"] - a["predicted_mib"] - a["margin_mib"]) < 1e-3
assert a["margin_mib"] >= 0 and 0 < a["margin_quantile"] < 1
# Horus by hand: A = 229,576, P = 1,640,420, B = 64, plus 300 MiB.
h = 4 * ((229576 * 64 + 1640420) + 64 * 1640420) / 2**20 + 300
assert abs(doc["estimates"]["horus"]["estimate_mib"] - h) < 1e-3
assert doc["file"].endswith("d.json") and doc["batch_size"] == 64
assert a["stack"] == "aegis"
PY
    # GPUMemNet's stack has the larger fixed costs; the rest is the same.
    "$AEGIS" estimate --json --stack gpumemnet "$TMP/d.json" >"$TMP/g" ||
        fail "--stack gpumemnet: exit $?"
    /usr/bin/python3 - "$TMP/out" "$TMP/g" <<'PY' || fail "--stack output"
import json, sys
a = json.load(open(sys.argv[1]))["estimates"]["aegis"]
g = json.load(open(sys.argv[2]))["estimates"]["aegis"]
assert g["stack"] == "gpumemnet" and g["predicted_mib"] > a["predicted_mib"]
assert g["components"] == a["components"]
PY
    ;;
json_name)
    # A description whose file's name is not UTF-8 (a glob over any
    # folder gives one) is estimated in --json as in text, the name's
    # such bytes as '?' (jansson takes no such string: a blank line and
    # exit 1 were printed, with no word said), the other files too.
    odd="$TMP/$(printf 'm\377.json')"
    cp "$TMP/d.json" "$odd"
    "$AEGIS" estimate --json "$odd" "$TMP/d.json" \
        >"$TMP/out" 2>"$TMP/err" || fail "exit $?: $(cat "$TMP/err")"
    /usr/bin/python3 - "$TMP/out" <<'PY' || fail "$(cat "$TMP/out")"
import json, sys
docs = [json.loads(line) for line in open(sys.argv[1])]
assert [d["file"].rsplit("/", 1)[1] for d in docs] == ["m?.json", "d.json"]
assert docs[0]["estimates"] == docs[1]["estimates"], docs
PY
    ;;
stdin)
    # Two descriptions as JSON lines give two results, in order.
    { tr -d '\n' <"$TMP/d.json"; echo; echo;
      tr -d '\n' <"$TMP/d.json" | sed 's/"batch_size": 64/"batch_size": 8/'
      echo; } | "$AEGIS" estimate --json - >"$TMP/out" || fail "exit $?"
    [ "$(wc -l <"$TMP/out")" -eq 2 ] || fail "expected 2 lines"
    grep -q '"file":"<stdin>:1"' "$TMP/out" || fail "first not <stdin>:1"
    grep -q '"file":"<stdin>:3"' "$TMP/out" || fail "second not <stdin>:3"
    printf '{"format": "aegis-model/1"}\n' |
        "$AEGIS" estimate - >/dev/null 2>"$TMP/err"
    [ $? -eq 2 ] || fail "bad stdin line accepted"
    grep -q "<stdin>:1: batch_size: missing" "$TMP/err" || fail "no message"
    # a NUL byte ends the input with a message, where it was a blank line
    # (and /dev/zero, a line without end, took all memory)
    { tr -d '\n' <"$TMP/d.json"; echo; printf '\000'; tr -d '\n' <"$TMP/d.json"
      echo; } | "$AEGIS" estimate --json - >"$TMP/out" 2>"$TMP/err"
    [ $? -eq 2 ] && grep -q "<stdin>:2: a NUL byte" "$TMP/err" ||
        fail "NUL line: $(cat "$TMP/err")"
    grep -q "\"file\":\"<stdin>:1\"" "$TMP/out" || fail "the good line lost"
    timeout 20 "$AEGIS" estimate - </dev/zero 2>"$TMP/err"
    [ $? -eq 2 ] || fail "estimate - </dev/zero"
    # no description at all is no estimate, not a success
    printf '\n\n' | "$AEGIS" estimate - >"$TMP/out" 2>"$TMP/err"
    [ $? -eq 2 ] && grep -q "<stdin>: no description" "$TMP/err" ||
        fail "empty stdin: $(cat "$TMP/err")" ;;
stdin_size)
    # A line of stdin is one description, held to a file's 16 MiB: the line
    # past it is refused by its size, naming it, once the good line before
    # it is estimated (a line was read up to 1 GiB before, into as much
    # memory, and this one was reported as bad JSON).
    { tr -d '\n' <"$TMP/d.json"; echo; head -c 16777217 /dev/zero | tr '\0' x
      echo; } | "$AEGIS" estimate --json - >"$TMP/out" 2>"$TMP/err"
    rc=$?
    cat "$TMP/err"
    [ $rc -eq 2 ] || fail "exit $rc, expected 2"
    grep -q "<stdin>:2: a model description may hold 16777216 bytes (16 MiB) at most" \
        "$TMP/err" || fail "the long line not refused by its size"
    grep -q '"file":"<stdin>:1"' "$TMP/out" || fail "the good line lost"
    # one of 16 MiB exactly is read, as a file of that size is
    { head -c 16777200 /dev/zero | tr '\0' ' '; printf '{"format": 1}\n'; } |
        head -c 16777216 | { cat; echo; } |
        "$AEGIS" estimate - >/dev/null 2>"$TMP/err"
    grep -q "<stdin>:1: format" "$TMP/err" ||
        fail "a line of 16 MiB: $(cat "$TMP/err")"
    # a line without end is refused once past the cap, its peak memory
    # (RSS, which a sanitizer's shadow keeps, unlike a ulimit) well under
    # the 1 GiB it took
    tr '\0' x </dev/zero | /usr/bin/python3 -c '
import resource, subprocess, sys
rc = subprocess.run([sys.argv[1], "estimate", "-"], timeout=120).returncode
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' \
        "$AEGIS" >"$TMP/rss" 2>"$TMP/err"
    read -r rc kib <"$TMP/rss"
    [ "$rc" = 2 ] && grep -q "<stdin>:1: a model description may hold" \
        "$TMP/err" || fail "endless line: exit $rc: $(cat "$TMP/err")"
    [ "$kib" -lt 131072 ] || fail "endless line: $kib KiB to refuse it" ;;
bad_field)
    sed 's/"params": 1638500/"params": "many"/' "$TMP/d.json" >"$TMP/b.json"
    expect_bad "b.json: layers\[5\].params: not a non-negative integer" \
        "$TMP/b.json" ;;
bad_choice)
    sed 's/sgd_momentum/lamb/' "$TMP/d.json" >"$TMP/b.json"
    expect_bad "b.json: optimizer: unknown value 'lamb'" "$TMP/b.json" ;;
bad_json)
    printf '{"format": "aegis-model/1",\n "batch_size": }\n' >"$TMP/b.json"
    expect_bad "b.json:2:.*bad JSON" "$TMP/b.json" ;;
missing_file)
    expect_bad "nothing.json: cannot read" "$TMP/nothing.json"
    expect_bad "/dev/zero: a NUL byte at offset 0" /dev/zero ;;
bad_usage)
    expect_bad "unknown estimator 'lucid'" --estimator lucid "$TMP/d.json"
    expect_bad "cuda-context" --cuda-context -5 "$TMP/d.json"
    # Horus's only: with aegis alone (the default) it would change nothing
    expect_bad "--cuda-context is added to Horus's estimate only" \
        --cuda-context 300 "$TMP/d.json"
    expect_bad "--cuda-context is added to Horus's estimate only" \
        --cuda-context 0 --estimator aegis "$TMP/d.json"
    for est in horus all; do
        "$AEGIS" estimate --cuda-context 300 --estimator $est "$TMP/d.json" \
            >/dev/null || fail "--cuda-context with $est: exit $?"
    done
    expect_bad "unknown stack 'cuda12'" --stack cuda12 "$TMP/d.json"
    # and --stack aegis's only
    expect_bad "--stack sets aegis's estimate only" \
        --stack gpumemnet --estimator horus "$TMP/d.json"
    "$AEGIS" estimate --stack gpumemnet --estimator all "$TMP/d.json" \
        >/dev/null || fail "--stack with all: exit $?"
    expect_bad "give DESC.json files" ;;
help)
    "$AEGIS" estimate --help >"$TMP/h" || fail "--help failed"
    for word in SYNOPSIS ESTIMATORS horus --json "EXIT STATUS"; do
        grep -q -- "$word" "$TMP/h" || fail "--help lacks $word"
    done
    "$AEGIS" --help | grep -q "estimate" || fail "aegis --help lacks it" ;;
several)
    # Every bad description is reported and every good one estimated, in
    # order; the exit status says some input was bad.
    sed 's/"params": 1638500/"params": "many"/' "$TMP/d.json" >"$TMP/b.json"
    sed 's/small cnn/second cnn/' "$TMP/d.json" >"$TMP/e.json"
    "$AEGIS" estimate "$TMP/d.json" "$TMP/b.json" "$TMP/nothing.json" \
        "$TMP/e.json" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    cat "$TMP/out" "$TMP/err"
    [ $rc -eq 2 ] || fail "exit $rc, expected 2"
    grep -q "small cnn" "$TMP/out" || fail "first good one not estimated"
    grep -q "second cnn" "$TMP/out" || fail "good one after bad not estimated"
    grep -q "b.json: layers\[5\].params" "$TMP/err" || fail "b.json not named"
    grep -q "nothing.json: cannot read" "$TMP/err" || fail "missing not named"
    [ "$(wc -l <"$TMP/err")" -eq 2 ] || fail "expected two messages"
    # The same on stdin: the bad line is named, the good ones estimated.
    { tr -d '\n' <"$TMP/d.json"; echo; echo '{"format": 1}';
      tr -d '\n' <"$TMP/e.json"; echo; } |
        "$AEGIS" estimate --json - >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq 2 ] || fail "stdin: exit $rc, expected 2"
    [ "$(wc -l <"$TMP/out")" -eq 2 ] || fail "stdin: expected 2 estimates"
    grep -q "<stdin>:2: format" "$TMP/err" || fail "stdin: bad line not named" ;;
implausible)
    # 2^53 elements per layer passes as a JSON integer but is no model.
    sed 's/"activations": 16384, "params": 0}/"activations": 9007199254740992, "params": 0}/' \
        "$TMP/d.json" >"$TMP/b.json"
    expect_bad "b.json: layers\[3\].activations: 9007199254740992 is implausible" \
        "$TMP/b.json"
    sed 's/"input_elements": 3072/"input_elements": 9007199254740992/' \
        "$TMP/d.json" >"$TMP/b.json"
    expect_bad "b.json: input_elements: 9007199254740992 is implausible" \
        "$TMP/b.json"
    # a batch above a million: the limit aegis_describe.py's MAX_BATCH_SIZE
    # checks where the batch is given
    sed 's/"batch_size": 64/"batch_size": 1000001/' "$TMP/d.json" >"$TMP/b.json"
    expect_bad "b.json: batch_size: 1000001 is above 1000000" "$TMP/b.json"
    sed 's/"batch_size": 64/"batch_size": 1000000/' "$TMP/d.json" >"$TMP/m.json"
    "$AEGIS" estimate "$TMP/m.json" >/dev/null || fail "batch 1000000: exit $?" ;;
warnings)
    # What the extractor warns about (a CPU fallback, value-dependent
    # control flow) is repeated with the estimate, so that the user sees
    # the estimate's footing.
    sed 's/"layers": \[/"warnings": ["the forward pass depends on the input values"], "layers": [/' \
        "$TMP/d.json" >"$TMP/w.json"
    "$AEGIS" estimate "$TMP/w.json" >"$TMP/out" 2>"$TMP/err" || fail "exit $?"
    grep -q "w.json: warning: the forward pass depends on the input values" \
        "$TMP/err" || fail "warning not repeated"
    "$AEGIS" estimate --json "$TMP/w.json" >"$TMP/out" 2>/dev/null ||
        fail "--json: exit $?"
    grep -q '"warnings":\["the forward pass depends' "$TMP/out" ||
        fail "--json lacks the warnings"
    # a description is any file: an escape sequence in a warning is shown
    # as '?', not sent to the terminal
    sed 's/"layers": \[/"warnings": ["\\u001b]0;pwned\\u0007 red"], "layers": [/' \
        "$TMP/d.json" >"$TMP/e.json"
    "$AEGIS" estimate "$TMP/e.json" >"$TMP/out" 2>"$TMP/err" || fail "escape: exit $?"
    grep -q "e.json: warning: ?\]0;pwned? red" "$TMP/err" ||
        fail "escape not shown as '?': $(od -c "$TMP/err" | head)" ;;
sim_column)
    # The simulator takes aegis_mib as an estimator column: a catalog whose
    # aegis_mib says every job needs 39 GiB must serialise them.
    printf 'name,num_gpus,solo_duration_s,peak_memory_mib,aegis_mib\n' >"$TMP/c.csv"
    printf 'a,1,100,1000,39000\nb,1,100,1000,500\n' >>"$TMP/c.csv"
    printf 'submit_time_s,workload\n0,a\n0,a\n' >"$TMP/big.csv"
    printf 'submit_time_s,workload\n0,b\n0,b\n' >"$TMP/small.csv"
    for t in big small; do
        "$AEGIS" sim --catalog "$TMP/c.csv" --trace "$TMP/$t.csv" --gpus 1 \
            --policy aegis-est --estimator aegis_mib --json >"$TMP/$t.json" ||
            fail "sim --estimator aegis_mib: exit $?"
    done
    /usr/bin/python3 - "$TMP/big.json" "$TMP/small.json" <<'PY' || fail "aegis_mib not used"
import json, sys
big, small = (json.load(open(f))["policies"][0]["makespan_s"] for f in sys.argv[1:])
assert big > small * 1.3, (big, small)  # serial 200 s, collocated ~140 s
PY
    "$AEGIS" sim --estimator nonesuch_mib 2>"$TMP/err"
    grep -q "aegis_mib" "$TMP/err" || fail "--estimator message lacks aegis_mib" ;;
*)
    fail "unknown case" ;;
esac
