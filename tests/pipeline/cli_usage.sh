#!/bin/sh
# cli_usage.sh -- what `aegis pipeline` and `aegis dataset` refuse before
# any work, with no aegisd: each refusal's exit status (2 bad usage or
# input, 1 a failure) and the words that name what is wrong.
# usage: cli_usage.sh AEGIS CASE; exit 0 pass, 1 fail.
set -u
AEGIS=$1 CASE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/aegis-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export AEGIS_STATE_HOME=$tmp/state
cd "$tmp" || exit 1

fail() { echo "FAIL ($CASE): $*" >&2; exit 1; }
# exits RC WANT ARGS...: `aegis ARGS` exits RC and says WANT on stderr.
exits() {
    want_rc=$1 want=$2; shift 2
    "$AEGIS" "$@" > out.txt 2> err.txt
    rc=$?
    [ "$rc" = "$want_rc" ] ||
        fail "aegis $*: exit $rc, not $want_rc ($(cat out.txt err.txt))"
    grep -qF -- "$want" err.txt || fail "aegis $*: '$(cat err.txt)' lacks '$want'"
}

# Each subcommand of `aegis pipeline` takes its own options only: the
# others' were taken and ignored, exit 0.
case_pipeline_options() {
    exits 2 "aegis pipeline log: --svg is not an option of log" \
        pipeline log X --svg a.svg --merge foo
    exits 2 "--json is not an option of trace" pipeline trace X --json
    exits 2 "--json is not an option of start" pipeline start --json f.yaml
    exits 2 "--from is not an option of ls" pipeline ls --from 5 --eval
    exits 2 "--cancel-training is not an option of show" \
        pipeline show X --cancel-training
    exits 2 "--eval is not an option of models" pipeline models X --eval
    exits 2 "--to is not an option of compare" pipeline compare a b --to 3
}

# `aegis dataset add` refuses an option of another format (it was stored
# in dataset.json and never used), a --pattern no data file's name can
# match (an empty one became *.csv), binary without --record-size
# (which was said as "record_size: 0 is not label_size (4) plus ..."), and
# a folder or pattern that is not UTF-8 (a half-made dataset was left).
case_dataset_add() {
    mkdir d
    exits 2 "--header is for --format csv, not file" dataset add x --dir d \
        --format file --header --sep ';' --ts-column 3
    exits 2 "--ts-column is for --format csv, not file" dataset add x \
        --dir d --format file --ts-column 3
    exits 2 "--record-size is for --format binary, not csv" dataset add x \
        --dir d --format csv --record-size 36 --label-size 2
    exits 2 "--label-size is for --format binary, not csv" dataset add x \
        --dir d --format csv --label-size 2
    exits 2 "--header is for --format csv, not binary" dataset add x \
        --dir d --format binary --record-size 8 --header --label-column 3
    exits 2 "--label-column is for --format csv, not binary" dataset add x \
        --dir d --format binary --record-size 8 --label-column 3
    exits 2 "--sep is for --format csv, not binary" dataset add x \
        --dir d --format binary --record-size 8 --sep ';'
    exits 2 "--format binary needs --record-size" dataset add x --dir d \
        --format binary
    exits 2 "--pattern '' is empty" dataset add x --dir d --format csv \
        --pattern ''
    exits 2 "--pattern '../*' holds a '/'" dataset add x --dir d \
        --format csv --pattern '../*'
    exits 2 "--pattern '.*' starts with '.'" dataset add x --dir d \
        --format file --pattern '.*'
    exits 2 "--pattern 'a*.tmp' ends in .tmp" dataset add x --dir d \
        --format file --pattern 'a*.tmp'
    # a folder or pattern that is not UTF-8 cannot be stored in dataset.json
    # (JSON text): refused before anything is made, the path shown safe (a
    # folder of x was left without its dataset.json, which no later add of
    # x could replace: 'dataset x exists')
    bad=$(printf 'd\377\033')
    mkdir "$bad"
    exits 2 "dir: '$tmp/d??' is not UTF-8 text" dataset add x --dir "$bad" \
        --format csv
    exits 2 "pattern: 'p?.csv' is not UTF-8 text" dataset add x --dir d \
        --format csv --pattern "$(printf 'p\377.csv')"
    [ ! -e "$AEGIS_STATE_HOME/datasets/x" ] || fail "a refused add stored x"
    "$AEGIS" dataset add x --dir d --format csv --header --ts-column ts \
        --pattern 'p*.csv' > /dev/null || fail "a right add refused"
    exits 1 "dataset x exists ($AEGIS_STATE_HOME/datasets/x)" dataset add x \
        --dir d --format csv
}

# A name that is no dataset's, or names none, is bad input (2), as an
# unknown job or pipeline is: show, rm and watch exited 1 for it (and
# `show ''` 1 where `show ../x` exited 2); 1 stays for failures.
case_dataset_names() {
    exits 2 "aegis dataset show: no dataset nosuch" dataset show nosuch
    exits 2 "aegis dataset show: no dataset nosuch" dataset show nosuch --json
    exits 2 "aegis dataset rm: no dataset nosuch" dataset rm nosuch
    exits 2 "aegis dataset watch: no dataset nosuch" dataset watch nosuch --once
    exits 2 "aegis dataset watch: no dataset nosuch" dataset watch nosuch --detach
    exits 2 "aegis dataset share: no dataset nosuch" dataset share nosuch root
    exits 2 "'' is not a dataset name" dataset show ''
    exits 2 "'.x' is not a dataset name" dataset rm .x
    exits 2 "'../x' is not STATE/datasets/NAME" dataset show ../x
    exits 2 "no dataset x ($tmp/datasets/x)" dataset show "$tmp/datasets/x"
    mkdir d
    "$AEGIS" dataset add x --dir d --format csv > /dev/null || fail "add"
    "$AEGIS" dataset watch x --once --quiet || fail "watch --once"
    echo garbage > "$AEGIS_STATE_HOME/datasets/x/keys.log.new"
    mv "$AEGIS_STATE_HOME/datasets/x/keys.log.new" \
        "$AEGIS_STATE_HOME/datasets/x/keys.log"
    echo garbage-too >> "$AEGIS_STATE_HOME/datasets/x/keys.log"
    exits 1 "keys.log: not a key log (bad header)" dataset show x
    exits 1 "keys.log: not a key log (bad header)" dataset watch x --once
}

# helps HELP_ARGS... -- WANT...: the help says each WANT.
helps() {
    cmd=
    while [ "$1" != -- ]; do cmd="$cmd $1"; shift; done
    shift
    $cmd > out.txt 2>&1 || fail "$cmd: exit $?"
    for want in "$@"; do
        grep -qF -- "$want" out.txt || fail "$cmd lacks '$want': $(cat out.txt)"
    done
}

# The helps say their exit status, what --json gives, and what
# aegis-pipeline check does.
case_help() {
    helps "$AEGIS" dataset ls --help -- "Exit status: 0 success, 1" \
        "--json  one JSON array"
    helps "$AEGIS" dataset show --help -- "Exit status: 0 success, 1" \
        "--json  one JSON object" "no dataset of yours"
    helps "$(dirname "$AEGIS")/aegis-pipeline" --help -- \
        "Exit status: 0 success" "check   checks FILE as start does"
}

# The errors docs/pipelines.md quotes for its smallest pipeline are the
# ones given, word for word: it quoted "trigger.num_samples: expected a
# number >= 1" where check said "must be between 1 and
# 9223372036854775807".
case_doc_errors() {
    docs=$HERE/../../docs/pipelines.md
    /usr/bin/python3 - "$docs" > tiny.good <<'PY' || fail "no tiny pipeline"
import re, sys
text = open(sys.argv[1]).read()
print(re.search(r"```yaml\n(pipeline:.*?)```", text, re.S).group(1), end="")
PY
    sed 's/num_samples: 2$/num_samples: 0/' tiny.good > tiny.yaml
    "$(dirname "$AEGIS")/aegis-pipeline" check tiny.yaml 2> err.txt &&
        fail "check took num_samples 0"
    grep -qxF -- "$(cat err.txt)" "$docs" ||
        fail "docs/pipelines.md does not quote '$(cat err.txt)'"
    sed 's/epochs_per_trigger: 1$/epochs_per_trigger: 0/' tiny.good > tiny.yaml
    "$AEGIS" pipeline start tiny.yaml 2> err.txt &&
        fail "start took epochs_per_trigger 0"
    grep -qxF -- "$(cat err.txt)" "$docs" ||
        fail "docs/pipelines.md does not quote '$(cat err.txt)'"
}

# A path that goes in a request to aegisd and is not UTF-8 (JSON holds
# only that) is refused, exit 2, naming it shown safe: the state folder
# under which `pipeline start` keeps the pipeline (nothing is made), and
# the path of aegis itself that `dataset watch --detach` has aegisd run,
# and the state folder such a watcher is told of in its environment.
# Each failed with exit 2 and no word of why (start said only that
# AEGIS_STATE_HOME was not passed, as "aegis submit").
case_request_paths() {
    mkdir d
    "$AEGIS" dataset add x --dir "$tmp/d" --format csv > /dev/null ||
        fail "dataset add"
    bin=$tmp/$(printf 'bin\377')
    mkdir "$bin" && cp "$AEGIS" "$bin/aegis" || fail "copy aegis"
    aegis=$AEGIS AEGIS=$bin/aegis
    exits 2 "aegis dataset watch: aegis's own path '$tmp/bin?/aegis' is not UTF-8 text" \
        dataset watch x --detach
    AEGIS=$aegis
    AEGIS_STATE_HOME=$tmp/$(printf 'st\377\033')
    mkdir "$AEGIS_STATE_HOME"
    "$AEGIS" dataset add x --dir "$tmp/d" --format csv > /dev/null ||
        fail "dataset add (state folder not UTF-8)"
    printf '%s\n' 'pipeline: {name: pp}' 'data: {dataset_id: x}' \
        'trigger: {id: DataAmountTrigger, num_samples: 4}' \
        'selection_strategy: {name: NewDataStrategy, tail_triggers: 0}' \
        'training: {command: "true"}' > p.yaml
    exits 2 "aegis pipeline: the pipeline's folder '$tmp/st??/pipelines/pp' is not UTF-8 text" \
        pipeline start p.yaml
    # (the watcher job would not be given AEGIS_STATE_HOME, and would
    # watch x in another folder: it was submitted, with a warning)
    exits 2 "aegis dataset watch: the state folder '$tmp/st??' is not UTF-8 text" \
        dataset watch x --detach
    [ ! -e "$AEGIS_STATE_HOME/pipelines" ] || fail "start made its folder"
}

# A kept evaluation file that is not one as the supervisor writes it (cut
# or edited by hand: no state, a result naming no handler) is skipped
# with a word naming it, and the others shown; a failed one without its
# job or error shows "-". One without a state crashed `show --eval`.
case_eval_files() {
    evals=$AEGIS_STATE_HOME/pipelines/x/evals
    mkdir -p "$evals" && : > "$evals/../triggers.log" || fail "pipeline folder"
    echo '{"model": 1, "execution_time": "after_pipeline"}' > "$evals/1.end.json"
    echo '{"model": 2, "execution_time": "after_pipeline", "state": "done",
           "results": [{"samples": 3}]}' > "$evals/2.end.json"
    echo '{"model": 3, "execution_time": "after_pipeline", "state": "failed"}' \
        > "$evals/3.end.json"
    "$AEGIS" pipeline show x --eval > out.txt 2> err.txt ||
        fail "show --eval: exit $? ($(cat out.txt err.txt))"
    for n in 1 2; do
        grep -qF "$evals/$n.end.json: not an evaluation (skipped)" err.txt ||
            fail "$n.end.json not skipped: $(cat err.txt)"
    done
    grep -q '^3  *after_pipeline  *failed (-): -$' out.txt ||
        fail "the failed one: $(cat out.txt)"
    grep -q '^[12] ' out.txt && fail "a skipped one shown: $(cat out.txt)"
    "$AEGIS" pipeline compare x > out.txt 2> err.txt
    grep -qF "1.end.json: not an evaluation (skipped)" err.txt ||
        fail "compare: $(cat out.txt err.txt)"
}

"case_$CASE"
echo "ok: $CASE"
