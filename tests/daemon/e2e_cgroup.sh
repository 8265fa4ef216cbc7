#!/bin/bash
# e2e_cgroup.sh AEGISD AEGIS NVML FAKE CATALOG CASE -- per-job CPU and
# host-RAM limits on this machine's real cgroup hierarchy (issue 30 item
# 3): a job allocating more host RAM than --host-mem is killed by the
# kernel and reported as over its host memory, not as a GPU OOM, and not
# retried; a job within its limits runs in its own cgroup, which is gone
# after it; a job re-adopted after kill -9 of aegisd keeps being told and
# cleaned up that way, and an attempt never started leaves no cgroup
# behind for the next; aegis-plus counts the cgroups' CPUs. Skipped (77) without root or a writable hierarchy.
set -u; AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6; source "$(dirname "$0")/e2e_lib.sh"

needs_cgroups() {
    needs_root
    local probe=/sys/fs/cgroup/memory/aegis-probe-$$
    [ -e /sys/fs/cgroup/cgroup.controllers ] && probe=/sys/fs/cgroup/aegis-probe-$$
    mkdir "$probe" 2>/dev/null || { echo "no writable cgroup hierarchy"; exit 77; }
    rmdir "$probe"
}

case_cgroup_hostmem() {
    needs_cgroups
    start
    cd "$DIR/work"
    hog=$("$AEGIS" submit --host-mem 64m -- /usr/bin/python3 -c \
        'b = bytearray(400 << 20); print("allocated", len(b))') || fail submit
    "$AEGIS" wait "$hog" > wait.txt && fail "the hog was not killed"
    grep -q "^$hog failed killed by signal 9, over its host memory limit (64 MiB, --host-mem): killed by the kernel$" wait.txt ||
        fail "wait: $(cat wait.txt)"
    "$AEGIS" show --json "$hog" | pyjson "
assert d['attempts']==1 and d['host_mem_mib']==64 and d['cpus'] is None, d" ||
        fail "retried, or its limit not kept"
    small=$("$AEGIS" submit --host-mem 256m --cpus 1 -- sh -c 'cat /proc/self/cgroup') ||
        fail "submit small"
    "$AEGIS" wait "$small" > /dev/null || fail "a job within its limits failed"
    "$AEGIS" log "$small" | grep -q "memory:.*/aegis/job-$small.1$" ||
        fail "not in its memory cgroup: $("$AEGIS" log "$small")"
    "$AEGIS" log "$small" | grep -q "cpu:.*/aegis/job-$small.1$" ||
        fail "not in its cpu cgroup: $("$AEGIS" log "$small")"
    [ ! -e "/sys/fs/cgroup/memory/aegis/job-$small.1" ] || fail "cgroup left behind"
}

# kill -9 of aegisd while a limited job runs: the restarted aegisd takes
# its cgroup back, so the job's kill for memory is told as such and its
# folder is removed.
case_cgroup_adopt() {
    needs_cgroups
    start
    cd "$DIR/work"
    hog=$("$AEGIS" submit --host-mem 64m -- /usr/bin/python3 -c '
import os, time
while not os.path.exists("go"): time.sleep(0.05)
b = bytearray(400 << 20)') || fail submit
    until_job "$hog" "assert d['state'] == 'running' and d.get('pid', 0) > 0"
    kill -KILL "$(daemon_pid)"
    wait_until "aegisd gone" eval '[ -z "$(daemon_pid)" ]'
    start
    until_job "$hog" "assert d['state'] == 'running'"
    touch go
    "$AEGIS" wait "$hog" > wait.txt && fail "the hog was not killed"
    grep -q "over its host memory limit (64 MiB, --host-mem): killed by the kernel$" wait.txt ||
        fail "wait after the restart: $(cat wait.txt)"
    [ ! -e "/sys/fs/cgroup/memory/aegis/job-$hog.1" ] || fail "cgroup left behind"
}

# The folder of attempt ATT of job ID in the machine's hierarchy, if any.
job_cgroup() { find /sys/fs/cgroup -maxdepth 8 -type d -name "job-$1.$2" 2>/dev/null; }

# An attempt whose cgroup was made but whose watcher never started it:
# aegisd and its launcher are killed while the launcher, stopped, has not
# forked the watcher. The restarted aegisd finds the attempt unstarted,
# forgets it and its cgroup, and the job's next attempt runs in a cgroup
# made afresh (aegisd used to keep the old one: a Debug build, the
# sanitizers', aborted at the next launch).
case_cgroup_unstarted() {
    needs_cgroups
    start
    cd "$DIR/work"
    "$AEGIS" wait "$("$AEGIS" submit -- true)" > /dev/null || fail "first job"
    local launcher; launcher=$(pgrep -P "$(daemon_pid)" -x aegis-launcher) ||
        fail "no launcher"
    kill -STOP "$launcher"
    id=$("$AEGIS" submit --host-mem 256m -- sh -c 'cat /proc/self/cgroup') ||
        fail submit
    wait_until "its cgroup made" eval '[ -n "$(job_cgroup "$id" 1)" ]'
    kill -KILL "$(daemon_pid)" "$launcher"
    wait_until "aegisd gone" eval '[ -z "$(daemon_pid)" ]'
    start
    "$AEGIS" wait "$id" > /dev/null || fail "not run after the restart"
    "$AEGIS" show "$id" | grep -q "attempt 1 never started" ||
        fail "no unstarted attempt: $("$AEGIS" show "$id")"
    "$AEGIS" log "$id" | grep -q "/aegis/job-$id.1$" ||
        fail "not in its cgroup: $("$AEGIS" log "$id")"
    [ -z "$(job_cgroup "$id" 1)" ] || fail "cgroup left behind"
}

# aegis-plus counts the CPUs of the jobs' cgroups: a job asking all of
# the machine's runs, and a job asking 1 more waits for them with the
# reason, though a GPU is idle, and runs once the first has gone.
case_cgroup_cpus() {
    needs_cgroups
    start
    cd "$DIR/work"
    local n; n=$(nproc) # the CPUs aegisd may use: its affinity
    all=$("$AEGIS" submit --cpus "$n" -- sh -c 'until [ -e go ]; do sleep 0.05; done') ||
        fail "submit all"
    until_job "$all" "assert d['state'] == 'running'"
    one=$("$AEGIS" submit --cpus 1 -- true) || fail "submit one"
    until_job "$one" "assert d.get('wait_code') == 'cpus', d"
    "$AEGIS" show --json "$one" | pyjson "
r = d['wait_reason']; print(r)
assert r == 'needs 1 CPU for its data loading, 0 of the server\'s $n free', r" ||
        fail "its wait_reason"
    touch go
    "$AEGIS" wait "$all" "$one" > /dev/null || fail "the jobs did not both end"
}

e2e_run
