#!/bin/bash
# e2e_helptext.sh AEGISD AEGIS NVML FAKE CATALOG CASE -- `aegis show
# --help` and `aegis ls --help` name everything the commands print: every
# key of their --json (at every depth) and every label of their text, for
# jobs queued (for each of several reasons), held, running and finished.
# A field added to a job's row without a word in the help fails here (the
# manual pages are made from the same texts).
set -u; AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6; source "$(dirname "$0")/e2e_lib.sh"

# covers HELP KIND FILE...: every word of KIND found in FILEs is a word of
# the help text in HELP. KIND json: the keys of the JSON documents (a job
# or an array of jobs) at any depth, but inside meta (the submit's own
# object); KIND labels: the labels of `aegis show`'s text (its first ten
# columns; "attempt" for an attempt's line, none for an event's).
covers() {
    local help=$1 kind=$2; shift 2
    /usr/bin/python3 - "$help" "$kind" "$@" <<'PY' || fail "$kind: not all in the help"
import json, re, sys
help = ' '.join(open(sys.argv[1]).read().split())
kind, words = sys.argv[2], set()
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            words.add(k)
            if k != 'meta': walk(x)
    elif isinstance(v, list):
        for x in v: walk(x)
for path in sys.argv[3:]:
    if kind == 'json':
        walk(json.load(open(path)))
        continue
    for line in open(path):
        if line.startswith(' '): continue  # an event, or a list's next item
        words.add('attempt' if line.startswith('attempt ') else line[:10].strip())
missing = sorted(w for w in words
                 if not re.search(r'(?<![\w-])' + re.escape(w) + r'(?![\w-])', help))
print(kind + ' seen: ' + ' | '.join(sorted(words)))
if missing: sys.exit('missing: ' + ' | '.join(missing))
PY
}

# Two GPUs of 40960 MiB: a finished job, two of 38000 MiB running on
# them, one queued while the telemetry window fills (a wait that ends at a
# known time: 60 samples outlast the case), one for its dependency, one
# held.
jobs_of_every_kind() {
    export AEGIS_TEST_GPUS=2x40960
    echo "window_samples: 60" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    done_job=$("$AEGIS" submit --name quick --time 1:00 --notify '' -- true) || fail submit
    "$AEGIS" wait "$done_job" >/dev/null || fail "the quick job failed"
    big0=$("$AEGIS" submit --mem 38000 -- "$FAKE" --mib 38000 --seconds 60) || fail submit
    big1=$("$AEGIS" submit --mem 38000 -- "$FAKE" --mib 38000 --seconds 60) || fail submit
    wait_until "both big jobs running" eval \
        'is_state "$big0" running && is_state "$big1" running'
    mem_job=$("$AEGIS" submit --mem 38000 --nice 5 -- "$FAKE" --mib 1 --seconds 1) || fail submit
    dep_job=$("$AEGIS" submit --after "$big0" -- "$FAKE" --mib 1 --seconds 1) || fail submit
    held_job=$("$AEGIS" submit -- "$FAKE" --mib 1 --seconds 1) || fail submit
    "$AEGIS" hold "$held_job" >/dev/null || fail hold
    for id in "$mem_job" "$dep_job" "$held_job"; do
        until_job "$id" "assert d['state']=='queued' and d.get('wait_code'), d"
    done
    until_job "$mem_job" "assert d['wait_code']=='window' and d['wait_until'], d"
}

case_helptext_show() {
    jobs_of_every_kind
    "$AEGIS" show --help > help.txt || fail "show --help"
    for id in "$done_job" "$big0" "$mem_job" "$dep_job" "$held_job"; do
        "$AEGIS" show --json "$id" > "show$id.json" || fail "show --json $id"
        "$AEGIS" show "$id" > "show$id.txt" || fail "show $id"
    done
    "$AEGIS" show --json --history "$done_job" > history.json || fail "show --history"
    grep -q '^waiting ' "show$mem_job.txt" || fail "no waiting line: $(cat "show$mem_job.txt")"
    covers help.txt json show*.json history.json
    covers help.txt labels show*.txt
}

case_helptext_ls() {
    jobs_of_every_kind
    "$AEGIS" ls --help > help.txt || fail "ls --help"
    "$AEGIS" ls --all --json > ls.json || fail "ls --json"
    [ "$(pyjson 'print(len(d))' < ls.json)" = 6 ] || fail "ls: $(cat ls.json)"
    covers help.txt json ls.json
    "$AEGIS" ls > ls.txt || fail ls
    for column in $(head -1 ls.txt); do
        grep -qF -- "$column" help.txt || fail "ls --help: no column $column"
    done
}

# update, priority, fairshare and clear --json print aegisd's answer: its
# help names each key of it ("ok" was left out).
case_helptext_queue() {
    start
    cd "$DIR/work"
    long=$("$AEGIS" submit -- sleep 600) || fail submit
    q=$("$AEGIS" submit --after "$long" -- true) || fail "submit queued"
    "$AEGIS" update "$q" --nice 1 --json > update.json || fail update
    local c
    for c in update priority fairshare clear; do
        "$AEGIS" $c --help > "$c-help.txt" || fail "$c --help"
        [ "$c" = update ] || "$AEGIS" $c --json > "$c.json" || fail "$c --json"
        covers "$c-help.txt" json "$c.json"
    done
}

e2e_run
