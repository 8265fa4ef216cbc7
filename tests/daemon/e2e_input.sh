#!/bin/bash
# e2e_input.sh -- end-to-end tests of what aegis and aegisd do with bad
# input: job specs whose values would be dropped or truncated, a working
# directory JSON cannot carry, a SIGHUP to a sharing mode that cannot
# start, an MPS folder other users cannot reach, and a second aegisd given
# a live daemon's socket.
#
# usage: e2e_input.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG CASE
set -u
AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6
source "$(dirname "$0")/e2e_lib.sh"

# `aegis submit ARGS...` exits 2, saying $1 on stderr, and queues nothing.
submit_refused() {
    local want=$1 rc; shift
    "$AEGIS" submit "$@" > out.txt 2> err.txt
    rc=$?
    [ "$rc" = 2 ] || fail "submit $*: exit $rc, not 2 ($(cat out.txt err.txt))"
    grep -qF -- "$want" err.txt || fail "submit $*: '$(cat err.txt)' lacks '$want'"
}

# Values a spec or an option would have lost on the way are refused,
# naming the file, line and key (or the option).
case_input_values() {
    start
    cd "$DIR/work"
    printf 'command: "true"\nafter: nan\n' > after.yaml
    submit_refused "after.yaml:2: after: " after.yaml
    printf 'command: "true"\nmem_mib: nan\n' > mem.yaml
    submit_refused "mem.yaml:2: mem_mib: " mem.yaml
    printf 'jobs:\n  - command: "true"\n    gpus: 1.9\n' > gpus.yaml
    submit_refused "gpus.yaml:3: gpus: '1.9' is not a whole number" gpus.yaml
    printf 'command: "true"\nmps_threads_pct: 50.5\n' > pct.yaml
    submit_refused "pct.yaml:2: mps_threads_pct: " pct.yaml
    printf 'command: "true"\nname: "a\\0b"\n' > nul.yaml
    submit_refused "nul.yaml:2: name: " nul.yaml
    printf 'command: [echo, "a\\0b"]\n' > nulcmd.yaml
    submit_refused "nulcmd.yaml:1: command: " nulcmd.yaml
    submit_refused "--name: not UTF-8" --name $'\xff' -- true
    submit_refused "--feed: not UTF-8" --feed $'\xff' -- true
    printf 'echo a\0b\n' > nul.txt
    submit_refused "nul.txt:1: " --array nul.txt
    # a whole number is written as --gpus takes it: digits (1.0 was
    # taken, 1e3 and 0x1 too)
    printf 'command: "true"\ngpus: 1.0\n' > real.yaml
    submit_refused "real.yaml:2: gpus: '1.0' is not a whole number" real.yaml
    # what stays valid: names in UTF-8
    printf 'command: "true"\ngpus: 1\nname: "\\xff"\n' > ok.yaml
    id=$("$AEGIS" submit ok.yaml) || fail "valid spec refused"
    "$AEGIS" wait "$id" > /dev/null || fail "valid spec's job"
    "$AEGIS" ls --all --json | pyjson "
assert len(d) == 1 and d[0]['name'] == '\u00ff' and d[0]['gpus'] == 1, d" ||
        fail "queued: $("$AEGIS" ls --all --json)"
}

# A working directory that is not UTF-8 cannot travel in JSON: refused with
# a message and exit 2, not exit 1 in silence.
case_input_cwd() {
    start
    mkdir "$DIR/work/"$'\xff' && cd "$DIR/work/"$'\xff' || fail mkdir
    submit_refused "current directory" -- true
    [ "$("$AEGIS" ls --all --json)" = "[]" ] || fail "a job was queued"
}

# A job starts with stdin, stdout and stderr only: ls lists those and the
# folder it reads (3), no descriptor of aegisd's or its watcher's.
case_input_fds() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit -- ls /proc/self/fd) || fail submit
    "$AEGIS" wait "$id" > /dev/null || fail "the job failed"
    [ "$("$AEGIS" log "$id" | tr '\n' ' ')" = "0 1 2 3 " ] ||
        fail "the job's descriptors: $("$AEGIS" log "$id" | tr '\n' ' ')"
}

# Every GPU's sharing mode is naive.
all_naive() {
    "$AEGIS" gpus --json | pyjson "
assert [g['sharing'] for g in d['gpus']] == ['naive'] * 3, d" ||
        fail "modes changed: $("$AEGIS" gpus --json)"
}

# A SIGHUP that would switch a GPU to MPS without a runnable control
# program is refused ("not reloaded", saying why), and the GPUs keep their
# modes; a program that is there but fails leaves that GPU as it was.
case_input_sighup_mps() {
    cp "$DIR/aegis.yaml" "$DIR/base.yaml"
    printf 'mps_control: %s\n' "$DIR/no-such-mps-control" >> "$DIR/aegis.yaml"
    start
    printf 'sharing: mps\nsmact_max: 0.5\n' >> "$DIR/aegis.yaml"
    hup
    grep -q "SIGHUP: configuration not reloaded: .*$DIR/no-such-mps-control" \
        "$DIR/state/aegisd.log" || fail "reload not refused"
    all_naive
    { cat "$DIR/base.yaml"; printf 'mps_control: /bin/false\n'; } > "$DIR/aegis.yaml"
    kill -TERM "$(daemon_pid)"
    while [ -n "$(daemon_pid)" ]; do sleep 0.1; done
    start
    printf 'sharing:\n  default: naive\n  1: mps\n' >> "$DIR/aegis.yaml"
    hup
    grep -q "GPU 1: sharing stays naive" "$DIR/state/aegisd.log" ||
        fail "GPU 1 did not stay naive"
    all_naive
}

# A control daemon that hangs (stopped here) when a SIGHUP takes its GPU
# off MPS: the control program told to quit it hangs too. aegisd waited
# for it for ever, answering nobody; it now kills it after 10 s, says so,
# and answers again.
case_input_mps_hung() {
    local mps daemon="" p; mps=$(dirname "$FAKE")/aegis-fake-mps-control
    cp "$DIR/aegis.yaml" "$DIR/base.yaml"
    printf 'mps_control: %s\nmps_dir: %s\nsharing:\n  default: naive\n  1: mps\n' \
        "$mps" "$DIR/mps" >> "$DIR/aegis.yaml"
    start
    for p in $(pgrep -f -- "$mps -d"); do # this test's, not another's
        tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -q "=$DIR/mps/" &&
            daemon=$p
    done
    [ -n "$daemon" ] || fail "no MPS control daemon of $DIR/mps"
    kill -STOP "$daemon"
    { cat "$DIR/base.yaml"; printf 'mps_control: %s\nmps_dir: %s\n' "$mps" \
        "$DIR/mps"; } > "$DIR/aegis.yaml"
    : > "$DIR/state/aegisd.log"
    kill -HUP "$(daemon_pid)"
    until grep -q "GPU 1: MPS control daemon not stopped: .*did not end within 10 s: killed" \
        "$DIR/state/aegisd.log"; do sleep 0.2; done
    "$AEGIS" gpus > /dev/null || fail "aegisd does not answer"
    kill -CONT "$daemon"
}

# A GPU whose readings fail (the stand-in's energy counter a folder:
# NVML's GPU_IS_LOST) takes no new job, said once in the log, until its
# readings come back: a job started there was never seen active, and
# kept the jobs behind it waiting.
case_input_gpu_lost() {
    start
    : > "$DIR/state/aegisd.log"
    rm -f "$AEGIS_TEST_GPU_DIR/energy1"; mkdir "$AEGIS_TEST_GPU_DIR/energy1"
    wait_until "GPU 1's failure logged" grep -q "GPU 1: .*no new job starts there" \
        "$DIR/state/aegisd.log"
    local ids="" id
    for _ in 1 2 3; do
        id=$("$AEGIS" submit --mem 30000 -- "$FAKE" --mib 100 --seconds 600) ||
            fail "submit"
        ids="$ids $id"
    done
    set -- $ids
    wait_until "job $1 running" is_state "$1" running
    wait_until "job $2 running" is_state "$2" running
    "$AEGIS" show --json "$1" "$2" 2>/dev/null | grep -q '"gpus": "1"' &&
        fail "a job started on GPU 1"
    is_state "$3" queued || fail "job $3: $(job_field "$3" state)"
    [ "$(grep -c "GPU 1: " "$DIR/state/aegisd.log")" = 1 ] ||
        fail "GPU 1's failure said more than once: $(grep "GPU 1: " "$DIR/state/aegisd.log")"
    rmdir "$AEGIS_TEST_GPU_DIR/energy1"
    wait_until "GPU 1 back" grep -q "GPU 1: its readings are back" "$DIR/state/aegisd.log"
    wait_until "job $3 running" is_state "$3" running
    "$AEGIS" cancel $ids > /dev/null
}

# With jobs of other users possible (aegisd runs as root), an MPS folder
# inside the private state folder is warned about at start; one that
# everyone can reach is not.
case_input_mps_dir() {
    [ "$(id -u)" = 0 ] || { echo "needs root: jobs of other users"; exit 77; }
    local mps; mps=$(dirname "$FAKE")/aegis-fake-mps-control
    cp "$DIR/aegis.yaml" "$DIR/base.yaml"
    printf 'sharing: mps\nmps_control: %s\n' "$mps" >> "$DIR/aegis.yaml"
    "$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" \
        --config "$DIR/aegis.yaml" --foreground 2> run1.err &
    local pid=$!
    until "$AEGIS" gpus > /dev/null 2>&1; do
        kill -0 "$pid" 2>/dev/null || fail "aegisd exited: $(cat run1.err)"
        sleep 0.1
    done
    grep -q " warning: .*$DIR/state/mps.*$DIR/state" run1.err ||
        fail "no warning: $(cat run1.err)"
    kill -TERM "$pid"; wait "$pid"
    printf 'mps_dir: %s\n' "$DIR/mps" >> "$DIR/aegis.yaml"
    start 2> run2.err
    grep -q " warning: " run2.err && fail "warned about $DIR/mps: $(cat run2.err)"
    "$AEGIS" gpus --json | pyjson "
assert [g['sharing'] for g in d['gpus']] == ['mps'] * 3, d" || fail "not mps"
}

# Stops the daemon of $DIR/state, if one runs.
daemon_pid_kill() {
    local p; p=$(daemon_pid); [ -n "$p" ] && kill "$p"
}

# refused_start SOCKET STATE WANT WHAT: a foreground aegisd on SOCKET and
# STATE refuses to start (bounded: a wrong one would serve), saying WANT.
refused_start() {
    timeout 20 "$AEGISD" --socket "$1" --state-dir "$2" \
        --config "$DIR/aegis.yaml" --foreground 2> refused.err &&
        fail "aegisd started on $4"
    grep -qF "$3" refused.err || fail "$4: $(cat refused.err)"
}

# A second aegisd, with its own state folder but the live daemon's socket,
# refuses to start and leaves that socket alone; a stale socket (its
# daemon killed) is replaced.
case_input_socket() {
    # the second state folder's daemon is stopped too, whatever happens
    trap 'DIR=$DIR/s2 daemon_pid_kill; cleanup' EXIT
    mkdir "$DIR/s2"
    start
    # (before the fix it took the socket and served)
    refused_start "$AEGIS_SOCKET" "$DIR/s2/state" \
        "$AEGIS_SOCKET: another aegisd answers" "the live socket"
    [ -S "$AEGIS_SOCKET" ] || fail "the live socket was removed"
    "$AEGIS" gpus > /dev/null || fail "the live daemon no longer answers"
    # nor on its state folder, whose spare status files stay the live
    # daemon's (one is left by each settled job)
    "$AEGIS" submit -- true > /dev/null || fail submit
    until_file "$DIR/state/run/0.spare"
    refused_start "$DIR/other.sock" "$DIR/state" \
        "another aegisd uses this state directory" "the live state folder"
    [ -e "$DIR/state/run/0.spare" ] || fail "the live daemon's spares removed"
    # not a socket: not removed either
    refused_start "$DIR/aegis.yaml" "$DIR/state3" "is not a socket" \
        "a regular file"
    grep -q window_samples "$DIR/aegis.yaml" || fail "the config was removed"
    # a stale socket: its daemon is gone, the next one (any state dir) takes it
    kill -KILL "$(daemon_pid)"
    while [ -n "$(daemon_pid)" ]; do sleep 0.1; done
    [ -S "$AEGIS_SOCKET" ] || fail "no stale socket left to test"
    "$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$DIR/s2/state" \
        --config "$DIR/aegis.yaml" || fail "stale socket not replaced"
    AEGIS_SOCKET=$AEGIS_SOCKET "$AEGIS" gpus > /dev/null ||
        fail "the new daemon does not answer"
    DIR=$DIR/s2 daemon_pid_kill
}

# A job name cannot drive another user's terminal: C1 controls and the
# bidirectional overrides, isolates and marks are refused at submit as C0
# controls are, and one stored before (written into the database here)
# shows as '?' in ls, show and report.
case_input_names() {
    start
    cd "$DIR/work"
    for c in $'\xc2\x9b' $'\xe2\x80\xae' $'\xe2\x81\xa6' $'\xe2\x80\x8f'; do
        submit_refused "bidirectional overrides, isolates and marks are not allowed" \
            --name "a${c}b" -- true
    done
    id=$("$AEGIS" submit --name plain -- true) || fail submit
    "$AEGIS" wait "$id" > /dev/null || fail "job $id failed"
    kill -TERM "$(daemon_pid)"
    wait_until "aegisd gone" eval '[ -z "$(daemon_pid)" ]'
    python3 - "$DIR/state/aegis.db" "$id" <<'PY' || fail "database"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE jobs SET name = ? WHERE id = ?",
           ("x\x1b]0;\u009b2J\u202eevil\u2066", int(sys.argv[2])))
db.commit()
PY
    start
    for args in "ls --all" "show $id" "report --since 0"; do
        "$AEGIS" $args > out.txt || fail "aegis $args"
        grep -qF "x?]0;?2J?evil?" out.txt || fail "aegis $args: $(cat -v out.txt)"
        LC_ALL=C grep -q $'\x1b\|\xc2\x9b\|\xe2\x80\xae\|\xe2\x81\xa6' out.txt &&
            fail "aegis $args: raw controls: $(cat -v out.txt)"
    done
}

# Whether file $1 holds, raw, what a terminal would act on: ESC, a C1
# control (U+0080..U+009F) or a bidirectional mark, override or isolate
# (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069).
raw_controls() {
    LC_ALL=C grep -q $'\x1b\|\xc2[\x80-\x9f]\|\xd8\x9c\|\xe2\x80[\x8e\x8f\xaa-\xae]\|\xe2\x81[\xa6-\xa9]' "$1"
}

# Every other text of another user's job that reaches root's terminal is
# made safe as its name is: its directory, notifier, -o path and the
# estimates or profile of an AEGIS spec (keys and values), in show and in
# every --json (there as \u escapes: the same JSON once read). An Arabic
# letter mark (U+061C), a bidirectional mark as U+200E is, is refused in
# a name.
case_input_others_text() {
    needs_root
    start
    cd "$DIR/work"
    submit_refused "bidirectional overrides, isolates and marks are not allowed" \
        --name $'a\xd8\x9cb' -- true
    local bad=$'\xc2\x9b31m\xe2\x80\xae\xd8\x9c'
    mkdir -m 777 "d$bad" && cd "d$bad" || fail mkdir
    printf 'version: 1\njob:\n  command: sleep 120\nprofile:\n  "k\\u009b2J": "v\\u202ex\\u009b31m"\n' > spec.yaml
    id=$(as nobody "$AEGIS" submit --notify "echo $bad" -o "o$bad%j" spec.yaml) ||
        fail "submit: $id"
    cd "$DIR/work"
    for args in "show $id" "show --json $id" "ls --all --json" "report --since 0 --json"; do
        "$AEGIS" $args > out.txt || fail "aegis $args"
        raw_controls out.txt && fail "aegis $args: raw controls: $(cat -v out.txt)"
    done
    "$AEGIS" show --json "$id" | pyjson "
bad = '\x9b31m\u202e\u061c'
assert d['cwd'].endswith('/d' + bad) and d['notify'] == 'echo ' + bad, d
assert d['stdout_path'] == 'o' + bad + '%j', d
assert d['meta'] == {'profile': {'k\x9b2J': 'v\u202ex\x9b31m'}}, d['meta']" ||
        fail "the JSON does not read back the same: $("$AEGIS" show --json "$id")"
    "$AEGIS" show "$id" | grep -qF "notify     echo ?31m??" ||
        fail "show: $("$AEGIS" show "$id" | cat -v)"
}

# `aegis submit SPEC` exits 2 saying $2, its peak memory (RSS) under 256
# MiB: a measure, unlike a ulimit, that a sanitizer's shadow memory keeps.
refused_small() {
    python3 - "$AEGIS" "$1" > rss.txt 2> err.txt <<'PY'
import resource, subprocess, sys
rc = subprocess.run([sys.argv[1], 'submit', sys.argv[2]], timeout=60).returncode
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
    read -r rc kib < rss.txt
    [ "$rc" = 2 ] && grep -qF "$2" err.txt || fail "$1: exit $rc: $(cat err.txt)"
    [ "$kib" -lt 262144 ] || fail "$1: $kib KiB to refuse it"
}

# A spec over the limits is refused before it is parsed, naming the file:
# one of 38 MB by its size (in at most 256 MB of memory; parsing took 2 GB)
# and one of 200 KB nested 100,000 deep at the 65th level (parsing took
# 30 s). One nested 64 deep (the top mapping counts) is parsed. One of 36
# KB whose aliases repeat a job of 4,096 words 6,000 times (2 GiB and
# more, read as it stood) is refused once it has read a million nodes, and
# so is a model description of 42 MB that a spec names, by its size.
case_input_spec_limits() {
    start
    cd "$DIR/work"
    python3 - <<'PY'
open('big.yaml', 'w').write('command: "true"\nx:\n' + '  - 123456789\n' * 3000000)
open('deep.yaml', 'w').write('command: "true"\nx: ' + '[' * 100000 + ']' * 100000 + '\n')
open('ok.yaml', 'w').write('command: "true"\nx: ' + '[' * 63 + ']' * 63 + '\n')
open('alias.yaml', 'w').write('jobs: [&j {command: [' + 'a, ' * 4095 + 'a]}' + ', *j' * 6000 + ']\n')
PY
    refused_small big.yaml \
        "big.yaml: a spec or array file may hold 16777216 bytes (16 MiB) at most; this one holds 42000019"
    refused_small deep.yaml "deep.yaml:2: lists and mappings nested more than 64 deep"
    submit_refused "ok.yaml:2: x: unknown key" ok.yaml
    refused_small alias.yaml \
        "alias.yaml:1: command: the spec expands to more than 1000000 nodes"
    # a model description a spec names is held to the spec's size: one of
    # 40 MB took 828 MB and 4 s to parse before it was refused
    python3 -c "open('big.json', 'w').write('{\"x\": [' + '1, ' * 14000000 + '1]}')"
    printf 'command: "true"\nmodel: big.json\n' > model.yaml
    refused_small model.yaml \
        "big.json: a model description may hold 16777216 bytes (16 MiB) at most"
    # an --array file within the same size, read as far as that (a file
    # without end took all memory), and a folder is no file of commands
    submit_refused "/dev/zero: a spec or array file may hold" --array /dev/zero
    submit_refused "$DIR: Is a directory" --array "$DIR"
    # a spec holds one document, and each key once (the second document
    # was ignored, the later key won)
    printf 'command: "true"\n---\ncommand: "false"\n' > two.yaml
    submit_refused "two.yaml:3: a second YAML document" two.yaml
    printf 'jobs:\n  - command: "true"\n    command: "false"\n' > twice.yaml
    submit_refused "twice.yaml:3: command: given twice" twice.yaml
}

# Numbers on the command line are plain decimal: a leading space, a '+'
# and hex were read as the number after them (drain ' 1' drained GPU 1,
# show +1 showed job 1, --gpu-mem-mib 0x400 was 1024). Refused before
# aegisd is asked, so none runs here.
case_input_cli_numbers() {
    cd "$DIR/work"
    aegis_refused "aegis show: ID: ' 1' is not a whole number" show ' 1'
    aegis_refused "aegis show: ID: '+1' is not a whole number" show +1
    aegis_refused "aegis cancel: ID: '+1' is not a whole number" cancel +1
    aegis_refused "aegis drain: GPU: ' 1' is not a whole number" drain ' 1'
    aegis_refused "aegis sim: --gpu-mem-mib: '0x400' is not a number in [1, 1000000000]" \
        sim --gpu-mem-mib 0x400
    aegis_refused "aegis gen-trace: --mean-gap-s: '0x10' is not a number" \
        gen-trace --jobs 3 --mean-gap-s 0x10
    # GPU memory is at least 1 MiB, as host memory is (0, 0.0001 and
    # 1e-400, which strtod makes 0, queued a job of 0 MiB)
    local m
    for m in 0 0.0001 1e-400; do
        aegis_refused "aegis submit: --gpu-mem, --mem: '$m' is not an amount of memory from 1 MiB to 1 TiB" \
            submit --mem "$m" -- true
        aegis_refused "aegis update: --gpu-mem, --mem: '$m' is not an amount of memory from 1 MiB to 1 TiB" \
            update 5 --gpu-mem "$m"
    done
    # a range's bound in full, not as %g's 1.04858e+06
    aegis_refused "aegis estimate: --cuda-context: '2e6' is not a number in [0, 1048576]" \
        estimate --cuda-context 2e6 x.json
}

# What aegis submit took and should not have: an --array file's UTF-8
# byte order mark as part of its first command (which failed, exit 127),
# an empty command (a shell string of spaces queued; '' said a folder of
# PATH was not a regular file), an empty feed name (aegisd's "no feed"),
# an --after id too large (said to be under 1). A file that is not there
# is named with the command, as every other error is.
case_input_submit_values() {
    start
    cd "$DIR/work"
    printf '\xef\xbb\xbfecho one\r\necho two\r\n' > bom.txt
    ids=$("$AEGIS" submit --array bom.txt) || fail "submit --array bom.txt"
    "$AEGIS" wait $ids > /dev/null || fail "a job of bom.txt failed"
    [ "$("$AEGIS" log $(echo $ids | cut -d' ' -f1))" = one ] ||
        fail "bom.txt's first job: $("$AEGIS" show $(echo $ids | cut -d' ' -f1))"
    submit_refused "aegis submit: the command is empty" ' '
    submit_refused "aegis submit: the command is empty" ''
    submit_refused "aegis submit: the command is empty" --array 0-3 -- ' '
    submit_refused "aegis submit: the command's first word, its program, is empty" '' x
    printf 'command: "  "\n' > blank.yaml
    submit_refused "blank.yaml:1: command: an empty command" blank.yaml
    submit_refused "aegis submit: --feed: the name is empty" --feed '' -- true
    printf 'command: "true"\nfeed: ""\n' > feed.yaml
    submit_refused "feed.yaml:2: feed: the name is empty" feed.yaml
    submit_refused "aegis submit: --after: '99999999999999999999' is too large for a job id" \
        --after 99999999999999999999 -- true
    submit_refused "aegis submit: missing.yaml: No such file or directory" missing.yaml
    submit_refused "aegis submit: /nonexist: No such file or directory" --array /nonexist
    [ "$("$AEGIS" ls --all --json | pyjson 'print(len(d))')" = 2 ] ||
        fail "queued: $("$AEGIS" ls --all)"
}

# What only aegisd can refuse (a job id that is not there, its own
# limits) is said as the option or the spec's key that gave it, and which
# job of a spec: aegisd names its request's fields ("jobs[0].after",
# "drain.reason"), which nobody typed.
case_input_refusals_typed() {
    start
    cd "$DIR/work"
    submit_refused "aegis submit: --after: no job 999" --after 999 -- true
    submit_refused "aegis submit: --gpus: must be a whole number in [1, 8]" \
        --gpus 9 -- true
    printf 'jobs:\n  - command: "true"\n  - command: "true"\n    gpus: 9\n' > two.yaml
    submit_refused "aegis submit: two.yaml: job 2 (line 3): gpus: must be a whole number in [1, 8]" \
        two.yaml
    # an option after the spec is named as the option where the entry
    # does not give the key, as the key where it does
    printf 'jobs:\n  - command: "true"\n  - command: "true"\n' > ok.yaml
    submit_refused "aegis submit: ok.yaml: job 1 (line 2): --after: no job 999" \
        ok.yaml --after 999
    printf 'jobs:\n  - command: "true"\n    after: [998]\n  - command: "true"\n' > after.yaml
    submit_refused "aegis submit: after.yaml: job 1 (line 2): after: no job 998" \
        after.yaml --after 999
    printf 'version: 1\njob:\n  command: "true"\n' > bare.yaml
    submit_refused "aegis submit: bare.yaml: --gpus: must be a whole number in [1, 8]" \
        bare.yaml --gpus 9
    printf 'version: 1\njob:\n  command: "true"\nresources:\n  num_gpus: 9\n' > aegis.yaml
    submit_refused "aegis submit: aegis.yaml: resources.num_gpus: must be a whole number in [1, 8]" \
        aegis.yaml
    printf 'jobs:\n  - command: "true"\n  - command: [no-such-program-x]\n' > gone.yaml
    submit_refused "aegis submit: gone.yaml: job 2 (line 3): no-such-program-x: not found on your PATH" \
        gone.yaml
    printf '# first\ntrue\nno-such-program-x\n' > jobs.txt
    submit_refused "aegis submit: jobs.txt: job 1 (line 2): --after: no job 999" \
        --array jobs.txt --after 999
    aegis_refused "aegis drain: --reason: expected a string of at most 200 bytes" \
        drain 0 --reason "$(printf '%0201d' 0)"
    long=$("$AEGIS" submit -- sleep 600) || fail "submit sleep"
    id=$("$AEGIS" submit --after "$long" -- true) || fail "submit after it"
    aegis_refused "aegis update: --name: expected a string of at most 128 bytes" \
        update "$id" --name "$(printf '%0129d' 0)"
}

# An id named twice is one job: hold, release, cancel and wait each
# report it once (aegisd answers every id of a request: "cancelled 7"
# was printed twice).
case_input_ids_once() {
    start
    cd "$DIR/work"
    long=$("$AEGIS" submit -- sleep 600) || fail submit
    q=$("$AEGIS" submit --after "$long" -- true) || fail "submit queued"
    [ "$("$AEGIS" hold "$q" "$q")" = "held $q" ] || fail "hold $q $q"
    [ "$("$AEGIS" release "$q" "$q")" = "released $q" ] || fail "release $q $q"
    [ "$("$AEGIS" cancel "$q" "$long" "$q" "$long")" = "cancelled $q
cancelled $long" ] || fail "cancel twice"
    [ "$("$AEGIS" wait "$long" "$long" | wc -l)" = 1 ] || fail "wait twice"
}

# `aegis ARGS...` exits 2 with exactly the lines $1 on stderr.
aegis_says() {
    local want=$1 rc; shift
    "$AEGIS" "$@" > out.txt 2> err.txt
    rc=$?
    [ "$rc" = 2 ] || fail "$*: exit $rc, not 2 ($(cat out.txt err.txt))"
    [ "$(cat err.txt)" = "$want" ] || fail "$*: said '$(cat err.txt)', not '$want'"
}

# Bad usage says what is wrong, once, and exits 2: an option of another
# command, a word too many (each said only "bad usage"; report's and
# top's said it after getopt's line, or instead of naming the word), a
# global --socket without its path (taken for a command) or with an
# empty one (the default socket was used), --version with a word after
# it (exit 0), a uid past uid_t (an empty list, exit 0), a bad update
# value (then a usage line claiming a value was missing), a --name that
# is not UTF-8 (left out of the request, the rest updated), --svg with
# --json (the JSON was dropped), --spark with --json or --svg (the
# sparkline was), an empty --svg or backup path (an open of "" failed
# naming nothing; the backup was aimed at the current folder). None
# reaches aegisd, so none runs here.
case_input_cli_usage() {
    cd "$DIR/work"
    local run="Run 'aegis CMD --help' for usage."
    aegis_says "aegis gpus: unknown option '--all'
${run/CMD/gpus}" gpus --all
    aegis_says "aegis resume: unknown option '--reason'
${run/CMD/resume}" resume 0 --reason x
    aegis_says "aegis priority: unexpected argument 'extra'
${run/CMD/priority}" priority extra
    aegis_says "aegis show: unexpected argument '2'
${run/CMD/show}" show 1 2
    aegis_says "aegis show: 1 argument expected, 0 given
${run/CMD/show}" show
    aegis_says "aegis report: unexpected argument 'extra'
${run/CMD/report}" report extra
    aegis_says "aegis report: unrecognized option '--bogus'
${run/CMD/report}" report --bogus
    aegis_says "aegis top: unexpected argument 'extra'
${run/CMD/top}" top -n 1 extra
    aegis_says "aegis: --socket needs a path (try 'aegis --help')" --socket
    aegis_says "aegis: --socket: the path is empty (leave --socket out for \$AEGIS_SOCKET or /run/aegis/aegis.sock)" \
        --socket '' ls
    aegis_says "aegis: --version takes nothing after it ('extra')" --version extra
    aegis_says "aegis ls: -u 99999999999999999999: not a uid (at most 4294967294)" \
        ls --all --user 99999999999999999999
    aegis_says "aegis update: --time: '0' is not a time limit: MINUTES, MM:SS, HH:MM:SS, D-HH:MM:SS, or 90s, 30m, 2h, 1d (from 1 s to 365 days)" \
        update 100052 --time 0
    # a name JSON cannot carry: refused, not left out of the request (the
    # other changes were made, "job N updated", the name never)
    aegis_says "aegis update: --name: not UTF-8 text" \
        update 100052 --name $'x\xff' --time 10
    aegis_says "aegis drain: --reason: not UTF-8 text" drain 0 --reason $'\xff'
    aegis_says "aegis show: --svg and --json: give one of them (the samples are in --json --history)" \
        show 1 --svg x.svg --json
    [ ! -e x.svg ] || fail "show --svg --json wrote x.svg"
    aegis_says "aegis show: --spark and --json: give one of them (the samples are in --json --history)" \
        show 1 --spark --json
    aegis_says "aegis show: --svg and --spark: give one of them (the samples are in --json --history)" \
        show 1 --svg x.svg --spark
    [ ! -e x.svg ] || fail "show --svg --spark wrote x.svg"
    aegis_says "aegis show: --svg: the path is empty ('-' for stdout)" \
        show 1 --svg ''
    aegis_says "aegis db: backup: the path is empty" db backup ''
}

e2e_run
