#!/bin/bash
# e2e_config.sh -- end-to-end tests of how aegisd reads aegis.yaml at start
# and on SIGHUP (src/daemon/config.c, gpushare.c): what a reload applies,
# what it leaves for the next start and says so, and what it refuses with
# the file's line (docs/configuration.md).
#
# usage: e2e_config.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG CASE
set -u
AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6
source "$(dirname "$0")/e2e_lib.sh"

# log_has TEXT: the log (since the last hup) holds TEXT, a fixed string.
log_has() {
    grep -qF -- "$1" "$DIR/state/aegisd.log" || fail "log lacks '$1'"
}

# The time limit of a job submitted now: default_time as aegisd holds it.
submitted_limit() {
    local id; id=$("$AEGIS" submit -- true) || fail "submit"
    "$AEGIS" show --json "$id" | pyjson "print(int(d['time_limit_s'] or 0))"
}

# A reload that changes mps_dir or mps_control applies the rest of the
# file and says that those two apply at the next start (as metrics_listen);
# it refused the whole file before.
case_config_reload_mps() {
    cp "$DIR/aegis.yaml" "$DIR/base.yaml"
    printf 'mps_control: /bin/true\n' >> "$DIR/aegis.yaml"
    start
    { cat "$DIR/base.yaml"; printf 'default_time: 60\nmps_dir: %s\n' \
        "$DIR/mps2"; } > "$DIR/aegis.yaml"
    hup
    log_has "SIGHUP: reloaded"
    log_has "SIGHUP: mps_dir '$DIR/mps2' applies when aegisd restarts; still '$DIR/state/mps'"
    log_has "SIGHUP: mps_control 'nvidia-cuda-mps-control' applies when aegisd restarts; still '/bin/true'"
    local t; t=$(submitted_limit)
    [ "$t" = 60 ] || fail "default_time 60 not applied: $t"
    # said again at the next reload: the folder still is the old one
    printf 'default_time: 120\n' >> "$DIR/aegis.yaml"
    hup
    log_has "SIGHUP: mps_dir '$DIR/mps2' applies when aegisd restarts"
    t=$(submitted_limit)
    [ "$t" = 120 ] || fail "default_time 120 not applied: $t"
}

# cgroup_root must be '' or an absolute path to a folder: --check-config,
# a start and a reload refuse another at its line. All passed before, and
# every job asking for a limit then failed.
case_config_cgroup_root() {
    cp "$DIR/aegis.yaml" "$DIR/base.yaml"
    printf 'cgroup_root: sys/fs/cgroup\n' >> "$DIR/aegis.yaml"
    "$AEGISD" --check-config "$DIR/aegis.yaml" > check.out 2>&1 &&
        fail "--check-config passed a relative cgroup_root"
    grep -qF "$DIR/aegis.yaml:3: cgroup_root: 'sys/fs/cgroup' is not an absolute path" \
        check.out || fail "--check-config: $(cat check.out)"
    "$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" \
        --config "$DIR/aegis.yaml" --foreground > start.out 2>&1 &&
        fail "aegisd started with a relative cgroup_root"
    grep -qF "$DIR/aegis.yaml:3: cgroup_root:" start.out ||
        fail "start: $(cat start.out)"
    cp "$DIR/base.yaml" "$DIR/aegis.yaml"
    start
    printf 'default_time: 60\ncgroup_root: /nonexistent/cgroup\n' >> "$DIR/aegis.yaml"
    hup
    log_has "SIGHUP: configuration not reloaded: $DIR/aegis.yaml:4: cgroup_root: '/nonexistent/cgroup' is not a folder"
    local t; t=$(submitted_limit)
    [ "$t" = 0 ] || fail "the refused file's default_time applied: $t"
}

# socket_group applies at a start only: a reload that changes it applies
# the rest and says so, and one naming no group is not refused for it (the
# next start and --check-config are, at its line). Before, the first was
# silent and the second refused the whole file.
case_config_reload_socket_group() {
    start
    local mode; mode=$(stat -c %a "$AEGIS_SOCKET")
    printf 'socket_group: root\n' >> "$DIR/aegis.yaml"
    hup
    log_has "SIGHUP: reloaded"
    log_has "SIGHUP: socket_group 'root' applies when aegisd restarts; still ''"
    [ "$(stat -c %a "$AEGIS_SOCKET")" = "$mode" ] || fail "the socket's mode changed"
    local n; n=$(($(wc -l < "$DIR/aegis.yaml") + 1))
    printf 'socket_group: aegis-no-such-group\ndefault_time: 60\n' >> "$DIR/aegis.yaml"
    hup
    log_has "SIGHUP: reloaded"
    log_has "SIGHUP: $DIR/aegis.yaml:$n: socket_group: no group 'aegis-no-such-group'"
    local t; t=$(submitted_limit)
    [ "$t" = 60 ] || fail "default_time 60 not applied: $t"
    "$AEGISD" --check-config "$DIR/aegis.yaml" > check.out 2>&1 &&
        fail "--check-config passed a missing group"
    grep -qF "$DIR/aegis.yaml:$n: socket_group: no group" check.out ||
        fail "--check-config: $(cat check.out)"
}

# refused_start WANT WHAT: a foreground aegisd refuses to start (bounded:
# a wrong one would serve), its log on stderr holding WANT, a fixed string.
refused_start() {
    timeout 30 "$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" \
        --config "$DIR/aegis.yaml" --foreground > refused.err 2>&1 &&
        fail "aegisd started with $2"
    grep -qF -- "$1" refused.err || fail "$2: $(cat refused.err)"
}

# What stops aegisd at start is logged as an error, not as info, and a
# mode the GPU cannot run names the file's line that gave it.
case_config_fatal_errors() {
    cp "$DIR/aegis.yaml" "$DIR/base.yaml"
    { cat "$DIR/base.yaml"; printf 'sharing:\n  1: mig\n'; } > "$DIR/aegis.yaml"
    AEGIS_TEST_GPU_MODEL="Tesla V100-SXM2-16GB" refused_start \
        " error: $DIR/aegis.yaml:4: sharing: GPU 1 is mig, but aegis has no MIG table" \
        "mig on a GPU without MIG"
    { cat "$DIR/base.yaml"; printf 'sharing:\n  7: mps\n'; } > "$DIR/aegis.yaml"
    refused_start " error: $DIR/aegis.yaml:4: sharing: 7: no such GPU (3 found)" \
        "an override for GPU 7"
    { cat "$DIR/base.yaml"; printf 'sharing: mps\nmps_control: %s\n' \
        "$DIR/no-such-mps-control"; } > "$DIR/aegis.yaml"
    refused_start " error: GPU 0: sharing mps: " "a missing mps_control"
    grep -F "$DIR/no-such-mps-control" refused.err | grep -qF " error: " ||
        fail "the missing program is not named: $(cat refused.err)"
}

e2e_run
