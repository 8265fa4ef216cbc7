#!/bin/sh
# cli_usage.sh -- what `aegis pipeline` and `aegis dataset` refuse before
# any work, with no aegisd: each refusal's exit status (2 bad usage or
# input, 1 a failure) and the words that name what is wrong.
# usage: cli_usage.sh AEGIS CASE; exit 0 pass, 1 fail.
set -u
AEGIS=$1 CASE=$2
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

"case_$CASE"
echo "ok: $CASE"
