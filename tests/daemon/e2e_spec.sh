#!/bin/bash
# e2e_spec.sh -- end-to-end tests of what `aegis submit` accepts: AEGIS's
# own job specs as they are, several dependencies of each kind, memory in
# units, a command in one shell string, an array of indices; and of the
# habits of Slurm and task-spooler users around it (ls -u/--state, log
# --both, nearest workload names in sim and gen-trace).
#
# usage: e2e_spec.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG CASE
set -u
AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6
source "$(dirname "$0")/e2e_lib.sh"


# A stand-in for conda on PATH: `conda run -n ENV --no-capture-output
# CMD...` says which environment and command it was given.
fake_conda() {
    mkdir -p "$DIR/bin"
    cat > "$DIR/bin/conda" <<'SH'
#!/bin/sh
[ "$1" = run ] && [ "$2" = -n ] && [ "$4" = --no-capture-output ] || exit 64
echo "conda env $3"
shift 4
echo "command $*"
SH
    chmod 755 "$DIR/bin/conda"
}

# The spec of AEGIS's repository, as the issue quotes it.
aegis_example() {
    cat <<'YAML'
version: 1
job:
  conda_env: tf
  command: python train.py --batch_size 32
resources:
  num_gpus: 1
  gpu_memory_requirement_mib: 3352
estimates:
  horus_mib: 93617.0674
  faketensor_mib: 2425.279457
  gpumemnet_mib: 8000
profile:
  peak_memory_mib: 2816
  avg_smact: 41.2
  avg_smocc: 37.8
  avg_drama: 12.4
  profiling_duration_s: 200
  source: lucid_200s_profile
  extra_metrics: {}
online_estimation:
  summary_path: mobilenet_32.model
  parser_arg_1: /raid/datasets/imagenet
  parser_arg_2: 32
YAML
}

# AEGIS's spec format: the example as it is, and variants with nulls and
# comments; conda is looked for on PATH, and its absence named.
case_spec_aegis() {
    start
    cd "$DIR/work"
    fake_conda
    aegis_example > aegis.yaml
    # python is not what runs here: the fake conda prints its command
    PATH=$DIR/bin:$PATH "$AEGIS" submit aegis.yaml > id 2> warn.txt ||
        fail "AEGIS spec refused: $(cat warn.txt)"
    grep -q "aegis.yaml:20: online_estimation: section ignored" warn.txt ||
        fail "no warning for online_estimation: $(cat warn.txt)"
    id=$(cat id)
    "$AEGIS" show --json "$id" | pyjson "
assert d['gpus'] == 1 and d['mem_mib'] == 3352, d
assert d['cmd'][1:5] == ['run', '-n', 'tf', '--no-capture-output'], d['cmd']
assert d['cmd'][5:] == ['/bin/sh', '-c', 'python train.py --batch_size 32'], d['cmd']
m = d['meta']
assert m['estimates'] == {'horus_mib': 93617.0674, 'faketensor_mib': 2425.279457,
                          'gpumemnet_mib': 8000}, m
assert m['profile']['avg_smact'] == 41.2 and m['profile']['source'] == 'lucid_200s_profile', m
assert m['profile']['extra_metrics'] == {} and 'online_estimation' not in m, m" ||
        fail "show: $("$AEGIS" show --json "$id")"
    "$AEGIS" wait "$id" > /dev/null || fail "AEGIS job: $("$AEGIS" show "$id")"
    [ "$("$AEGIS" log "$id")" = "$(printf 'conda env tf\ncommand /bin/sh -c python train.py --batch_size 32')" ] ||
        fail "not run in conda: $("$AEGIS" log "$id")"
    # nulls are absent, comments are comments, 2 GPUs, no conda needed
    cat > nulls.yaml <<'YAML'
# an AEGIS spec without estimates
version: 1   # the format
job:
  conda_env: null
  command: "echo nulls"   # quoted
resources:
  num_gpus: 2
  gpu_memory_requirement_mib: ~
estimates:
  horus_mib: null
  faketensor_mib: 1000
profile:
YAML
    id=$("$AEGIS" submit nulls.yaml 2> warn.txt) || fail "nulls refused: $(cat warn.txt)"
    [ -s warn.txt ] && fail "warned: $(cat warn.txt)"
    "$AEGIS" show --json "$id" | pyjson "
assert d['gpus'] == 2 and d['mem_mib'] is None, d
assert d['cmd'] == ['/bin/sh', '-c', 'echo nulls'], d['cmd']
assert d['meta'] == {'estimates': {'faketensor_mib': 1000}}, d['meta']" ||
        fail "nulls: $("$AEGIS" show --json "$id")"
    "$AEGIS" wait "$id" > /dev/null || fail "nulls job"
    # conda_env without conda on PATH: refused, naming the key and line
    aegis_example > noconda.yaml
    PATH=/usr/bin:/bin aegis_refused "noconda.yaml:3: job.conda_env: " submit noconda.yaml
    grep -q "conda" err.txt || fail "no mention of conda: $(cat err.txt)"
    # a version aegis does not know, and a spec without a command
    printf 'version: 2\njob:\n  command: "true"\n' > v2.yaml
    aegis_refused "v2.yaml:1: version: " submit v2.yaml
    printf 'version: 1\nresources:\n  num_gpus: 1\n' > nocmd.yaml
    aegis_refused "nocmd.yaml:1: job.command: missing" submit nocmd.yaml
    printf 'version: 1\njob:\n  command: "true"\nresources:\n  num_gpus: 1.5\n' > frac.yaml
    aegis_refused "frac.yaml:5: resources.num_gpus: " submit frac.yaml
    # a list where a number goes is named as one (the message quoted ''),
    # and an empty list of jobs is refused before aegisd is asked
    printf 'jobs:\n  - command: "true"\n    gpus: [1]\n' > listgpus.yaml
    aegis_refused "listgpus.yaml:3: gpus: expected a whole number in [1, 64], not a list" \
        submit listgpus.yaml
    printf 'jobs: []\n' > nojobs.yaml
    aegis_refused "nojobs.yaml:1: jobs: an empty list" submit nojobs.yaml
}

# Several dependencies of each kind: repeated and comma-separated --after,
# Slurm's afterok/afterany/afternotok, and jobs of one spec naming each
# other by name, while a number in a spec still means an existing job.
case_spec_after() {
    start
    cd "$DIR/work"
    ok=$("$AEGIS" submit -- "$FAKE" --mib 100 --seconds 1) || fail ok
    bad=$("$AEGIS" submit -- sh -c 'exit 3') || fail bad
    both=$("$AEGIS" submit --after "$ok" --after "$bad" -- true) || fail both
    "$AEGIS" show --json "$both" | pyjson "
assert sorted(x['id'] for x in d['deps']) == [$ok, $bad], d['deps']" ||
        fail "--after twice kept: $("$AEGIS" show --json "$both")"
    comma=$("$AEGIS" submit --after "$ok,afterany:$bad" -- true) || fail comma
    any=$("$AEGIS" submit --after "afterany:$ok:$bad" -- true) || fail any
    notok=$("$AEGIS" submit --after "afternotok:$bad" -- true) || fail notok
    notok2=$("$AEGIS" submit --after "afternotok:$ok" -- true) || fail notok2
    "$AEGIS" wait "$ok" "$bad" "$both" "$comma" "$any" "$notok" "$notok2" > waited
    grep -q "^$both cancelled" waited || fail "afterok of a failure ran: $(cat waited)"
    grep -q "^$comma done" waited || fail "comma: $(cat waited)"
    grep -q "^$any done" waited || fail "afterany: $(cat waited)"
    grep -q "^$notok done" waited || fail "afternotok of a failure: $(cat waited)"
    grep -q "^$notok2 cancelled" waited || fail "afternotok of a success: $(cat waited)"
    aegis_refused "after:" submit --after "after:$ok" -- true
    aegis_refused "no job 999" submit --after 999 -- true
    aegis_refused "--after: 'prep'" submit --after prep -- true
    # names in one spec: the later job runs once the earlier has
    cat > deps.yaml <<'YAML'
jobs:
  - name: prep
    command: sh -c 'sleep 1; echo prepared > prep.txt'
  - name: train
    command: cat prep.txt
    after: prep
  - name: cleanup
    command: echo cleanup
    after:
      - afterany:train
      - prep
YAML
    ids=$("$AEGIS" submit deps.yaml) || fail "named deps refused"
    set -- $ids
    "$AEGIS" wait "$@" > /dev/null || fail "named deps: $("$AEGIS" ls --all)"
    [ "$("$AEGIS" log "$2")" = prepared ] || fail "train ran before prep"
    "$AEGIS" show --json "$3" | pyjson "
assert d['deps'] == [{'id': $2, 'kind': 'afterany'}, {'id': $1, 'kind': 'afterok'}], d['deps']" ||
        fail "cleanup's deps: $("$AEGIS" show --json "$3")"
    # a number is an existing job, a name must be an earlier job of the file
    printf 'command: "true"\nafter: %s\n' "$ok" > num.yaml
    id=$("$AEGIS" submit num.yaml) || fail "after: id"
    "$AEGIS" show --json "$id" | pyjson "assert d['deps'] == [{'id': $ok, 'kind': 'afterok'}], d" ||
        fail "after: id kept"
    printf 'jobs:\n  - command: "true"\n    after: later\n  - name: later\n    command: "true"\n' > fwd.yaml
    aegis_refused "fwd.yaml:3: after: 'later' comes later in the file" submit fwd.yaml
    printf 'jobs:\n  - command: "true"\n    after: nobody\n' > unk.yaml
    aegis_refused "unk.yaml:3: after: no job named 'nobody'" submit unk.yaml
}

# --mem takes units; a size no GPU of the server holds is refused.
case_spec_mem() {
    start
    cd "$DIR/work"
    for m in 4g 4096m 4GiB 4096 4G 4.5g; do
        id=$("$AEGIS" submit --mem "$m" -- true) || fail "--mem $m refused"
        want=4096; [ "$m" = 4.5g ] && want=4608
        "$AEGIS" show --json "$id" | pyjson "assert d['mem_mib'] == $want, d" ||
            fail "--mem $m: $("$AEGIS" show --json "$id")"
    done
    aegis_refused "--mem: '4x'" submit --mem 4x -- true
    aegis_refused "largest GPU of this server holds 40960 MiB" submit --mem 41g -- true
    printf 'command: "true"\nmem: 50g\n' > big.yaml
    aegis_refused "largest GPU" submit big.yaml
    printf 'command: "true"\nmem: 2g\n' > two.yaml
    id=$("$AEGIS" submit two.yaml) || fail "spec mem: 2g"
    "$AEGIS" show --json "$id" | pyjson "assert d['mem_mib'] == 2048, d" || fail "spec mem"
}

# One string with shell syntax runs through /bin/sh -c; a spec file given
# as the command, with options after it, is read as a spec.
case_spec_shell() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit 'echo a && echo b') || fail "shell string"
    "$AEGIS" wait "$id" > /dev/null || fail "shell string job: $("$AEGIS" show "$id")"
    [ "$("$AEGIS" log "$id")" = "$(printf 'a\nb')" ] || fail "log: $("$AEGIS" log "$id")"
    "$AEGIS" show --json "$id" | pyjson "assert d['cmd'] == ['/bin/sh', '-c', 'echo a && echo b'], d" ||
        fail "shell cmd"
    # a single word with no shell syntax stays a program
    id=$("$AEGIS" submit true) && "$AEGIS" show --json "$id" |
        pyjson "assert d['cmd'] == ['true'], d" || fail "plain word"
    printf 'command: echo spec\n' > x.yaml
    id=$("$AEGIS" submit x.yaml --gpus 2 --name late) || fail "spec then options"
    "$AEGIS" show --json "$id" | pyjson "
assert d['gpus'] == 2 and d['name'] == 'late' and d['cmd'][2] == 'echo spec', d" ||
        fail "spec then options: $("$AEGIS" show --json "$id")"
    aegis_refused "x.yaml: a SPEC.yaml takes no command words" submit x.yaml extra
}

# --array RANGE -- CMD: one job per index, AEGIS_ARRAY_INDEX in each.
case_spec_array() {
    start
    cd "$DIR/work"
    ids=$("$AEGIS" submit --array 0-3,7 -- sh -c 'echo "i=$AEGIS_ARRAY_INDEX"') ||
        fail "--array range"
    [ "$(echo $ids | wc -w)" = 5 ] || fail "ids: $ids"
    "$AEGIS" wait $ids > /dev/null || fail "array jobs"
    got=$(for i in $ids; do "$AEGIS" log "$i"; done | tr '\n' ' ')
    [ "$got" = "i=0 i=1 i=2 i=3 i=7 " ] || fail "indices: $got"
    id=$("$AEGIS" submit --array 2-8:3 'echo $AEGIS_ARRAY_INDEX') || fail "step"
    set -- $id
    [ $# = 3 ] || fail "2-8:3: $id"
    "$AEGIS" wait "$@" > /dev/null
    [ "$("$AEGIS" log "$3")" = 8 ] || fail "2-8:3 last: $("$AEGIS" log "$3")"
    aegis_refused "--array: '5-2'" submit --array 5-2 -- true
    aegis_refused "--array: " submit --array 0-200000 -- true
}

# An array as large as the limit fits in one request: its command travels
# once, with the indices. Its jobs wait for a running one, so none runs.
case_spec_array_max() {
    start
    cd "$DIR/work"
    b=$("$AEGIS" submit -- sleep 600) || fail "blocker"
    "$AEGIS" submit --after "$b" --array 0-99999 -- sh -c 'exit 0' > ids.txt ||
        fail "--array 0-99999 refused"
    [ "$(wc -l < ids.txt)" = 100000 ] || fail "$(wc -l < ids.txt) ids"
    "$AEGIS" show --json "$(tail -1 ids.txt)" | pyjson "
assert d['cmd'][:2] == ['/usr/bin/env', 'AEGIS_ARRAY_INDEX=99999'], d['cmd']
assert d['state'] == 'queued', d" || fail "the last job: $("$AEGIS" show "$(tail -1 ids.txt)")"
}

# ls -u USER --state STATE filters the list.
case_spec_ls() {
    start
    cd "$DIR/work"
    a=$("$AEGIS" submit -- true) && b=$("$AEGIS" submit -- sh -c 'exit 1') || fail submit
    "$AEGIS" wait "$a" "$b" > /dev/null
    r=$("$AEGIS" submit -- "$FAKE" --mib 100 --seconds 30) || fail running
    until "$AEGIS" show --json "$r" | pyjson "assert d['state']=='running'" 2>/dev/null; do sleep 0.1; done
    "$AEGIS" ls --state failed --json | pyjson "assert [j['id'] for j in d] == [$b], d" ||
        fail "--state failed"
    "$AEGIS" ls --state done,running --json | pyjson "assert [j['id'] for j in d] == [$a, $r], d" ||
        fail "--state done,running"
    "$AEGIS" ls -u root --state running | grep -q "^$r " || fail "-u root"
    [ "$("$AEGIS" ls -u nobody --all --json)" = "[]" ] || fail "-u nobody"
    aegis_refused "--state: 'sleeping'" ls --state sleeping
    "$AEGIS" cancel "$r" > /dev/null
}

# ls --limit N: the first N jobs, by id, and on stderr how many there are;
# without --limit, 1000 rows of text and every row of JSON. The GPUs are
# drained, so the jobs stay queued.
case_spec_ls_limit() {
    start
    cd "$DIR/work"
    for g in 0 1 2; do "$AEGIS" drain $g > /dev/null; done
    printf 'true\n%.0s' $(seq 1005) > many.txt
    ids=$("$AEGIS" submit --array many.txt) || fail submit
    first=$(echo $ids | cut -d' ' -f1)
    "$AEGIS" ls --limit 2 > out.txt 2> err.txt || fail "--limit 2: $(cat err.txt)"
    [ "$(tail -n +2 out.txt | cut -d' ' -f1 | xargs)" = "$first $((first + 1))" ] ||
        fail "--limit 2: $(cat out.txt)"
    grep -qx "aegis ls: the first 2 of 1005 jobs (--limit 0 lists them all)" err.txt ||
        fail "--limit 2 says: $(cat err.txt)"
    "$AEGIS" ls > out.txt 2> err.txt
    [ "$(wc -l < out.txt)" = 1001 ] && grep -q "first 1000 of 1005" err.txt ||
        fail "default: $(wc -l < out.txt) lines, $(cat err.txt)"
    [ "$("$AEGIS" ls --limit 0 2> err.txt | wc -l)" = 1006 ] && [ ! -s err.txt ] ||
        fail "--limit 0: $(cat err.txt)"
    "$AEGIS" ls --json | pyjson "assert len(d) == 1005, len(d)" || fail "--json: not all"
    "$AEGIS" ls --all --json --limit 3 2> /dev/null |
        pyjson "assert [j['id'] for j in d] == [$first + 1002, $first + 1003, $first + 1004], d" ||
        fail "--all --json --limit 3"
    "$AEGIS" ls -u root --state queued --limit 1 2> err.txt | grep -q "^$first " &&
        grep -q "first 1 of 1005" err.txt || fail "-u with --limit: $(cat err.txt)"
    aegis_refused "--limit: 'x' is not a number" ls --limit x
    aegis_refused "--limit: '-1' is not a number" ls --limit -1
    last=$((first + 1004))
    "$AEGIS" cancel "$last" > /dev/null || fail "cancel $last"
    # --all with a limit: the newest jobs, in id order
    "$AEGIS" ls --all --limit 2 > out.txt 2> err.txt || fail "--all --limit 2"
    [ "$(tail -n +2 out.txt | cut -d' ' -f1 | xargs)" = "$((last - 1)) $last" ] ||
        fail "--all --limit 2: $(cat out.txt)"
    grep -qx "aegis ls: the last 2 of 1005 jobs (--limit 0 lists them all)" err.txt ||
        fail "--all --limit 2 says: $(cat err.txt)"
    # the state and user filter in aegisd, before its limit: the one
    # cancelled job, past the first 1000, of a total that counts it alone
    ls_raw '{"op":"ls","all":true,"states":["cancelled"],"user":"root","limit":1}' |
        pyjson "assert [j['id'] for j in d['jobs']] == [$last] and d['total'] == 1, d" ||
        fail "ls states and user in aegisd"
    ls_raw '{"op":"ls","user":"nobody","limit":5}' |
        pyjson "assert d['jobs'] == [] and d['total'] == 0, d" || fail "ls user nobody"
    "$AEGIS" ls -u 0 --state cancelled > out.txt 2> err.txt &&
        [ "$(tail -n +2 out.txt | cut -d' ' -f1)" = "$last" ] && [ ! -s err.txt ] ||
        fail "-u 0 --state cancelled: $(cat out.txt err.txt)"
    "$AEGIS" ls -u root --limit 3 2> err.txt | grep -q "^$((first + 2)) " &&
        grep -qx "aegis ls: the first 3 of 1004 jobs (--limit 0 lists them all)" err.txt ||
        fail "-u root --limit 3: $(cat err.txt)"
    aegis_refused "--state: name at least one state" ls --state ''
}

# aegisd's answer to the request line $1, on one line.
ls_raw() {
    python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n"); buf = b""
while not buf.endswith(b"\n"):
    chunk = s.recv(1 << 20)
    if not chunk: break
    buf += chunk
sys.stdout.write(buf.decode())' "$AEGIS_SOCKET" "$1"
}

# log --both: stdout and stderr in one stream.
case_spec_log() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit -- sh -c 'echo out1; echo err1 >&2') || fail submit
    "$AEGIS" wait "$id" > /dev/null || fail wait
    "$AEGIS" log --both "$id" > both.txt || fail "log --both"
    grep -qx out1 both.txt && grep -qx err1 both.txt || fail "both: $(cat both.txt)"
    aegis_refused "--both" log --both --stderr "$id"
    "$AEGIS" log --help | grep -q -- "--both" || fail "help lacks --both"
}

# Unknown workload names get the nearest ones; gen-trace --list lists all.
case_spec_names() {
    "$AEGIS" gen-trace --list --catalog "$CATALOG" > names.txt || fail "--list"
    n=$(grep -vc '^#' "$CATALOG"); n=$((n - 1))
    [ "$(wc -l < names.txt)" = "$n" ] || fail "--list: $(wc -l < names.txt) of $n"
    name=$(head -1 names.txt)
    typo=${name%?}
    "$AEGIS" gen-trace --jobs 1 --catalog "$CATALOG" --workloads "$typo" > /dev/null 2> err.txt
    [ $? = 2 ] && grep -qF "did you mean $name" err.txt || fail "gen-trace: $(cat err.txt)"
    printf 'submit_time_s,workload\n0,%s\n' "$typo" > t.csv
    "$AEGIS" sim --trace t.csv --catalog "$CATALOG" > /dev/null 2> err.txt
    [ $? = 2 ] && grep -qF "did you mean $name" err.txt || fail "sim: $(cat err.txt)"
}

cd "$DIR/work" || exit 1
e2e_run
