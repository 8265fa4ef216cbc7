#!/usr/bin/env bash
# e2e_pkg.sh -- `aegisd --check-config FILE`: a configuration is checked
# without starting anything (no socket, no state, no GPU library), with
# exit 0 for a good file and 2 with FILE:LINE errors for a bad one.
set -u; AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6; source "$(dirname "$0")/e2e_lib.sh"
SHIPPED=$(dirname "$0")/../../src/daemon/aegis.yaml

# check_config FILE: runs the check with NVML unreachable, so a pass shows
# that nothing needed a GPU; leaves the status in $rc, stderr in $DIR/err.
check_config() {
    AEGIS_NVML_LIBRARY=/nonexistent "$AEGISD" --check-config "$1" \
        >"$DIR/out" 2>"$DIR/err"
    rc=$?
}

case_pkg_check_good() {
    check_config "$SHIPPED"
    [ $rc = 0 ] || fail "shipped config: exit $rc: $(cat "$DIR/err")"
    grep -q "aegis.yaml: ok" "$DIR/out" || fail "no ok line: $(cat "$DIR/out")"
    check_config "$DIR/aegis.yaml"
    [ $rc = 0 ] || fail "test config: exit $rc: $(cat "$DIR/err")"
    [ ! -e "$DIR/state" ] || fail "a state folder was made"
}

case_pkg_check_bad() {
    printf 'policy: aegis\n# a comment\nwindow_samplez: 3\n' >"$DIR/bad.yaml"
    check_config "$DIR/bad.yaml"
    [ $rc = 2 ] || fail "unknown key: exit $rc"
    grep -q "^aegisd: $DIR/bad.yaml:3: .*window_samplez" "$DIR/err" ||
        fail "no FILE:LINE error: $(cat "$DIR/err")"
    printf 'policy: nosuch\n' >"$DIR/pol.yaml"
    check_config "$DIR/pol.yaml"
    [ $rc = 2 ] || fail "unknown policy: exit $rc"
    grep -q "nosuch" "$DIR/err" || fail "policy not named: $(cat "$DIR/err")"
    printf 'sharing:\n  default: mps\n  x: mig\n' >"$DIR/share.yaml"
    check_config "$DIR/share.yaml"
    [ $rc = 2 ] || fail "bad sharing GPU: exit $rc"
    grep -q "share.yaml:3" "$DIR/err" || fail "sharing line: $(cat "$DIR/err")"
    check_config "$DIR/missing.yaml"
    [ $rc = 2 ] || fail "missing file: exit $rc"
    grep -q "missing.yaml: No such file" "$DIR/err" ||
        fail "missing file not named: $(cat "$DIR/err")"
    "$AEGISD" --check-config "$DIR/aegis.yaml" extra >/dev/null 2>&1
    [ $? = 2 ] || fail "an extra argument was accepted"
}

e2e_run
