#!/bin/bash
# e2e_lease.sh -- end-to-end tests of aegisd's side of Slurm (issue 16,
# docs/slurm.md): Slurm job steps' tasks ask for leases over the socket as
# the SPANK plugin does (e2e_lease.py plays the plugin), and a fake
# scontrol (slurm_scontrol) records its calls and answers listpids from a
# file per Slurm job.
#
# usage: e2e_lease.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG CASE
set -u
AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6
source "$(dirname "$0")/e2e_lib.sh"
CLIENT=$(cd "$(dirname "$0")" && pwd)/e2e_lease.py

# The lease ops are root's (the plugin runs in slurmstepd, as root).
if [ "$(id -u)" != 0 ] && [ "$CASE" != lease_release_down ]; then
    echo "needs root: only root may ask for a lease"; exit 77
fi
# One GPU: where leases go is certain.
export AEGIS_TEST_GPUS=1x40960
# scontrol: each call a line of scontrol.calls; listpids N answers the
# pids of listpids.N (a header line first, as Slurm's), or fails without it.
cat > "$DIR/scontrol" <<EOF
#!/bin/sh
echo "\$*" >> "$DIR/scontrol.calls"
case "\$1" in
listpids) [ -s "$DIR/listpids.\$2" ] || exit 1
          echo "PID      JOBID    STEPID   LOCALID GLOBALID"
          sed 's/\$/ \$2 0 0 0/' "$DIR/listpids.\$2" ;;
esac
EOF
chmod 755 "$DIR/scontrol"
echo "slurm_scontrol: $DIR/scontrol" >> "$DIR/aegis.yaml"

# task JOB RESTART MEM CMD...: a Slurm task asking for its lease, in the
# background; its answer comes in $DIR/lease.JOB.RESTART (as uid nobody).
task() {
    local job=$1 restart=$2 mem=$3; shift 3
    python3 "$CLIENT" task "$AEGIS_SOCKET" "$DIR/lease.$job.$restart" "$job" \
        "$restart" 65534 "$mem" -- "$@" &
}
# Waits until the file $1 exists, then prints it.
answer() { until_file "$1"; cat "$1"; }
# The grant of task JOB RESTART, checked to be one: prints it.
granted() {
    local a; a=$(answer "$DIR/lease.$1.$2") || exit 1
    echo "$a" | pyjson "assert d['ok'], d" || fail "lease $1.$2 refused: $a"
    echo "$a"
}
# A field of a JSON document on stdin (a python expression on d).
field() { pyjson "print($1)"; }
# Waits until job $1's `show --json` passes the python check $2.
until_job() {
    local deadline=$((SECONDS + 30))
    until "$AEGIS" show --json "$1" 2>/dev/null | pyjson "$2" 2>/dev/null; do
        [ $SECONDS -lt $deadline ] || fail "job $1: never $2: $("$AEGIS" show "$1")"
        sleep 0.1
    done
}
send() { python3 "$CLIENT" send "$AEGIS_SOCKET" "$@"; }

# A granted lease: its env is what aegisd gives its own jobs, for the GPU
# `aegis show` says it holds; ls and show name its Slurm job and user.
case_lease_grant() {
    start
    task 101 0 1000 "$FAKE" --mib 1000 --seconds 30
    a=$(granted 101 0)
    id=$(echo "$a" | field "d['id']")
    "$AEGIS" show --json "$id" > show.json || fail "show $id"
    uuid=$("$AEGIS" gpus --json | field "d['gpus'][0]['uuid']")
    pyjson "
a=json.loads('$a')
assert d['state']=='running' and d['gpu_ids']==a['gpus']==[0], (d, a)
assert d['slurm_job']==101 and d['slurm_restart']==0 and d['kind']=='slurm', d
assert d['user']=='nobody' and d['uid']==65534, d
assert a['env'][:3]==['CUDA_VISIBLE_DEVICES=$uuid', 'AEGIS_JOB_ID=%d' % d['id'],
                     'AEGIS_ATTEMPT=1'], a['env']" < show.json ||
        fail "grant and show disagree: $a $(cat show.json)"
    "$AEGIS" ls | grep -q "^$id .*nobody .*running .*slurm:101 job101" ||
        fail "ls: $("$AEGIS" ls)"
    "$AEGIS" show "$id" | grep -q "^slurm job  101 (restart 0, mode shared)" ||
        fail "show: $("$AEGIS" show "$id")"
    # another task of the same run shares the lease at once
    task 101 0 1000 sleep 30
    b=$(granted 101 0)
    [ "$(echo "$b" | field "d['id']")" = "$id" ] || fail "second task: $b"
}

# Two small leases share the GPU, the second once the first was observed;
# an exclusive one does not.
case_lease_collocate() {
    start
    task 201 0 1000 "$FAKE" --mib 1000 --seconds 30
    task 202 0 1000 "$FAKE" --mib 1000 --seconds 30
    a=$(granted 201 0); b=$(granted 202 0)
    [ "$(echo "$a" | field "d['gpus']")" = "[0]" ] &&
        [ "$(echo "$b" | field "d['gpus']")" = "[0]" ] || fail "not on GPU 0: $a $b"
    "$AEGIS" gpus --json | pyjson "assert len(d['gpus'][0]['jobs'])==2, d" ||
        fail "not collocated: $("$AEGIS" gpus)"
    # the later grant came once the earlier lease was seen on the GPU
    ida=$(echo "$a" | field "d['id']"); idb=$(echo "$b" | field "d['id']")
    [ "$ida" -lt "$idb" ] || { t=$ida; ida=$idb; idb=$t; }
    seen=$("$AEGIS" show --json "$ida" | field "[e['t'] for e in d['events'] if e['text']=='seen on GPU 0'][0]") ||
        fail "first lease never seen: $("$AEGIS" show "$ida")"
    "$AEGIS" show --json "$idb" | pyjson "assert d['attempt_list'][0]['started'] >= $seen, d" ||
        fail "second granted before the first was observed: $("$AEGIS" show "$idb")"
    # an exclusive lease waits for an idle GPU
    LEASE_MODE=exclusive task 203 0 1000 sleep 30
    deadline=$((SECONDS + 30))
    until "$AEGIS" ls --json | pyjson "
j=[j for j in d if j['slurm_job']==203][0]
assert j['slurm_mode']=='exclusive' and j['wait_code']=='idle', j" 2>/dev/null; do
        [ $SECONDS -lt $deadline ] || fail "exclusive lease: $("$AEGIS" ls)"
        sleep 0.1
    done
}

# A lease that does not fit waits with a REASON; it is granted once the
# lease ahead of it ends (aegis release --slurm-job, as the Epilog). One
# whose task hangs up while it waits is withdrawn.
case_lease_wait() {
    start
    task 301 0 30000 "$FAKE" --mib 30000 --seconds 60
    granted 301 0 > /dev/null
    task 302 0 20000 "$FAKE" --mib 20000 --seconds 30
    deadline=$((SECONDS + 30))
    until id=$("$AEGIS" ls --json | field "[j['id'] for j in d if j['slurm_job']==302][0]" 2>/dev/null); do
        [ $SECONDS -lt $deadline ] || fail "lease 302 never queued"
        sleep 0.1
    done
    until_job "$id" "assert d['state']=='queued' and d['wait_reason'], d"
    "$AEGIS" ls | grep -q "^$id .*queued .*slurm:302 job302  *[^ -]" ||
        fail "ls shows no REASON: $("$AEGIS" ls)"
    [ -e "$DIR/lease.302.0" ] && fail "granted while it does not fit"
    # a task that hangs up before its grant withdraws its lease
    python3 "$CLIENT" task "$AEGIS_SOCKET" "$DIR/lease.303.0" 303 0 65534 \
        20000 -- sleep 30 &
    hung=$!
    deadline=$((SECONDS + 30))
    until id3=$("$AEGIS" ls --json | field "[j['id'] for j in d if j['slurm_job']==303][0]" 2>/dev/null); do
        [ $SECONDS -lt $deadline ] || fail "lease 303 never queued"
        sleep 0.1
    done
    kill "$hung"
    until_job "$id3" "assert d['state']=='cancelled' and 'hung up' in d['reason'], d"
    out=$("$AEGIS" release --slurm-job 301) || fail "release: exit $?"
    [ "$out" = "ended 1 leases of Slurm job 301" ] || fail "release said: $out"
    granted 302 0 > /dev/null
    first=$("$AEGIS" ls --all --json | field "[j for j in d if j['slurm_job']==301][0]['state']")
    [ "$first" = done ] || fail "the released lease is $first"
}

# The lease ends when its task's processes have exited; lease_exit gets
# the class of the exit.
case_lease_pids() {
    start
    task 401 0 1000 "$FAKE" --mib 1000 --seconds 1
    a=$(granted 401 0) || exit 1
    id=$(echo "$a" | field "d['id']")
    until_job "$id" "assert d['state']=='done', d"
    answer "$DIR/lease.401.0.exit" | pyjson "assert d=={'ok':True,'class':'ok'}, d" ||
        fail "lease_exit: $(cat "$DIR/lease.401.0.exit")"
    # a task that exits 3 ends its lease failed
    task 402 0 1000 sh -c 'exit 3'
    a=$(granted 402 0) || exit 1
    id=$(echo "$a" | field "d['id']")
    until_job "$id" "assert d['state']=='failed' and d['reason']=='exit 3', d"
}

# An OOM-classified exit has Slurm requeue the job; its next run's lease
# (restart 1) starts on the ladder's next floor, kept across a kill -9.
case_lease_oom() {
    # the ladder climbs from the floor the attempt had, not from the free
    # memory beside its light neighbour (which would leave it only alone)
    echo "ladder_from_free: 0" >> "$DIR/aegis.yaml"
    start
    # a lease on the GPU first: the OOM one shares it (an OOM alone would
    # leave the ladder nowhere to climb)
    task 500 0 1000 "$FAKE" --mib 1000 --seconds 60
    a=$(granted 500 0) || exit 1
    echo "$a" | field "d['task_pid']" > "$DIR/listpids.500" # still runs
    # seen on the GPU nearly full (30000 of 40960 MiB with its neighbour:
    # aegisd checks the message against that reading), then out of memory
    # (it runs until seen: oom.go)
    task 501 0 2000 sh -c "$FAKE --mib 29000 --seconds 0 --until '$DIR/oom.go' &&
                           echo 'RuntimeError: CUDA out of memory.' >&2; exit 1"
    a=$(granted 501 0) || exit 1
    first=$(echo "$a" | field "d['id']")
    until_job "$first" "assert d['active'], d"
    touch "$DIR/oom.go"
    answer "$DIR/lease.501.0.exit" | pyjson "assert d['class']=='oom', d" ||
        fail "lease_exit: $(cat "$DIR/lease.501.0.exit")"
    until_job "$first" "assert d['state']=='failed' and 'requeues' in d['reason'], d"
    deadline=$((SECONDS + 10))
    until grep -qx "requeue 501" "$DIR/scontrol.calls" 2>/dev/null; do
        [ $SECONDS -lt $deadline ] || fail "no scontrol requeue: $(cat "$DIR/scontrol.calls" 2>&1)"
        sleep 0.1
    done
    floor1=$("$AEGIS" show --json "$first" | field "d['attempt_list'][0]['floor_mib']")
    # the ladder's place outlives aegisd
    kill -9 "$(daemon_pid)"
    while [ -n "$(daemon_pid)" ]; do sleep 0.1; done
    start
    task 501 1 2000 sleep 30
    a=$(granted 501 1) || exit 1
    second=$(echo "$a" | field "d['id']")
    "$AEGIS" show --json "$second" | pyjson "
a=d['attempt_list'][0]
assert d['slurm_restart']==1 and d['retry_floor'] > $floor1, d
assert a['floor_mib'] >= d['retry_floor'] and a['n']==2, a" ||
        fail "restart 1 not on the next floor (first $floor1): $("$AEGIS" show "$second")"
}

# kill -9 of aegisd with two leases held: after the restart the one whose
# Slurm job still runs keeps its GPU and its processes are watched again;
# the one whose job is gone is dropped.
case_lease_restart() {
    start
    task 601 0 1000 "$FAKE" --mib 1000 --seconds 60
    task 602 0 1000 "$FAKE" --mib 1000 --seconds 60
    a=$(granted 601 0); b=$(granted 602 0)
    ida=$(echo "$a" | field "d['id']"); idb=$(echo "$b" | field "d['id']")
    pida=$(echo "$a" | field "d['task_pid']")
    echo "$pida" > "$DIR/listpids.601" # 602: none, Slurm says it is gone
    kill -9 "$(daemon_pid)"
    while [ -n "$(daemon_pid)" ]; do sleep 0.1; done
    start
    until_job "$idb" "assert d['state']=='done' and 'gone' in d['reason'], d"
    until_job "$ida" "assert d['state']=='running' and d['gpu_ids']==[0], d"
    grep -qx "listpids 601" "$DIR/scontrol.calls" &&
        grep -qx "listpids 602" "$DIR/scontrol.calls" || fail "calls: $(cat "$DIR/scontrol.calls")"
    "$AEGIS" show "$ida" | grep -q "kept after a restart: Slurm job 601 runs, 1 processes watched" ||
        fail "not kept: $("$AEGIS" show "$ida")"
    # its process watched again: its exit ends the lease
    kill "$pida"
    until_job "$ida" "assert d['state']=='failed' and d['reason']=='exit 143', d"
}

# Only root speaks for Slurm; lease_end is root's or the job's owner's.
case_lease_nonroot() {
    start
    out=$(send '{"op":"lease","slurm_job":7,"uid":65534,"pid":1}' daemon)
    echo "$out" | pyjson "assert not d['ok'] and 'only root' in d['error'], d" ||
        fail "lease as daemon: $out"
    out=$(send '{"op":"lease_exit","slurm_job":7,"pid":1,"status":0}' daemon)
    echo "$out" | pyjson "assert not d['ok'] and 'only root' in d['error'], d" ||
        fail "lease_exit as daemon: $out"
    "$AEGIS" ls --json | pyjson "assert d==[], d" || fail "a lease was made"
    task 701 0 1000 sleep 30
    granted 701 0 > /dev/null
    out=$(send '{"op":"lease_end","slurm_job":701}' daemon)
    echo "$out" | pyjson "assert not d['ok'] and 'permission denied' in d['error'], d" ||
        fail "lease_end as daemon: $out"
    out=$(send '{"op":"lease_end","slurm_job":701}' nobody) # its owner
    echo "$out" | pyjson "assert d=={'ok':True,'ended':1}, d" || fail "lease_end as owner: $out"
}

# A direct submit cannot choose how its GPU is shared (sharing in
# aegis.yaml is per GPU), so a lease asking mps or mig is granted only
# where every GPU of the node shares that way, and is refused at once,
# naming the node's modes, elsewhere; shared fits any GPU.
case_lease_mode() {
    echo "sharing: naive" >> "$DIR/aegis.yaml"
    start
    out=$(send '{"op":"lease","slurm_job":801,"uid":65534,"pid":'$$',"mode":"mps"}')
    echo "$out" | pyjson "assert not d['ok'] and 'mode mps' in d['error'] and 'naive' in d['error'], d" ||
        fail "mps lease on a naive GPU: $out"
    out=$(send '{"op":"lease","slurm_job":802,"uid":65534,"pid":'$$',"mode":"mig"}')
    echo "$out" | pyjson "assert not d['ok'] and 'mode mig' in d['error'], d" ||
        fail "mig lease on a naive GPU: $out"
    "$AEGIS" ls --json | pyjson "assert d==[], d" || fail "a refused lease was made"
    task 803 0 1000 sleep 30
    granted 803 0 > /dev/null
}

# like_direct MODE PATTERN: on a node whose GPUs share as MODE, a lease
# asking MODE is granted, and its task runs with the variables a direct
# submit's job gets there: the first line each prints (aegis-fakegpu's
# devices=... mps_pipe=...) matches the extended regex PATTERN.
like_direct() {
    start
    LEASE_MODE=$1 task 901 0 1000 "$FAKE" --mib 1000 --seconds 0
    granted 901 0 > /dev/null
    until_file "$DIR/lease.901.0.exit"
    id=$("$AEGIS" submit --mem 1000 -- "$FAKE" --mib 1000 --seconds 0)
    "$AEGIS" wait "$id" > /dev/null || fail "direct job $id"
    head -1 "$DIR/lease.901.0.out" | grep -qE "^$2" ||
        fail "lease's task: $(cat "$DIR/lease.901.0.out")"
    "$AEGIS" log "$id" | head -1 | grep -qE "^$2" ||
        fail "direct job: $("$AEGIS" log "$id")"
}
case_lease_mps() {
    printf 'sharing: mps\nmps_control: %s\n' "$(dirname "$FAKE")/aegis-fake-mps-control" \
        >> "$DIR/aegis.yaml"
    like_direct mps "aegis-fakegpu: devices=GPU-aegis-test-0000-0 mps_pipe=$DIR/state/mps/0/pipe "
}
case_lease_mig() {
    echo "sharing: mig" >> "$DIR/aegis.yaml"
    like_direct mig "aegis-fakegpu: devices=MIG-aegis-test-0-[0-9]+-0 mps_pipe=- "
}

# The Epilog's release exits 0 even when aegisd is down.
case_lease_release_down() {
    out=$("$AEGIS" release --slurm-job 999 2> err.txt) || fail "exit $? with aegisd down"
    grep -q "warning" err.txt || fail "no warning: $(cat err.txt)"
    start
    out=$("$AEGIS" release --slurm-job 999) || fail "exit $?"
    [ "$out" = "ended 0 leases of Slurm job 999" ] || fail "said: $out"
}

cd "$DIR/work"
e2e_run
