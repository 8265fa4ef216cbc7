#!/bin/bash
# e2e_fail.sh AEGISD AEGIS NVML FAKE CATALOG CASE -- failures told apart
# (issue 30 item 6): a job whose usage text mentions "CUDA out of memory"
# fails as itself, not as an OOM retried; a framework's OOM line still is
# an OOM; a plain command missing from the user's PATH, or not executable
# by the user, is refused at submit with why, checked as the user; a job
# that runs after another gets a warning instead. An OOM message is
# checked against the GPU's memory at the job's end: printed while its GPU
# had room, the job fails as itself; while its GPU was near full, it is
# retried as an OOM.
set -u; AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6; source "$(dirname "$0")/e2e_lib.sh"

case_fail_usage() {
    start
    cd "$DIR/work"
    cat > usage.sh <<'SH'
#!/bin/sh
echo "usage: train.py [-h] [--retry-oom]" >&2
echo "  --retry-oom  retry when CUDA out of memory is raised" >&2
echo "train.py: error: unrecognized arguments: --bacth" >&2
exit 2
SH
    chmod 755 usage.sh
    id=$("$AEGIS" submit -- ./usage.sh --bacth) || fail submit
    "$AEGIS" wait "$id" > wait.txt && fail "the usage error succeeded"
    grep -q "^$id failed exit 2$" wait.txt || fail "wait: $(cat wait.txt)"
    "$AEGIS" show --json "$id" | pyjson "
assert d['attempts']==1 and d['reason']=='exit 2', d" || fail "retried as an OOM"
    oom=$("$AEGIS" submit -- sh -c 'echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" >&2; exit 1') ||
        fail "submit oom"
    until_job "$oom" "assert d['attempts']>=2 or 'out of GPU memory' in (d['reason'] or ''), d"
}

# A job that holds $1 MiB of its GPU until the file go.$2 exists, then
# says it ran out of GPU memory, as PyTorch does, with no numbers (the
# GPU's last reading with it on it decides).
claims_oom_script() {
    cat > claims.sh <<SH
#!/bin/sh
"$FAKE" --mib \$1 --seconds 0 --until "$DIR/work/go.\$2" || exit 3
echo "torch.OutOfMemoryError: CUDA out of memory." >&2
exit 1
SH
    chmod 755 claims.sh
}

case_fail_oom_room() {
    start
    cd "$DIR/work"
    claims_oom_script
    id=$("$AEGIS" submit -- ./claims.sh 2000 room) || fail submit
    # seen on its GPU: the reading its message is checked against is taken
    until_job "$id" "assert d['active'], d"
    touch go.room
    "$AEGIS" wait "$id" > wait.txt && fail "the claim succeeded"
    "$AEGIS" show --json "$id" | pyjson "
import re
assert d['attempts']==1 and d['attempt_list'][0]['how']=='failed', d
assert re.fullmatch(r'exit 1: stderr says out of GPU memory \\(\"CUDA out of memory\"\\), '
    r'but GPU [0-2] had 38,960 of 40,960 MiB free at its last sample: '
    r'not retried as an OOM', d['reason']), d['reason']" ||
        fail "retried as an OOM: $("$AEGIS" show "$id")"
}

# Beside a neighbour's 30000 MiB, a job that holds 6000 more leaves 4960
# of 40960 free (12%, under the 30% margin): its message stands, and it is
# requeued up the ladder as an OOM.
case_fail_oom_full() {
    export AEGIS_TEST_GPUS=1x40960
    start
    cd "$DIR/work"
    claims_oom_script
    big=$("$AEGIS" submit --name neighbour --mem 30000 -- \
          "$FAKE" --mib 30000 --seconds 0 --until "$DIR/work/go.big") ||
        fail "submit neighbour"
    until_job "$big" "assert d['state']=='running' and d['active'], d"
    id=$("$AEGIS" submit --mem 4000 -- ./claims.sh 6000 full) || fail submit
    until_job "$id" "assert d['active'], d"
    touch go.full
    until_job "$id" "assert d['attempt_list'][0]['how']=='oom', d"
    "$AEGIS" show "$id" | grep -q 'attempt 1: exit 1, out of GPU memory ("CUDA out of memory" on stderr); requeued' ||
        fail "not requeued as an OOM: $("$AEGIS" show "$id")"
    touch go.big
    "$AEGIS" cancel "$id" > /dev/null 2>&1
}

case_fail_missing() {
    needs_root
    start
    cd "$DIR/work"
    aegis_refused "aegis submit: no-such-trainer: not found on your PATH" submit -- no-such-trainer --epochs 3
    printf '#!/bin/sh\necho private\n' > private.sh
    chmod 700 private.sh
    as nobody "$AEGIS" submit -- "$DIR/work/private.sh" 2> err.txt && fail "nobody ran root's 0700 script"
    grep -q "private.sh: not executable by you (mode 0700)" err.txt ||
        fail "not executable: $(cat err.txt)"
    "$AEGIS" ls --all --json | pyjson "assert d==[], d" || fail "a refused job was queued"
    # root may execute it: queued and run
    ok=$("$AEGIS" submit -- ./private.sh) || fail "root's own script refused"
    "$AEGIS" wait "$ok" > /dev/null || fail "root's script"
    # a shell string, and a job after another, are queued
    sh=$("$AEGIS" submit 'no-such-trainer || true') || fail "shell string refused"
    later=$("$AEGIS" submit --after "$ok" -- ./built-later.sh 2> err.txt) ||
        fail "an --after job refused: $(cat err.txt)"
    grep -q "warning: \./built-later.sh: No such file" err.txt ||
        fail "no warning: $(cat err.txt)"
    "$AEGIS" wait "$sh" > /dev/null || fail "the shell string job"
}

e2e_run
