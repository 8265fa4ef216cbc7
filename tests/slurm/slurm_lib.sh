# slurm_lib.sh -- a real one-node Slurm cluster for a test case: munged,
# slurmctld and slurmd from Debian's packages, on loopback and ports of
# their own, with spank_aegis.so in plugstack.conf, beside the aegisd of
# tests/daemon/e2e_lib.sh (its folder, test GPUs, start and fail).
#
# A case file sets AEGISD AEGIS NVML FAKE CATALOG CASE and PLUGIN, sources
# this file, defines case_NAME functions and ends with e2e_run. A case
# calls slurm_start [required|optional] [retry=S] after aegisd is up.
# Exit 77 (skipped) when Slurm or munge is not installed.
set -u
for prog in munged slurmctld slurmd sbatch scontrol sinfo squeue scancel; do
    command -v "$prog" > /dev/null || PATH=$PATH:/usr/sbin
    command -v "$prog" > /dev/null || { echo "skip: no $prog"; exit 77; }
done
source "$(dirname "${BASH_SOURCE[0]}")/../daemon/e2e_lib.sh"

SDIR=$DIR/slurm
SLURM_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../src/slurm" && pwd)
# Jobs run as nobody: the test GPUs' lock must be theirs to take too
# (aegisd, root, would create it 644).
install -m 666 /dev/null "$AEGIS_TEST_GPU_DIR/lock"
export SLURM_CONF=$SDIR/slurm.conf
# Ports of this case: slurmctld's and slurmd's, from the shell's pid (the
# Slurm cases also hold a CTest resource lock, so they never overlap),
# in 12000-15999: below the ephemeral ports (32768 on), which the tests
# that bind port 0 get, and apart from the orbit tests' hubs (16000-17001,
# 20000-31999). At 20000-49998 a CI run's slurmctld found its port taken.
SLURM_PORT=$((12000 + ($$ % 2000) * 2))
# The node's aegis_mem: the test GPUs' memory, 3 x 40960 MiB.
SLURM_AEGIS_MEM=122880

eval "e2e_$(declare -f fail)"
fail() {
    local f
    for f in "$SDIR"/log/* "$DIR"/work/job-*.out; do
        [ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
    done
    e2e_fail "$@"
}

# Polls a command until it succeeds, for at most $1 seconds.
await() {
    local secs=$1 end; shift
    end=$((SECONDS + secs))
    until "$@" > /dev/null 2>&1; do
        [ $SECONDS -lt $end ] || return 1
        sleep 0.2
    done
}

# The node's state word in sinfo (idle, mixed, alloc, drain...).
node_state() { timeout 5 sinfo -h -N -o %T -n localhost; }
node_is() { [ "$(node_state)" = "$1" ]; }
# A Slurm job's state (PENDING, RUNNING, ...), "" once it left squeue.
job_state() { timeout 5 squeue -h -j "$1" -o %T 2>/dev/null; }
job_is() { [ "$(job_state "$1")" = "$2" ]; }
# Up and taking jobs: neither drained nor down.
node_ok() { case "$(node_state)" in idle|mixed|allocated) return 0;; esac; return 1; }
job_gone() { [ -z "$(job_state "$1")" ]; }

# The cluster's files: a munge key, slurm.conf, gres.conf, plugstack.conf
# (with spank_aegis.so's arguments $*), cli_filter.lua and the Epilog.
slurm_write_config() {
    mkdir -p "$SDIR/log" "$SDIR/state" "$SDIR/spool" "$SDIR/key"
    chmod 700 "$SDIR/key"
    head -c 1024 /dev/urandom > "$SDIR/key/munge.key"
    chmod 400 "$SDIR/key/munge.key"
    # The Epilog ends the job's lease (`aegis release --slurm-job` always
    # exits 0: a failing Epilog drains the node); here it also logs that.
    cat > "$SDIR/epilog.sh" <<EOF
#!/bin/sh
AEGIS_SOCKET=$AEGIS_SOCKET $AEGIS release --slurm-job "\$SLURM_JOB_ID" \
    >> $SDIR/log/epilog.log 2>&1
rc=\$?
echo "release --slurm-job \$SLURM_JOB_ID: exit \$rc" >> $SDIR/log/epilog.log
exit \$rc
EOF
    chmod 755 "$SDIR/epilog.sh"
    # cred_expire: a requeued job waits that long (+1 s) before its next
    # run, 121 s by default.
    cat > "$SLURM_CONF" <<EOF
ClusterName=aegistest
SlurmctldHost=localhost
SlurmctldPort=$SLURM_PORT
SlurmdPort=$((SLURM_PORT + 1))
AuthType=auth/munge
AuthInfo=socket=$SDIR/munge.sock,cred_expire=5
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$SDIR/state
SlurmdSpoolDir=$SDIR/spool
SlurmctldPidFile=$SDIR/slurmctld.pid
SlurmdPidFile=$SDIR/slurmd.pid
SlurmctldLogFile=$SDIR/log/slurmctld.log
SlurmdLogFile=$SDIR/log/slurmd.log
SlurmdParameters=config_overrides
PlugStackConfig=$SDIR/plugstack.conf
CliFilterPlugins=cli_filter/lua
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=aegis_mem
MpiDefault=none
ReturnToService=2
SchedulerParameters=sched_interval=1
JobRequeue=1
Epilog=$SDIR/epilog.sh
KillWait=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 Gres=aegis_mem:$SLURM_AEGIS_MEM State=UNKNOWN
PartitionName=aegis Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
    echo "Name=aegis_mem Count=$SLURM_AEGIS_MEM" > "$SDIR/gres.conf"
    echo "required $PLUGIN socket=$AEGIS_SOCKET $*" > "$SDIR/plugstack.conf"
    # aegis's filter, beside slurm.conf where Slurm looks for it
    ln -s "$SLURM_SRC/cli_filter.lua" "$SDIR/cli_filter.lua"
}

# Starts munged, slurmctld and slurmd in the background and waits until
# the node is idle. Arguments go to spank_aegis.so (plugstack.conf).
slurm_start() {
    slurm_write_config "$@"
    munged -F -f -S "$SDIR/munge.sock" --key-file="$SDIR/key/munge.key" \
        --log-file="$SDIR/log/munged.log" --pid-file="$SDIR/munged.pid" \
        --seed-file="$SDIR/munged.seed" > "$SDIR/log/munged.out" 2>&1 &
    await 10 test -S "$SDIR/munge.sock" || fail "munged did not start"
    slurmctld -D -i > "$SDIR/log/slurmctld.out" 2>&1 &
    slurmd -D -N localhost > "$SDIR/log/slurmd.out" 2>&1 &
    await 30 node_is idle || fail "node not idle: '$(node_state)'"
}

# Cancels the jobs left, stops Slurm and munge, then does what
# e2e_lib.sh's cleanup does: it kills whatever still has this case's
# AEGIS_SOCKET in its environment, which the Slurm daemons, their
# slurmstepd and the jobs inherited from this shell.
slurm_cleanup() {
    local f p
    if [ -e "$SDIR/slurmctld.pid" ]; then
        scancel -u nobody 2>/dev/null
        await 10 eval '[ -z "$(timeout 5 squeue -h 2>/dev/null)" ]'
    fi
    for f in slurmd slurmctld munged; do
        p=$(cat "$SDIR/$f.pid" 2>/dev/null) || continue
        kill "$p" 2>/dev/null
        await 5 eval "! kill -0 $p"
    done
    cleanup
}
trap slurm_cleanup EXIT

# Submits a batch job as user nobody from $DIR/work and prints its id.
# The job's output goes to $DIR/work/job-ID.out.
submit() {
    runuser -u nobody -- sbatch --parsable -D "$DIR/work" \
        -o "$DIR/work/job-%j.out" "$@" || fail "sbatch $*"
}
