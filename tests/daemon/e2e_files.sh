#!/bin/bash
# e2e_files.sh -- aegisd and the files jobs can reach: leases on a job's
# log, logs left from an earlier database, the job's own PATH, the state
# folder's owner and links planted in it, and the cap on each log.
#
# usage: e2e_files.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG CASE
set -u
AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6
source "$(dirname "$0")/e2e_lib.sh"

needs_root() {
    [ "$(id -u)" = 0 ] || { echo "needs root to run jobs as other users"; exit 77; }
}
as() { local u=$1; shift; runuser -u "$u" -- env AEGIS_SOCKET="$AEGIS_SOCKET" \
       AEGIS_TEST_GPU_DIR="$AEGIS_TEST_GPU_DIR" "$@"; }
# Polls a shell condition for up to $1 seconds.
await() {
    local deadline=$((SECONDS + $1)); shift
    until eval "$1"; do
        [ $SECONDS -lt $deadline ] || fail "timed out waiting for: $1"
        sleep 0.05
    done
}
stop() {
    local p; p=$(daemon_pid); [ -n "$p" ] || return 0
    kill -TERM "$p"; await 20 '[ -z "$(daemon_pid)" ]'
}

# A process of the job's user takes a write lease (fcntl F_SETLEASE) on
# both the job's logs once the shim has let go of them, at the job's end,
# and holds it: aegisd must neither classify the job's exit nor answer
# `aegis log` only after the kernel's 45 s lease-break time. aegisd is
# stopped while the job ends so that the lease is taken before it reads the
# stderr tail. The process is not the job's (the shim kills what is left of
# a job when it ends): the test starts it.
case_files_lease() {
    start
    cd "$DIR/work"
    cat > lease.py <<'PY'
import fcntl, os, signal, sys, time
logs, work, job = sys.argv[1], sys.argv[2], sys.argv[3]
signal.signal(signal.SIGIO, signal.SIG_IGN)  # a lease break's signal
held = []
deadline = time.time() + 30
for name in (job + '.out', job + '.err'):
    fd = os.open(logs + '/' + name, os.O_RDONLY)
    while True:
        try:
            fcntl.fcntl(fd, 1024, fcntl.F_WRLCK)  # F_SETLEASE
            break
        except OSError:  # EAGAIN while the shim still writes it
            if time.time() > deadline: sys.exit(1)
            time.sleep(0.02)
    held.append(fd)
open(work + '/leased', 'w').close()
while os.path.exists(work) and time.time() < deadline + 30:
    time.sleep(0.2)  # holds the leases until the test is over
PY
    id=$("$AEGIS" submit -- sh -c 'echo hello; until [ -e go ]; do sleep 0.02; done
        exit 3') || fail submit
    await 20 '"$AEGIS" show --json "$id" | pyjson "assert d[\"state\"]==\"running\"" 2>/dev/null'
    daemon=$(daemon_pid)
    kill -STOP "$daemon"
    python3 lease.py "$DIR/state/logs" "$DIR/work" "$id" < /dev/null &
    leaser=$!
    touch go
    await 30 '[ -e leased ]'
    kill -CONT "$daemon"
    # 20 s: room for a loaded machine, well short of the 45 s a lease holds
    timeout 20 "$AEGIS" wait "$id" > wait.out
    rc=$?
    [ $rc = 124 ] && fail "wait took over 20 s: aegisd blocked on the leased stderr"
    grep -q "failed.*exit 3.*lease" wait.out || fail "wait: $(cat wait.out)"
    timeout 20 "$AEGIS" log "$id" > log.out 2> log.err
    rc=$?
    [ $rc = 124 ] && fail "log took over 20 s: aegisd blocked on the leased log"
    [ $rc = 1 ] && grep -q "lease" log.err || fail "log: rc $rc, $(cat log.out log.err)"
    timeout 20 "$AEGIS" gpus > /dev/null || fail "gpus did not answer"
    kill "$leaser"
}

# Logs outlive a reset of the database: aegisd refuses to start on a new
# (missing or empty) database beside them, and a job never writes into, or
# takes over, a log that is not its user's (a database restored from a
# backup hands out ids again).
case_files_dbreset() {
    needs_root
    start
    stop
    cp "$DIR/state/aegis.db" "$DIR/empty.db"
    start
    cd "$DIR/work"
    id=$(as daemon "$AEGIS" submit -- sh -c 'echo secret-of-daemon') || fail submit
    "$AEGIS" wait "$id" > /dev/null || fail "first job"
    stop
    rm -f "$DIR/state"/aegis.db*
    "$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" \
        --config "$DIR/aegis.yaml" 2> start.err &&
        fail "started on a new database beside old logs"
    grep -q "logs" start.err || fail "no word of the logs: $(cat start.err)"
    : > "$DIR/state/aegis.db"
    "$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" \
        --config "$DIR/aegis.yaml" 2> start.err &&
        fail "started on an empty database beside old logs"
    cp "$DIR/empty.db" "$DIR/state/aegis.db"
    start
    id2=$(as nobody "$AEGIS" submit -- sh -c 'echo mine') || fail "submit as nobody"
    [ "$id2" = "$id" ] || fail "expected id $id again, got $id2"
    as nobody "$AEGIS" wait "$id2" > wait.out
    grep -q "failed.*log" wait.out || fail "job given another user's log: $(cat wait.out)"
    as nobody "$AEGIS" log "$id2" 2>&1 | grep -q secret && fail "old log readable by the new owner"
    [ "$(stat -c %U "$DIR/state/logs/$id.out")" = daemon ] || fail "old log handed over"
}

# The command is looked up in the job's own PATH, as its user.
case_files_path() {
    needs_root
    start
    mkdir -m 755 "$DIR/bin"
    printf '#!/bin/sh\necho found-by-$(id -un)\n' > "$DIR/bin/aegis-only-here"
    chmod 755 "$DIR/bin/aegis-only-here"
    cd "$DIR/work"
    id=$(PATH=$DIR/bin:$PATH "$AEGIS" submit -- aegis-only-here) || fail submit
    id2=$(as nobody env PATH="$DIR/bin:/usr/bin:/bin" "$AEGIS" submit -- aegis-only-here) ||
        fail "submit as nobody"
    "$AEGIS" wait "$id" "$id2" > wait.out || fail "not run: $(cat wait.out)"
    [ "$("$AEGIS" log "$id")" = found-by-root ] || fail "log: $("$AEGIS" log "$id")"
    [ "$("$AEGIS" log "$id2")" = found-by-nobody ] || fail "log2: $("$AEGIS" log "$id2")"
}

# aegisd refuses a state folder (or logs/, run/) another user owns or may
# write to, and never follows a link planted at a log's name.
case_files_statedir() {
    needs_root
    refused() {
        "$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" \
            --config "$DIR/aegis.yaml" 2> start.err && fail "started: $1"
        grep -q "$2" start.err || fail "$1: no word of $2: $(cat start.err)"
    }
    cd "$DIR/work"
    mkdir -m 700 "$DIR/state"
    chown nobody "$DIR/state"
    refused "state folder owned by nobody" "$DIR/state"
    chown root "$DIR/state"
    chmod 777 "$DIR/state"
    refused "state folder writable by all" "$DIR/state"
    chmod 700 "$DIR/state"
    mkdir -m 700 "$DIR/state/logs"
    chown nobody "$DIR/state/logs"
    refused "logs/ owned by nobody" "$DIR/state/logs"
    rm -rf "$DIR/state"
    start
    echo precious > "$DIR/victim"
    chmod 644 "$DIR/victim"
    ln -s "$DIR/victim" "$DIR/state/logs/1.out"
    id=$(as nobody "$AEGIS" submit -- sh -c 'echo pwned') || fail "submit as nobody"
    [ "$id" = 1 ] || fail "expected job 1, got $id"
    "$AEGIS" wait "$id" > wait.out && fail "ran with a planted log link"
    [ "$(cat "$DIR/victim")" = precious ] || fail "the link was followed"
    [ "$(stat -c %U:%a "$DIR/victim")" = root:644 ] || fail "the link's target changed hands"
}

# Each log keeps at most log_max_mib of its end: a job writing 20 MiB to
# each stream leaves about 1 MiB of each, with its last line, and an OOM
# message at the end of a long stderr is still found.
case_files_logcap() {
    echo "log_max_mib: 1" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit -- sh -c 'yes 0123456789abcdef | head -n 1200000
        echo last-out; yes e | head -n 10000000 >&2; echo last-err >&2') || fail submit
    "$AEGIS" wait "$id" > /dev/null || fail "job failed"
    for s in out err; do
        f=$DIR/state/logs/$id.$s
        disk=$(($(stat -c '%b * %B' "$f")))
        [ "$disk" -le $((1200 * 1024)) ] || fail "$f takes $disk bytes on disk"
    done
    "$AEGIS" log "$id" > log.out || fail "log"
    [ "$(tail -n 1 log.out)" = last-out ] || fail "last line of stdout lost"
    [ "$(wc -c < log.out)" -le $((1024 * 1024 + 65536)) ] || fail "log gave $(wc -c < log.out) bytes"
    [ "$("$AEGIS" log --stderr "$id" | tail -n 1)" = last-err ] || fail "last line of stderr lost"
    id2=$("$AEGIS" submit -- sh -c 'yes e | head -n 10000000 >&2
        echo "CUDA out of memory" >&2; exit 1') || fail submit2
    await 30 '"$AEGIS" show "$id2" | grep -q "exit 1, out of GPU memory"'
    "$AEGIS" cancel "$id2" > /dev/null 2>&1
    "$AEGIS" wait "$id2" > /dev/null
}

e2e_run
