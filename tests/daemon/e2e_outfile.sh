#!/bin/bash
# e2e_outfile.sh AEGISD AEGIS NVML FAKE CATALOG CASE -- a job's own
# output files (issue 30 item 10): -o and -e patterns with %j, %x, %u
# and %a, opened by the job's process as its user (a folder the user may
# not write is refused to the job, even though aegisd runs as root), while
# aegisd keeps reading the pipes: `aegis log` has the output, and an OOM
# message written to the -e file is still classified.
set -u; AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6; source "$(dirname "$0")/e2e_lib.sh"

case_outfile_patterns() {
    needs_root
    start
    cd "$DIR/work"
    id=$(as nobody "$AEGIS" submit --name nm -o 'out-%j-%u.txt' -e 'err-%x.txt' \
        -- sh -c 'echo hello; echo oops >&2') || fail submit
    as nobody "$AEGIS" wait "$id" > /dev/null || fail "job failed: $("$AEGIS" log --stderr "$id")"
    [ "$(cat "out-$id-nobody.txt")" = hello ] || fail "-o file: $(ls)"
    [ "$(cat err-nm.txt)" = oops ] || fail "-e file: $(ls)"
    [ "$(stat -c %U "out-$id-nobody.txt")" = nobody ] || fail "not the user's file"
    [ "$("$AEGIS" log "$id")" = hello ] || fail "aegis log lost the output"
    [ "$("$AEGIS" log --stderr "$id")" = oops ] || fail "aegis log --stderr"
    # appended, as Slurm's --open-mode=append
    again=$(as nobody "$AEGIS" submit --name nm -e 'err-%x.txt' -- sh -c 'echo twice >&2') ||
        fail "submit again"
    as nobody "$AEGIS" wait "$again" > /dev/null || fail "again failed"
    [ "$(cat err-nm.txt)" = "oops
twice" ] || fail "not appended: $(cat err-nm.txt)"
    arr=$(as nobody "$AEGIS" submit --array 0-1 -o 'arr-%a.txt' -- sh -c 'echo $AEGIS_ARRAY_INDEX' |
          tr '\n' ' ') || fail "submit array"
    as nobody "$AEGIS" wait $arr > /dev/null || fail "array failed"
    [ "$(cat arr-0.txt)" = 0 ] && [ "$(cat arr-1.txt)" = 1 ] || fail "%a: $(ls)"
    # an array file's jobs: the line's number (%a was empty, one file)
    printf 'echo first\n# a comment\necho third\n' > lines.txt
    arr=$(as nobody "$AEGIS" submit --array lines.txt -o 'line-%a.txt' | tr '\n' ' ') ||
        fail "submit array file"
    as nobody "$AEGIS" wait $arr > /dev/null || fail "array file failed"
    [ "$(cat line-1.txt)" = first ] && [ "$(cat line-3.txt)" = third ] ||
        fail "%a of an array file: $(ls line-*)"
    # a bad pattern is refused at submit (it was taken, and failed the
    # job when it ran)
    aegis_refused "%q is not a field" submit -o 'x-%q' -- true
    aegis_refused "'x%': ends in a lone % (%% for a %)" submit -o 'x%' -- true
    aegis_refused "longer than 4095 bytes" submit -e "$(printf 'x%.0s' {1..4000})-%x" -- true
}

# The file is opened as the user: a folder only root may write is refused
# to the job, which fails with why on its stderr (aegis log --stderr).
case_outfile_as_user() {
    needs_root
    start
    cd "$DIR/work"
    mkdir -m 755 rootonly
    id=$(as nobody "$AEGIS" submit -o rootonly/out.txt -- echo hi) || fail submit
    as nobody "$AEGIS" wait "$id" > wait.txt && fail "wrote into root's folder"
    grep -q "^$id failed exit 126$" wait.txt || fail "wait: $(cat wait.txt)"
    [ ! -e rootonly/out.txt ] || fail "the file was made"
    "$AEGIS" log --stderr "$id" | grep -q "cannot open its output file (rootonly/out.txt): Permission denied" ||
        fail "stderr: $("$AEGIS" log --stderr "$id")"
    # an OOM message going to an -e file is still read from the pipe
    oom=$("$AEGIS" submit -e oom.txt -- sh -c 'echo "torch.OutOfMemoryError: CUDA out of memory." >&2; exit 1') ||
        fail "submit oom"
    until_job "$oom" "assert d['attempts']>=2 or 'out of GPU memory' in (d['reason'] or ''), d"
    grep -q "CUDA out of memory" oom.txt || fail "the -e file: $(cat oom.txt)"
}

# A job makes its files under its submitter's umask (as Slurm passes it),
# not aegisd's 022: its -o file and what it writes itself, and another
# user sees neither the umask nor the -o pattern.
case_outfile_umask() {
    needs_root
    start
    cd "$DIR/work"
    chmod 777 .
    id=$(as nobody sh -c "umask 077; \"$AEGIS\" submit -o private.out -- sh -c 'umask; echo s > made.txt'") ||
        fail submit
    "$AEGIS" wait "$id" > /dev/null || fail "the job failed"
    [ "$(cat private.out)" = 0077 ] || fail "the job's umask: $(cat private.out)"
    [ "$(stat -c %a private.out made.txt | tr '\n' ' ')" = "600 600 " ] ||
        fail "modes: $(stat -c '%n %a' private.out made.txt)"
    as daemon "$AEGIS" show --json "$id" | pyjson "
assert 'stdout_path' not in d and 'umask' not in d and 'cwd' not in d, d" ||
        fail "another user sees the -o pattern or the umask"
}

e2e_run
