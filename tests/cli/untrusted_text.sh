#!/bin/bash
# untrusted_text.sh AEGIS FAKE_AEGISD.py -- text another user (or a file
# another user wrote) can put in what aegis prints never reaches the
# terminal raw: each command below is handed, by a stand-in aegisd or a
# crafted state folder, a C1 CSI (U+009B), ESC and a right-to-left
# override (U+202E); its output must hold none of them, nor an overlong
# CSI (C0 9B), and must show the text safe (text_safe.h: '?' in text,
# \uXXXX in --json), so that a command that printed nothing, or never
# reached the stand-in, fails. (No JSON carries C0 9B, and a dataset's
# folder must be UTF-8: test_text_safe.c covers the overlong forms.)
set -u
aegis=$1 fake=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/fake_lib.sh"
fails=0

# Whether file $1 holds, raw, what a terminal would act on.
raw_control() {
    LC_ALL=C grep -q $'\x1b\|\xc2\x9b\|\xe2\x80\xae\|\xc0\x9b' "$1"
}

# check NAME WANT CMD...: CMD's stdout and stderr hold nothing raw, and
# hold WANT (the text as shown safe).
check() {
    local name=$1 want=$2
    shift 2
    "$@" > out.txt 2>&1
    if raw_control out.txt; then
        echo "FAIL $name: raw control characters in:"
        od -c out.txt | head -20
        fails=$((fails + 1))
    elif ! grep -qF -- "$want" out.txt; then
        echo "FAIL $name: no '$want' in:"
        cat -v out.txt
        fails=$((fails + 1))
    else
        echo "ok   $name"
    fi
}

# A reason aegisd quotes (an error, a file's text): wait prints it.
bad=$'x\xc2\x9b31m\x1b[2J\xe2\x80\xaey'
python3 - "$bad" > answers.json <<'PY'
import json, sys
bad = sys.argv[1]
print(json.dumps({
    'wait': {'ok': True, 'jobs': [{'id': 7, 'state': 'failed',
                                   'reason': bad}]},
    'ls': {'ok': True, 'jobs': [
        {'id': 8, 'kind': 'feed', 'feed': bad, 'state': 'running'},
        {'id': 9, 'kind': 'job', 'feed': bad, 'state': 'queued'}]},
    # a user's name from the user database (any bytes but ':'), and one
    # aegisd left out (not UTF-8): shown safe, and empty
    'report': {'ok': True, 'jobs': [
        {'job_id': 11, 'user': bad, 'state': 'done', 'gpu_count': 1,
         'project_name': 'n'},
        {'job_id': 12, 'state': 'done', 'gpu_count': 1, 'project_name': 'm'}],
        'users': [{'user': bad, 'jobs': 1}, {'jobs': 1}],
        'total': {'jobs': 2}, 'grid_intensity_g_per_kwh': 1, 'pue': 1},
    # an AEGIS spec's profile (10,000 nodes may travel) and a notifier
    # longer than a line buffer: shown whole, only made safe
    'show': {'ok': True, 'job': {
        'id': 10, 'user': 'u', 'state': 'queued', 'gpus': 1,
        'notify': 'echo ' + 'n' * 5000 + bad,
        'meta': {'profile': {'k': 'v' * 5000 + bad}}}},
}))
PY
fake_start "$fake" answers.json
check "wait" "7 failed x?31m?[2J?y" "$aegis" wait 7
check "wait --json" '"reason":"x\u009b31m' "$aegis" wait --json 7
check "feed ls (managed)" "x?31m?[2J?y          8        running" \
    "$aegis" feed ls
check "report (user)" "11      x?31m?[2J?" "$aegis" report
check "report (user totals)" "x?31m?[2J?y            1" "$aegis" report
check "report (no user)" "12                 done" "$aegis" report
check "show (long notify)" "nnnnx?31m?[2J?y" "$aegis" show 10
check "show (long meta)" 'vvvvx?31m\u001B[2J?y"}}' "$aegis" show 10

# A dataset another user shares: its folder and pattern are that user's
# text, read by `aegis dataset show PATH` (shown here from its own state
# folder: the same code reads both).
export AEGIS_STATE_HOME=$dir/state
data="$dir/data"$'\xc2\x9b'"31m"
mkdir -p "$data"
"$aegis" dataset add shared --dir "$data" --format csv \
    --pattern $'*\x1b[2J\xe2\x80\xae.csv' > add.txt 2>&1 ||
    { echo "FAIL dataset add: $(cat add.txt)"; fails=$((fails + 1)); }
check "dataset show PATH" "data?31m (files *?[2J?.csv)" \
    "$aegis" dataset show "$dir/state/datasets/shared"
check "dataset show --json" '"pattern": "*\u001B[2J\u202e.csv"' \
    "$aegis" dataset show "$dir/state/datasets/shared" --json
"$aegis" dataset show "$dir/state/datasets/shared" --json |
    python3 -c "import json, sys; d = json.load(sys.stdin)
assert d['dir'].endswith('\x9b31m') and '\u202e' in d['pattern'], d" ||
    { echo "FAIL dataset show --json: not the same JSON"; fails=$((fails + 1)); }
check "dataset ls" "data?31m" "$aegis" dataset ls
check "dataset ls --json" 'data\u009b31m"' "$aegis" dataset ls --json

# A folder under datasets/ named with bytes that are not UTF-8 and
# controls (no dataset's name): ls names it on stderr, shown safe, and
# lists the others.
mkdir "$dir/state/datasets/bad"$'\xff\x1b[2J\xc2\x9b'
check "dataset ls (folder not UTF-8)" "'bad??[2J?' is not a dataset name" \
    "$aegis" dataset ls
rmdir "$dir/state/datasets/bad"$'\xff\x1b[2J\xc2\x9b'

# A data file's name is not UTF-8 (any user may name a file so): its bad
# record is listed all the same, each such byte as '?', in text and in
# --json (jansson takes no such string: the row was left out of --json);
# its controls as before, and the JSON reads back.
notutf="$dir/notutf"
mkdir -p "$notutf"
printf '1,2,0\nx,y\n' > "$notutf/"$'f\xff\x1b.csv'
"$aegis" dataset add notutf --dir "$notutf" --format csv > add.txt 2>&1 &&
    "$aegis" dataset watch notutf --once --quiet >> add.txt 2>&1 ||
    { echo "FAIL dataset watch: $(cat add.txt)"; fails=$((fails + 1)); }
check "dataset show (file not UTF-8)" "f??.csv at byte 6" \
    "$aegis" dataset show notutf
check "dataset show --json (file not UTF-8)" '"file": "f?\u001B.csv"' \
    "$aegis" dataset show notutf --json
"$aegis" dataset show notutf --json |
    python3 -c "import json, sys; d = json.load(sys.stdin)
assert [b['file'] for b in d['bad_records']] == ['f?\x1b.csv'], d" ||
    { echo "FAIL dataset show --json (file not UTF-8): not read back"
      fails=$((fails + 1)); }

# A file's name in a data folder is any bytes its owner chose: the
# watcher's warnings name it safe (a link, passed over).
ln -s /dev/null "$notutf/"$'l\x1b[2J\xc2\x9b.csv'
check "dataset watch (file's name)" "l?[2J?.csv: a symbolic link" \
    "$aegis" dataset watch notutf --once

# A pipeline's trigger log is a file: a word in it that root reads (with a
# user's AEGIS_STATE_HOME) is shown safe.
pdir="$dir/state/pipelines"
mkdir -p "$pdir/p1"
printf 'fire 0 100\njob 0 5 -1\nend 0 x\033[2J\xc2\x9b\n' > "$pdir/p1/triggers.log"
check "pipeline show" "5        x?[2J?" "$aegis" pipeline show p1
# A word that is not UTF-8 (bytes that start no character) is shown with
# its row, each such byte as '?' (the row was left out, as JSON could not
# hold it), in text and in --json alike; its controls as before.
printf 'fire 1 200\njob 1 6 0\nend 1 a\xff\xc0\x9b\033b\n' >> "$pdir/p1/triggers.log"
check "pipeline show (not UTF-8)" "1        200          6        a????b" \
    "$aegis" pipeline show p1
check "pipeline show --json (not UTF-8)" '"state":"a???\u001Bb"' \
    "$aegis" pipeline show p1 --json

# A kept evaluation is a file in the pipeline's folder: a failed one's
# job and error, and a result's handler and metric names, are shown safe
# by show --eval.
mkdir -p "$pdir/p3/evals"
printf 'fire 0 100\njob 0 5 -1\nend 0 done\n' > "$pdir/p3/triggers.log"
printf '%s\n' '{"model": 0, "execution_time": "after_training",' \
    '"job": "j\u001b[2J", "state": "failed", "error": "e\u009b31m\u202ex"}' \
    > "$pdir/p3/evals/0.train.json"
printf '%s\n' '{"model": 1, "execution_time": "after_training", "job": "j",' \
    '"state": "done", "results": [{"handler": "h\u001b[2J", "start": null,' \
    '"end": null, "samples": 4, "metrics": {"A\u202ecc": 1.0}}]}' \
    > "$pdir/p3/evals/1.train.json"
check "pipeline show --eval (failed)" "after_training  failed (j?[2J): e?31m?x" \
    "$aegis" pipeline show p3 --eval
check "pipeline show --eval (handler)" "h?[2J" "$aegis" pipeline show p3 --eval
check "pipeline show --eval (metric)" "A?cc=1.0000" "$aegis" pipeline show p3 --eval

# A pipeline folder named by hand with a byte that is not UTF-8 (aegisd
# runs none such: no supervisor row): show lists its triggers, and its
# name with each such byte as '?' in --json (its rows were lost, and
# --json said "out of memory"); compare --json gives its row so too.
q=$'q\xff'
mkdir -p "$pdir/$q/models" "$pdir/$q/evals"
printf 'fire 0 100\njob 0 5 -1\nend 0 done\n' > "$pdir/$q/triggers.log"
printf '{"trained_until": 100, "samples": 4}\n' > "$pdir/$q/models/0.json"
printf '%s\n' '{"model": 0, "execution_time": "after_training", "job": "j",' \
    '"state": "done", "results": [{"handler": "h", "start": null,' \
    '"end": null, "samples": 4, "first_ts": 1, "last_ts": 4,' \
    '"metrics": {"Accuracy": 1.0}}]}' > "$pdir/$q/evals/0.train.json"
check "pipeline show (name not UTF-8)" "0        100          5        done" \
    "$aegis" pipeline show "$q"
check "pipeline show --json (name not UTF-8)" \
    '{"name":"q?","trigger_list":[{"trigger":0,"end":100,"job":5,"state":"done"' \
    "$aegis" pipeline show "$q" --json
check "pipeline compare --json (name not UTF-8)" \
    '{"pipeline":"q?","trainings":1,"samples_trained":4' \
    "$aegis" pipeline compare "$q" --json

# A state folder whose path is not UTF-8 (and holds a control): each
# model is listed with its path, each such byte as '?' (every row was
# left out, as JSON could not hold the path), in text and in --json
# alike, and the JSON reads back.
odd="$dir/st"$'\xff\x1b'
mkdir -p "$odd/pipelines/p2/models"
printf 'fire 0 100\njob 0 7 -1\nend 0 done\n' > "$odd/pipelines/p2/triggers.log"
printf 'abc' > "$odd/pipelines/p2/models/0.model"
check "pipeline models (path not UTF-8)" \
    "0        7        -       yes    $dir/st??/pipelines/p2/models/0.model" \
    env AEGIS_STATE_HOME="$odd" "$aegis" pipeline models p2
check "pipeline models --json (path not UTF-8)" \
    "\"path\":\"$dir/st?\\u001B/pipelines/p2/models/0.model\"" \
    env AEGIS_STATE_HOME="$odd" "$aegis" pipeline models p2 --json
AEGIS_STATE_HOME="$odd" "$aegis" pipeline models p2 --json |
    python3 -c "import json, sys; rows = [json.loads(l) for l in sys.stdin]
assert [(r['trigger'], r['bytes']) for r in rows] == [(0, 3)], rows
assert rows[0]['path'].endswith('/st?\x1b/pipelines/p2/models/0.model'), rows" ||
    { echo "FAIL pipeline models --json (path not UTF-8): not read back"
      fails=$((fails + 1)); }

# A model description's file name is any bytes: estimate's line, and the
# warnings and errors naming the file, show it safe (a byte not UTF-8 as
# '?' too), and --json escapes it.
models=$here/../../data/models
desc="$dir/m"$'\xff\x1b[2J\xe2\x80\xae'".json"
cp "$models/resnet50_imagenet_bs32_1gpu.json" "$desc"
check "estimate (file name)" "m??[2J?.json: " "$aegis" estimate "$desc"
check "estimate --json (file name)" '"file":"'"$dir"'/m?\u001B[2J\u202e.json"' \
    "$aegis" estimate --json "$desc"
printf '{"model": "x"}' > "$desc"
check "estimate (bad file)" "m??[2J?.json" "$aegis" estimate "$desc"

[ "$fails" -eq 0 ] || exit 1
