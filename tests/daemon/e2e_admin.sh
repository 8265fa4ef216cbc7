#!/usr/bin/env bash
# e2e_admin.sh -- what an admin meets running aegisd for a lab: its log
# (timestamped, levelled, its start-up lines; the journal's form; JSON),
# --check-config reporting every problem at once, its options checked
# before it starts, a missing socket folder named as such, socket_group,
# the test GPU shared by several users' jobs, and a job getting its
# user's limits as a login shell does (PAM).
set -u; AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6; source "$(dirname "$0")/e2e_lib.sh"
cd "$DIR/work"

# Waits until the socket answers (aegisd started in the foreground).
until_listening() {
    wait_until "aegisd listening" "$AEGIS" gpus >/dev/null 2>&1
}
stop_daemon() {
    "$AEGIS" shutdown >/dev/null || fail "aegis shutdown"
}
TS='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'

case_admin_log() {
    PORT=$(free_port)
    echo "metrics_listen: 127.0.0.1:$PORT" >> "$DIR/aegis.yaml"
    start
    stop_daemon
    wait_until "aegisd stopped" test -z "$(daemon_pid)"
    local log=$DIR/state/aegisd.log
    # every line: time, level, message
    grep -Evq "^$TS (info|warning|error): " "$log" && fail "a line without time and level"
    for want in "info: GPU 0: .*GPU-" "info: GPU 2: " "recovered 0 unfinished jobs" \
                "listening on $AEGIS_SOCKET" \
                "serving metrics on http://127.0.0.1:$PORT/metrics" \
                "info: stopped"; do
        grep -Eq "$want" "$log" || fail "no start-up line '$want'"
    done
    # Under the journal (stderr is the stream JOURNAL_STREAM names): no
    # time of its own, the priority as <N>.
    : > "$DIR/journal"
    JOURNAL_STREAM=$(stat -c '%d:%i' "$DIR/journal") \
        "$AEGISD" --foreground --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" \
        --config "$DIR/aegis.yaml" 2>>"$DIR/journal" &
    until_listening
    stop_daemon
    wait "$!"
    grep -q "^<6>recovered 0 unfinished jobs" "$DIR/journal" || fail "journal: $(cat "$DIR/journal")"
    grep -Eq "^$TS" "$DIR/journal" && fail "journal lines carry their own time"
    # JSON: one object a line
    "$AEGISD" --foreground --log-format json --socket "$AEGIS_SOCKET" \
        --state-dir "$DIR/state" --config "$DIR/aegis.yaml" 2>"$DIR/json" &
    until_listening
    stop_daemon
    wait "$!"
    python3 - "$DIR/json" <<'PY' || fail "json log: $(cat "$DIR/json")"
import json, sys
recs = [json.loads(line) for line in open(sys.argv[1])]
assert recs and all(set(r) == {"time", "level", "message"} for r in recs), recs
assert any(r["message"].startswith("listening on ") for r in recs), recs
PY
    "$AEGISD" --log-format xml --check-config "$DIR/aegis.yaml" 2>/dev/null
    [ $? = 2 ] || fail "--log-format xml accepted"
}

case_admin_check() {
    printf 'policy: fifo\nwindow_samplez: 3\nsharing:\n  default: mps\n  x: mig\npue: 0.5\nsocket_group: no-such-group-e2e\nobserve_s: 1\n' \
        > "$DIR/bad.yaml"
    "$AEGISD" --check-config "$DIR/bad.yaml" > "$DIR/out" 2> "$DIR/err"
    [ $? = 2 ] || fail "bad config: not exit 2"
    for want in "bad.yaml:1: .*'fifo' \(valid: .*aegis-plus" "bad.yaml:2: .*window_samplez" \
                "bad.yaml:5: sharing: x" "bad.yaml:6: pue" "bad.yaml:7: socket_group: no group"; do
        grep -Eq "^aegisd: $DIR/$want" "$DIR/err" || fail "no '$want' in: $(cat "$DIR/err")"
    done
    [ "$(wc -l < "$DIR/err")" = 5 ] || fail "not one line a problem: $(cat "$DIR/err")"
    # it checks one file and starts nothing: another option is bad usage
    printf 'policy: aegis\n' > "$DIR/good.yaml"
    "$AEGISD" --check-config "$DIR/good.yaml" --config "$DIR/bad.yaml" \
        > "$DIR/out" 2> "$DIR/err"
    [ $? = 2 ] && grep -q -- "--config was given" "$DIR/err" ||
        fail "--check-config with --config: $(cat "$DIR/err")"
    # aegisd itself refuses it at start with the same lines, in its log
    "$AEGISD" --foreground --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" \
        --config "$DIR/bad.yaml" 2> "$DIR/start.err"
    [ $? = 1 ] || fail "aegisd started with a bad config"
    [ "$(grep -c "error: $DIR/bad.yaml:" "$DIR/start.err")" = 5 ] ||
        fail "start: $(cat "$DIR/start.err")"
}

case_admin_socketdir() {
    AEGIS_SOCKET=$DIR/no-such-folder/aegis.sock
    "$AEGISD" --foreground --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" \
        --config "$DIR/aegis.yaml" 2> "$DIR/err"
    [ $? = 1 ] || fail "started without its socket's folder"
    grep -q "error: $AEGIS_SOCKET: no such folder $DIR/no-such-folder" "$DIR/err" ||
        fail "the cause is not named: $(cat "$DIR/err")"
    grep -qi "permission denied" "$DIR/err" && fail "said permission denied"
}

# aegisd's options are checked before it starts: an empty path, or a
# --socket path longer than a Unix socket's address holds, is bad usage
# (exit 2) naming the option, and a word too many is named. Before, an
# empty --socket served on an abstract socket no client finds, a long one
# on a path cut to 107 bytes, and an empty --state-dir failed with
# ": No such file or directory".
case_admin_usage() {
    local long=$DIR/$(printf 's%.0s' $(seq 100))
    refused() { # WANT ARGS...: exit 2 with WANT (a fixed string) on stderr
        local want=$1; shift
        "$AEGISD" "$@" > "$DIR/out" 2> "$DIR/err"
        local rc=$?
        [ "$rc" = 2 ] || fail "$*: exit $rc, not 2 ($(cat "$DIR/err"))"
        grep -qF -- "$want" "$DIR/err" || fail "$*: '$(cat "$DIR/err")' lacks '$want'"
    }
    refused "aegisd: --socket: the path is empty" \
        --socket "" --state-dir "$DIR/state"
    refused "aegisd: --socket: '$long' is longer than 107 bytes" \
        --socket "$long" --state-dir "$DIR/state"
    refused "aegisd: --state-dir: the path is empty" \
        --socket "$AEGIS_SOCKET" --state-dir ""
    refused "aegisd: --config: the path is empty" \
        --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" --config ""
    refused "aegisd: --nvml-library: the path is empty" \
        --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" --nvml-library ""
    refused "aegisd: --check-config: the path is empty" --check-config ""
    refused "aegisd: unexpected argument 'extra'" \
        --check-config "$DIR/aegis.yaml" extra
    [ -z "$(daemon_pid)" ] || fail "aegisd started"
    [ ! -e "${long:0:107}" ] || fail "aegisd bound a cut path"
}

case_admin_group() {
    needs_root
    local group
    group=$(id -gn daemon)
    echo "socket_group: $group" >> "$DIR/aegis.yaml"
    start
    [ "$(stat -c '%a %G' "$AEGIS_SOCKET")" = "660 $group" ] ||
        fail "socket: $(stat -c '%a %G' "$AEGIS_SOCKET")"
    grep -q "listening on $AEGIS_SOCKET (mode 0660: .*group $group)" \
        "$DIR/state/aegisd.log" || fail "the log does not say who may connect"
    as daemon "$AEGIS" ls >/dev/null || fail "a member of $group cannot connect"
    as nobody "$AEGIS" ls >/dev/null 2>&1 && fail "nobody (not in $group) connected"
    stop_daemon
}

# The test GPU of a root aegisd, used by two users' jobs whose own
# environments name no test GPU, under aegisd's umask 077: each job's
# allocation is readable by the others (0644), and both run.
case_admin_testgpu() {
    needs_root
    export AEGIS_TEST_GPUS=1x40960
    ( umask 077; start )
    local ids=() u
    for u in daemon nobody; do
        ids+=("$(runuser -u "$u" -- env -u AEGIS_TEST_GPUS -u AEGIS_TEST_GPU_DIR \
                 AEGIS_SOCKET="$AEGIS_SOCKET" "$AEGIS" submit --mem 2000 -- \
                 "$FAKE" --mib 2000 --seconds 60)") || fail "submit as $u"
    done
    # both run on the one GPU, side by side, each seeing the other's memory
    for id in "${ids[@]}"; do until_job "$id" "assert d['state'] == 'running'"; done
    wait_until "both jobs' allocations" \
        sh -c "[ \$(ls '$AEGIS_TEST_GPU_DIR' | grep -c '^gpu0[.]') = 2 ]"
    for f in "$AEGIS_TEST_GPU_DIR"/gpu0.* "$AEGIS_TEST_GPU_DIR"/lock; do
        [ "$(stat -c %a "$f")" = 644 ] || fail "$f: mode $(stat -c %a "$f")"
    done
    "$AEGIS" cancel "${ids[@]}" >/dev/null || fail "cancel"
    stop_daemon
}

# A job sees what a login shell of its user sees: limits (through aegis's
# PAM service, pam_limits), groups, /tmp, /home and /dev. A group the
# user joins after the launcher started (it loads the group database's
# modules once) is among the job's groups.
case_admin_login() {
    needs_root
    # not local: the EXIT trap runs after this function has returned (as
    # locals, they were gone then, and the user and file stayed behind)
    lim_user=aegis-e2e-lim lim_file=/etc/security/limits.d/aegis-e2e-$$.conf
    lim_group=aegis-e2e-g$$
    local user=$lim_user limits=$lim_file
    userdel "$user" >/dev/null 2>&1
    useradd -M -N -s /bin/sh "$user" || fail "useradd"
    trap 'userdel "$lim_user" 2>/dev/null; groupdel "$lim_group" 2>/dev/null; rm -f "$lim_file"; cleanup' EXIT
    printf '%s soft nofile 777\n%s hard nofile 888\n' "$user" "$user" > "$limits"
    mkdir "$DIR/pam"
    cp "$(dirname "$0")/../../src/daemon/aegis.pam" "$DIR/pam/aegis"
    AEGIS_PAM_DIR=$DIR/pam start
    id=$(runuser -u "$user" -- env AEGIS_SOCKET="$AEGIS_SOCKET" "$AEGIS" submit -- true) ||
        fail "submit as $user"
    "$AEGIS" wait "$id" >/dev/null || fail "job $id (the launcher's first)"
    groupadd "$lim_group" && usermod -a -G "$lim_group" "$user" || fail "groupadd"
    local gid
    gid=$(getent group "$lim_group" | cut -d: -f3)
    local probe='ulimit -Sn; ulimit -Hn; id -u; id -G; test -w /tmp && echo tmp; ls -d /home /dev/null'
    id=$(runuser -u "$user" -- env AEGIS_SOCKET="$AEGIS_SOCKET" "$AEGIS" submit -- sh -c "$probe") ||
        fail "submit as $user"
    "$AEGIS" wait "$id" >/dev/null || fail "job $id: $("$AEGIS" log --stderr "$id")"
    "$AEGIS" log "$id" > "$DIR/job.txt"
    (cd / && runuser -l "$user" -c "$probe") > "$DIR/login.txt"
    diff "$DIR/login.txt" "$DIR/job.txt" >&2 || fail "the job sees other than a login shell"
    grep -qx 777 "$DIR/job.txt" || fail "limits.conf not applied: $(cat "$DIR/job.txt")"
    # (line 4 is id -G's: the uid on line 3 may be the same number)
    sed -n 4p "$DIR/job.txt" | tr ' ' '\n' | grep -qx "$gid" ||
        fail "group $lim_group ($gid) not the job's: $(cat "$DIR/job.txt")"
    stop_daemon
}

# The completion offers the ids of the jobs aegisd lists after a command
# that takes an ID (pkg/aegis.bash).
case_admin_completion() {
    start
    local id
    id=$("$AEGIS" submit --name comp -- "$FAKE" --mib 100 --seconds 60) || fail "submit"
    source "$(dirname "$0")/../../pkg/aegis.bash"
    COMP_WORDS=("$AEGIS" show "") COMP_CWORD=2
    _aegis
    [ "${COMPREPLY[*]}" = "$id" ] || fail "aegis show <TAB>: '${COMPREPLY[*]}', not $id"
    COMP_WORDS=("$AEGIS" cancel "") COMP_CWORD=2
    _aegis
    [ "${COMPREPLY[*]}" = "$id" ] || fail "aegis cancel <TAB>: '${COMPREPLY[*]}'"
    "$AEGIS" cancel "$id" >/dev/null
    stop_daemon
}

# Type=notify: aegisd sends READY=1 to $NOTIFY_SOCKET only once its socket
# answers (the client's first request, made as soon as READY=1 arrives,
# is served), and STOPPING=1 when it stops.
case_admin_notify() {
    python3 - "$DIR/notify.sock" "$AEGIS" "$DIR/notify.out" <<'PY' &
import socket, subprocess, sys
path, aegis, out = sys.argv[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
s.settimeout(60)
with open(out, "w") as f:
    while True:
        msg = s.recv(4096).decode()
        if "READY=1" in msg:
            rc = subprocess.run([aegis, "gpus"], capture_output=True).returncode
            f.write(f"ready, gpus exit {rc}\n")
            f.flush()
        if "STOPPING=1" in msg:
            f.write("stopping\n")
            break
PY
    local listener=$!
    wait_until "the notify socket" test -S "$DIR/notify.sock"
    NOTIFY_SOCKET=$DIR/notify.sock "$AEGISD" --foreground --socket "$AEGIS_SOCKET" \
        --state-dir "$DIR/state" --config "$DIR/aegis.yaml" 2>"$DIR/fg.log" &
    wait_until "READY=1" grep -q ready "$DIR/notify.out"
    grep -q "ready, gpus exit 0" "$DIR/notify.out" || fail "READY=1 before the socket served: $(cat "$DIR/notify.out")"
    stop_daemon
    wait "$listener" || fail "no STOPPING=1"
    grep -q stopping "$DIR/notify.out" || fail "no STOPPING=1: $(cat "$DIR/notify.out")"
}

# Every query of the Grafana dashboard returns data from a real Prometheus
# that has scraped aegisd at least 3 times, with a job running, one queued
# for memory, one held and one finished (tests/monitoring/check_dashboard.py
# lists the panels that show an absence).
case_admin_dashboard() {
    command -v prometheus > /dev/null || { echo "no prometheus: skipped"; exit 77; }
    export AEGIS_TEST_GPUS=1x40960
    local port prom
    port=$(free_port)
    echo "metrics_listen: 127.0.0.1:$port" >> "$DIR/aegis.yaml"
    start
    local done_id run_id
    done_id=$("$AEGIS" submit --name short -- "$FAKE" --mib 500 --seconds 1) || fail submit
    "$AEGIS" wait "$done_id" >/dev/null || fail "job $done_id"
    run_id=$("$AEGIS" submit --name big --mem 36000 -- "$FAKE" --mib 36000 --seconds 120) || fail submit
    until_job "$run_id" "assert d['state'] == 'running'"
    "$AEGIS" submit --name waits --mem 8000 -- "$FAKE" --mib 8000 --seconds 1 >/dev/null || fail submit
    "$AEGIS" hold "$("$AEGIS" submit --name held -- true)" >/dev/null || fail hold
    prom=$(free_port)
    printf 'global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: aegis\n    static_configs:\n      - targets: [\x27127.0.0.1:%s\x27]\n' \
        "$port" > prometheus.yml
    prometheus --config.file=prometheus.yml --storage.tsdb.path="$DIR/work/tsdb" \
        --web.listen-address="127.0.0.1:$prom" > prometheus.log 2>&1 &
    scrapes() {
        curl -s -m 3 "http://127.0.0.1:$prom/api/v1/query" \
            --data-urlencode 'query=count_over_time(up{job="aegis"}[5m]) >= 4' |
            grep -q '"value"'
    }
    local deadline=$((SECONDS + 60))
    until scrapes; do
        [ $SECONDS -lt $deadline ] || fail "Prometheus never scraped aegisd 4 times: $(tail prometheus.log)"
        sleep 0.5
    done
    /usr/bin/python3 "$(dirname "$0")/../monitoring/check_dashboard.py" \
        "http://127.0.0.1:$prom" "$(dirname "$0")/../../pkg/grafana/aegis-dashboard.json" ||
        fail "a dashboard query returned no data"
    "$AEGIS" cancel "$run_id" >/dev/null
    stop_daemon
}

e2e_run
