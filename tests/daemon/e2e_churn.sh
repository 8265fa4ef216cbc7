#!/bin/bash
# e2e_churn.sh -- how aegisd starts jobs when many short ones churn: each
# attempt's watcher is the aegis-shim program, spawned by aegisd without
# a fork of the daemon (whose pages a fork copies on write), and the
# watcher, not aegisd, forks the job.
#
# usage: e2e_churn.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG CASE
set -u; AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6; source "$(dirname "$0")/e2e_lib.sh"

# The program a process runs (its /proc/PID/exe) and its parent.
exe_of() { readlink "/proc/$1/exe"; }
parent_of() { awk '{print $4}' "/proc/$1/stat"; }

# A job's watcher runs aegis-shim, not a copy of aegisd, and is aegisd's
# child (its SIGCHLD wakes aegisd); the job is the watcher's child.
case_churn_spawn() {
    start
    cd "$DIR/work"
    id=$("$AEGIS" submit -- sleep 60) || fail submit
    until_job "$id" "assert d['attempt_list'][-1].get('job_pid')"
    att=$("$AEGIS" show --json "$id" | pyjson "a=d['attempt_list'][-1]; print(a['shim_pid'], a['job_pid'])")
    read -r shim job <<< "$att"
    exe=$(exe_of "$shim")
    [ "${exe##*/}" = aegis-shim ] || fail "the watcher runs $exe, not aegis-shim: aegisd forked itself"
    [ "$(parent_of "$shim")" = "$(daemon_pid)" ] || fail "the watcher is not aegisd's child"
    [ "$(parent_of "$job")" = "$shim" ] || fail "the job is not the watcher's child"
    "$AEGIS" cancel "$id" > /dev/null || fail cancel
    "$AEGIS" wait "$id" > /dev/null
    is_state "$id" cancelled || fail "not cancelled: $("$AEGIS" show "$id")"
    # the watcher's arguments are aegisd's: run by hand, it refuses
    "$(dirname "$AEGISD")/aegis-shim" 2> err.txt; rc=$?
    [ "$rc" = 2 ] && grep -q "started by aegisd only" err.txt ||
        fail "aegis-shim by hand: exit $rc, $(cat err.txt)"
}

e2e_run
