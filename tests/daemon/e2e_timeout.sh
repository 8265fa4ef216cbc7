#!/bin/bash
# e2e_timeout.sh AEGISD AEGIS NVML FAKE CATALOG CASE -- a case killed as
# ctest's TIMEOUT kills it (SIGKILL to it and its descendants: no trap
# runs) leaves nothing behind: the aegisd it started, which daemonized out
# of its process tree, and that aegisd's jobs are stopped and its folder
# removed by the reaper e2e_lib.sh detaches at the start of every case.
set -u; AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6; source "$(dirname "$0")/e2e_lib.sh"

# The pids whose environment carries AEGIS_E2E_MARK=$1.
marked() {
    grep -lzxF "AEGIS_E2E_MARK=$1" /proc/[0-9]*/environ 2>/dev/null |
        sed 's,^/proc/\([0-9]*\)/environ$,\1,'
}
# Whether a process of comm $2 carries the mark $1.
marked_comm() {
    local p
    for p in $(marked "$1"); do
        [ "$(cat /proc/$p/comm 2>/dev/null)" = "$2" ] && return 0
    done
    return 1
}
# No process carries the mark (a zombie has no environment left).
none_marked() { [ -z "$(marked "$1")" ]; }

# The fixture: a case that hangs, as one does when the machine is too slow
# for it, with aegisd and a job running. Run by timeout_killed only; it
# fails by itself after 120 s rather than hang forever.
case_timeout_hung() {
    start
    cd "$DIR/work"
    "$AEGIS" submit -- "$FAKE" --mib 100 --seconds 600 > /dev/null || fail submit
    echo "$DIR" > "$AEGIS_E2E_MARK.dir"
    local deadline=$((SECONDS + 120))
    until [ $SECONDS -ge $deadline ]; do sleep 1; done
    fail "not killed in 120 s"
}

case_timeout_killed() {
    cd "$DIR/work"
    mark=$DIR/work/hung # (global: the EXIT trap reads it)
    # what the reaper failed to stop does not outlive this test either
    trap 'kill -KILL $(marked "$mark") 2>/dev/null; cleanup' EXIT
    AEGIS_E2E_MARK=$mark setsid bash "$0" "$AEGISD" "$AEGIS" "$NVML" "$FAKE" \
        "$CATALOG" timeout_hung > hung.out 2>&1 &
    local hung=$!
    wait_until "the hung case's aegisd and job running" eval \
        'marked_comm "$mark" aegis-fakegpu && marked_comm "$mark" aegisd'
    until_file "$mark.dir"
    kill -0 "$hung" 2>/dev/null || fail "the hung case ended by itself: $(cat hung.out)"
    kill -KILL -- -"$hung"  # all of it, as ctest's TIMEOUT kills a test's tree
    wait "$hung" 2>/dev/null
    # the reaper notices within a second, then has 5 s
    wait_until "every process of the killed case gone" none_marked "$mark"
    [ ! -e "$(cat "$mark.dir")" ] || fail "its folder $(cat "$mark.dir") is left"
}

e2e_run
