#!/bin/bash
# e2e.sh -- end-to-end tests of aegisd and the aegis job commands on the
# test GPUs (libaegis-testnvml.so, 3 x 40960 MiB, and aegis-fakegpu jobs).
#
# usage: e2e.sh AEGISD AEGIS TESTNVML FAKEGPU CATALOG CASE
# Each case starts its own daemon in a fresh folder and waits on events
# (aegis wait), never on fixed sleeps, except to space the kills of the
# crash test. Exit 0 pass, 1 fail, 77 skipped.
set -u
AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6
source "$(dirname "$0")/e2e_lib.sh"

case_basic() {
    start
    cd "$DIR/work"
    id1=$("$AEGIS" submit --name hello -- sh -c 'echo out; echo err >&2') || fail submit
    id2=$("$AEGIS" submit --mem 1000 --feed imagenet -- "$FAKE" --mib 1000 --seconds 1) || fail submit2
    id3=$("$AEGIS" submit --after "$id2" -- sh -c 'echo after') || fail after
    "$AEGIS" wait "$id1" "$id2" "$id3" >/dev/null || fail "wait: not all done"
    [ "$("$AEGIS" log "$id1")" = out ] || fail "log stdout"
    [ "$("$AEGIS" log --stderr "$id1")" = err ] || fail "log stderr"
    [ "$("$AEGIS" log "$id3")" = after ] || fail "log after"
    "$AEGIS" ls --all --json | pyjson "
ids=[j['id'] for j in d]; assert ids==[$id1,$id2,$id3], ids
for j in d:
    assert j['state']=='done' and j['attempts']==1 and j['gpus']==1 and j['user'], j
assert d[1]['energy_j']>0, d[1]
assert d[1]['feed']=='imagenet' and d[0]['feed']=='', d" || fail "ls --json"
    "$AEGIS" show "$id2" | grep -q "seen on GPU" || fail "show: never seen on GPU"
    # a failing job, a cancelled queued one, a dependent of a failure
    id4=$("$AEGIS" submit -- sh -c 'exit 3')
    id5=$("$AEGIS" submit --after "$id4" -- true)
    "$AEGIS" wait "$id4" "$id5" && fail "wait: should report failure"
    "$AEGIS" show "$id4" | grep -q "exit 3" || fail "show: exit 3"
    "$AEGIS" show --json "$id5" | pyjson "assert d['state']=='cancelled', d" || fail dep
    # YAML spec and array
    printf 'jobs:\n  - name: a\n    command: echo spec-a\n  - command: [echo, spec-b]\n' > spec.yaml
    ids=$("$AEGIS" submit spec.yaml) || fail "submit spec"
    # JSON is YAML: a spec.json is read as one, not run as a program
    printf '{"jobs": [{"name": "j", "command": ["echo", "spec-json"]}]}\n' > spec.json
    ids="$ids $("$AEGIS" submit spec.json)" || fail "submit spec.json"
    printf 'echo one\n# comment\n\necho two\n' > array.txt
    ids="$ids $("$AEGIS" submit --array array.txt)" || fail "submit array"
    [ "$(echo $ids | wc -w)" = 5 ] || fail "spec+array ids: $ids"
    "$AEGIS" wait $ids >/dev/null || fail "spec/array jobs"
    "$AEGIS" submit -- nosuchprogram-xyz >/dev/null
    "$AEGIS" gpus | grep -q "aegis test GPU" || fail gpus
    "$AEGIS" gpus --json | pyjson "assert len(d['gpus'])==3" || fail "gpus --json"
    "$AEGIS" submit --gpus 4 -- true 2>/dev/null && fail "4 GPUs accepted"
    # cancel a running job
    id6=$("$AEGIS" submit -- "$FAKE" --mib 100 --seconds 30)
    until "$AEGIS" show --json "$id6" | pyjson "assert d['state']=='running'" 2>/dev/null; do sleep 0.1; done
    "$AEGIS" cancel "$id6" >/dev/null || fail cancel
    "$AEGIS" wait "$id6" | grep -q cancelled || fail "cancelled running job"
    "$AEGIS" drain 1 >/dev/null && "$AEGIS" gpus --json | pyjson "assert d['gpus'][1]['drained']" || fail drain
    "$AEGIS" resume 1 >/dev/null || fail resume
    for c in submit ls show cancel log wait gpus top drain resume; do
        "$AEGIS" $c --help | grep -q SYNOPSIS || fail "$c --help"
    done
    "$AEGISD" --help | grep -q SYNOPSIS || fail "aegisd --help"
    "$AEGIS" ls --bogus 2>/dev/null; [ $? = 2 ] || fail "bad usage exit 2"
}

# A catalog workload of case_thirty: `workload NAME SOLO_S MIB SMACT
# [FAKEGPU OPTIONS...]` submits it, its run scaled to 1-3 s; its id on
# stdout.
workload() {
    local name=$1 solo=$2 mib=$3 smact=$4 secs
    shift 4
    secs=$(awk -v s="$solo" 'BEGIN { print 1 + (s % 3) }')
    "$AEGIS" submit --name "$name" --mem "$mib" -- \
        "$FAKE" --mib "$mib" --seconds "$secs" --smact "$smact" "$@"
}
# A job of case_thirty sized to run out of memory when shared: `oom_job
# MIB [FAKEGPU OPTIONS...]` takes MIB, and as much again halfway through
# its 6 s (no --mem: 5120 MiB are assumed); its id on stdout.
oom_job() {
    local mib=$1
    shift
    "$AEGIS" submit --name "oom-$mib" -- \
        "$FAKE" --mib "$mib" --seconds 6 --oom-over "$@"
}
# Whether jobs $1 and $2 are both seen on their GPU, the same one.
together() {
    is_active "$1" && is_active "$2" &&
        [ "$(job_field "$1" gpu_ids)" = "$(job_field "$2" gpu_ids)" ]
}

# 30 catalog workloads on 3 GPUs, durations scaled to 1-3 s; 4 of them
# deliberately sized to run out of memory when shared and one that cannot
# fit even alone. What 1-3 s jobs would do only if they happened to
# overlap, the test makes certain first: with GPUs 1 and 2 drained, the
# first workload and the first OOM job share GPU 0, both held (--until)
# until the test has seen them there together; then the OOM job grows
# beside its neighbour, runs out of memory and climbs the ladder. The rest
# then run on all three GPUs.
case_thirty() {
    start
    cd "$DIR/work"
    awk -F, '!/^#/ && $1!="name" && $2==1 && $4!="" {print $1, $3, $4, $6}' "$CATALOG" |
        head -25 > workloads
    [ "$(wc -l < workloads)" = 25 ] || fail "catalog: $(wc -l < workloads) workloads"
    "$AEGIS" drain 1 > /dev/null && "$AEGIS" drain 2 > /dev/null || fail drain
    ids=$(workload $(head -1 workloads) --until "$DIR/work/go") || fail "submit first"
    oom=$(oom_job 16000 --until "$DIR/work/grow") || fail "submit oom-16000"
    wait_until "jobs $ids and $oom together on GPU 0" together "$ids" "$oom"
    touch grow # 19868 MiB beside 2 x 16000 do not fit in 40960
    until_job "$oom" "assert d['attempt_list'][0]['how']=='oom', d"
    touch go
    "$AEGIS" resume 1 > /dev/null && "$AEGIS" resume 2 > /dev/null || fail resume
    n=1 oom_mib=(17000 18000 16500)
    while read -r line; do
        ids="$ids $(workload $line)"
        n=$((n + 1))
        if [ $((n % 5)) = 1 ] && [ ${#oom_mib[@]} -gt 0 ]; then
            oom="$oom $(oom_job "${oom_mib[0]}")"
            oom_mib=("${oom_mib[@]:1}")
        fi
    done < <(tail -n +2 workloads)
    huge=$("$AEGIS" submit --name too-big -- "$FAKE" --mib 45000 --seconds 1)
    ( while sleep 0.3; do "$AEGIS" gpus --json 2>/dev/null; done ) > gpus.log &
    sampler=$!
    "$AEGIS" wait $ids $oom > wait.out
    "$AEGIS" wait "$huge" > huge.out
    kill $sampler
    grep -v ' done ' wait.out && fail "a sized job did not finish"
    grep -q "failed.*exclusive attempt" huge.out || fail "too-big: $(cat huge.out)"
    "$AEGIS" show "$huge" | grep -q "exclusive attempt" || fail "show too-big"
    "$AEGIS" ls --all --json | pyjson "
oom=[j for j in d if j['name'].startswith('oom-')]
assert all(j['state']=='done' for j in oom), oom
climbed=sum(j['attempts']>1 for j in oom)
print('oom jobs that climbed the ladder:', climbed, [j['attempts'] for j in oom])
assert climbed>=1
" || fail "ladder"
    python3 - gpus.log <<'PY' || fail "memory"
import json, sys
for line in open(sys.argv[1]):
    try: g = json.loads(line)
    except ValueError: continue
    for gpu in g['gpus']:
        assert gpu['used_mib'] <= gpu['total_mib'], gpu
PY
}

# kill -9 aegisd again and again (three times at least, however fast the
# clients are) while 4 clients submit 400 jobs: each acknowledged once,
# each run. (1,000 took past the TIMEOUT on a loaded machine.)
case_crash() {
    start
    cd "$DIR/work"
    client() {
        for i in $(seq 100); do
            until id=$("$AEGIS" submit -- true 2>/dev/null); do sleep 0.05; done
            echo "$id"
        done > "acked.$1"
    }
    for c in 1 2 3 4; do client $c & done
    clients=$(jobs -p)
    kills=0
    acked_now() { cat acked.* 2>/dev/null | wc -l; }
    while kill -0 $clients 2>/dev/null || [ "$kills" -lt 3 ]; do
        # each aegisd lives until the clients got 10 more submits through
        # (or are done), so a slow machine, where a start takes longer
        # than the pause, still makes progress between kills
        before=$(acked_now)
        sleep 0.4
        while kill -0 $clients 2>/dev/null &&
              [ "$(acked_now)" -lt $((before + 10)) ]; do sleep 0.05; done
        p=$(daemon_pid); [ -n "$p" ] && kill -9 "$p" && kills=$((kills + 1))
        until "$AEGISD" --socket "$AEGIS_SOCKET" --state-dir "$DIR/state" \
                --config "$DIR/aegis.yaml" 2>/dev/null; do sleep 0.1; done
    done
    wait
    cat acked.* > acked
    echo "kills: $kills, acknowledged: $(wc -l < acked)"
    [ "$(wc -l < acked)" = 400 ] || fail "acknowledged $(wc -l < acked)"
    [ "$(sort acked | uniq -d | wc -l)" = 0 ] || fail "an id acknowledged twice"
    "$AEGIS" wait $(cat acked) > /dev/null || fail "not every job completed"
    "$AEGIS" ls --all --json | pyjson "
import collections
ids=[j['id'] for j in d]; assert len(ids)==len(set(ids))
acked=[int(x) for x in open('acked')]
assert set(acked) <= set(ids)
assert all(j['state']=='done' for j in d), [j for j in d if j['state']!='done'][:3]
print('jobs in store:', len(ids))" || fail "store after crashes"
}

# SIGTERM leaves jobs running; the next aegisd re-adopts them into its
# core, so their GPUs still take a collocated job, and still collects their
# exit status; a job whose shim died is lost and requeued.
case_restart() {
    start
    cd "$DIR/work"
    ids=""
    # they run until the small job has been placed beside them, or it
    # would find idle GPUs
    for g in 0 1 2; do
        ids="$ids $("$AEGIS" submit -- "$FAKE" --mib 500 --seconds 0 --until "$DIR/placed")"
    done
    for id in $ids; do
        until "$AEGIS" show "$id" 2>/dev/null | grep -q "seen on GPU"; do sleep 0.1; done
    done
    kill -TERM "$(daemon_pid)"
    while [ -n "$(daemon_pid)" ]; do sleep 0.1; done
    start
    small=$("$AEGIS" submit --mem 200 -- "$FAKE" --mib 200 --seconds 1)
    "$AEGIS" wait "$small" > /dev/null || fail "small job beside re-adopted ones"
    # every GPU holds a re-adopted job: a shared placement proves they are
    # open (aegisd used to drain them until those jobs ended)
    "$AEGIS" show --json "$small" | pyjson "
a=d['attempt_list'][0]
assert not a['exclusive'], ('placed alone: re-adopted GPUs closed', a)" ||
        fail "no collocation beside re-adopted jobs"
    touch "$DIR/placed"
    "$AEGIS" wait $ids > /dev/null || fail "re-adopted jobs not done"
    for id in $ids; do
        "$AEGIS" show "$id" | grep -q "re-adopted" || fail "no re-adoption event"
    done
    # its first attempt has started (not just been recorded: one killed
    # before its start is requeued, not lost) and runs until killed
    id2=$("$AEGIS" submit -- sh -c \
        '[ -e tried ] && { echo second-try; exit 0; }; touch tried; sleep 600')
    until_file "$DIR/work/tried"
    # and its watcher has recorded it (aegisd learns the job's pid from the
    # status file; a watcher killed before that never started it)
    until_job "$id2" "assert d['attempt_list'][-1]['job_pid']"
    shim=$("$AEGIS" show --json "$id2" | pyjson "print(d['attempt_list'][-1]['shim_pid'])")
    kill -9 "$(daemon_pid)"
    kill -9 "$shim"
    # until it is gone: a start before would find its lock still held
    while [ -n "$(daemon_pid)" ]; do sleep 0.1; done
    start
    "$AEGIS" wait "$id2" > /dev/null || fail "lost job not rerun"
    "$AEGIS" show "$id2" | grep -q "lost" || fail "no lost attempt: $("$AEGIS" show "$id2")"
    # SIGHUP: a bad file is refused and the old configuration kept
    echo "smact_mux: 1" >> "$DIR/aegis.yaml"
    kill -HUP "$(daemon_pid)"
    until grep -q "not reloaded.*aegis.yaml:3: .*smact_mux" "$DIR/state/aegisd.log"; do sleep 0.1; done
    sed -i '$d' "$DIR/aegis.yaml"
    echo "policy: lucid" >> "$DIR/aegis.yaml"
    kill -HUP "$(daemon_pid)"
    until grep -q "reloaded $DIR/aegis.yaml" "$DIR/state/aegisd.log"; do sleep 0.1; done
    "$AEGIS" wait "$("$AEGIS" submit -- true)" > /dev/null || fail "job after reload"
}

# A job requeued by an OOM keeps its rung of the ladder across a restart:
# it fails beside three big jobs, waits in the recovery queue for 10240
# MiB they leave no room for, and its next attempt, after aegisd restarted,
# is admitted with 10240 MiB, not a fresh 5120.
case_retry() {
    echo "ladder_from_free: 0" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    big=""
    # 35 s: the big jobs must still run after the restart (slow machines too)
    for g in 0 1 2; do big="$big $("$AEGIS" submit -- "$FAKE" --mib 31000 --seconds 35)"; done
    oom=$("$AEGIS" submit -- sh -c 'if [ -e tried ]; then exit 0; fi; touch tried
                                      echo "CUDA out of memory" >&2; exit 1')
    requeued="assert (d['state']=='queued' and len(d['attempt_list'])==1 and
        d['attempt_list'][0]['how']=='oom' and d['retry_floor']==10240), d"
    until "$AEGIS" show --json "$oom" | pyjson "$requeued" 2>/dev/null; do sleep 0.2; done
    kill -TERM "$(daemon_pid)"
    while [ -n "$(daemon_pid)" ]; do sleep 0.1; done
    start
    "$AEGIS" show --json "$oom" | pyjson "$requeued" || fail "retry lost its place"
    "$AEGIS" wait "$oom" $big > /dev/null || fail "jobs not done after restart"
    "$AEGIS" show --json "$oom" | pyjson "
a=d['attempt_list']
assert [x['floor_mib'] for x in a]==[5120, 10240], a" || fail "floor not kept"
}

# A second user can list the first user's job but not see its command,
# read its log or cancel it.
case_security() {
    [ "$(id -u)" = 0 ] || { echo "needs root to run jobs as two users"; exit 77; }
    start
    cd "$DIR/work"
    as() { local u=$1; shift; runuser -u "$u" -- env AEGIS_SOCKET="$AEGIS_SOCKET" \
           AEGIS_TEST_GPU_DIR="$AEGIS_TEST_GPU_DIR" "$@"; }
    local token="env-secret-$$"
    id=$(as nobody env AEGIS_E2E_TOKEN="$token" "$AEGIS" submit -- \
         sh -c 'echo secret-output; echo "$AEGIS_E2E_TOKEN"; sleep 30') || fail "submit as nobody"
    until as nobody "$AEGIS" log "$id" | grep -q "$token"; do sleep 0.1; done
    # the job has its environment; no process's arguments show it (the
    # job's watcher got it as arguments once: ps showed it to everyone)
    ps -eo args | grep -v grep | grep -q "$token" && fail "ps shows a job's environment"
    [ "$(stat -c %U:%a "$DIR/state/logs/$id.out")" = nobody:600 ] || fail "log owner/mode"
    [ "$(as nobody "$AEGIS" log "$id" | head -1)" = secret-output ] || fail "owner cannot read log"
    as nobody "$AEGIS" show "$id" | grep -q secret-output || fail "owner cannot see command"
    as daemon "$AEGIS" cancel "$id" 2>&1 | grep -q "permission denied" || fail "cancel by other"
    as daemon "$AEGIS" log "$id" 2>&1 | grep -q "permission denied" || fail "log by other"
    as daemon "$AEGIS" show "$id" | grep -q secret && fail "show leaks command"
    as daemon "$AEGIS" ls --json | grep -q secret && fail "ls leaks command"
    as daemon "$AEGIS" ls --json | pyjson "assert d[0]['user']=='nobody'" || fail "ls by other"
    as daemon cat "$DIR/state/logs/$id.out" 2>/dev/null && fail "log file readable"
    as daemon "$AEGIS" drain 0 2>/dev/null && fail "drain by other"
    as nobody "$AEGIS" cancel "$id" > /dev/null || fail "owner cannot cancel"
    "$AEGIS" wait "$id" | grep -q cancelled || fail "not cancelled"
}

# Malformed, oversized and mutated requests each get an error; the daemon
# stays up and answers afterwards.
case_malformed() {
    start
    python3 - "$AEGIS_SOCKET" <<'PY' || fail "malformed requests"
import json, random, socket, sys
path = sys.argv[1]
def ask(data):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    try:
        s.sendall(data)
    except OSError:
        pass
    s.shutdown(socket.SHUT_WR)
    buf = b''
    while not buf.endswith(b'\n'):
        chunk = s.recv(65536)
        if not chunk: break
        buf += chunk
    s.close()
    return json.loads(buf)
bad = [b'\n', b'garbage\n', b'{"op":"ls"\n', b'{"op":"nope"}\n', b'[]\n',
       b'{"op":"show","id":"1"}\n', b'{"op":"submit"}\n', b'\xff\xfe\n',
       b'{"op":"submit","cwd":"/","jobs":[{"cmd":["a\\u0000"]}]}\n']
for b in bad:
    r = ask(b)
    assert r['ok'] is False and r['error'], (b, r)
# a cancel answers each id it could not cancel, with why
r = ask(b'{"op":"cancel","ids":[99999]}\n')
assert r['ok'] and r['cancelled'] == [] and r['failed'] == [
    {'id': 99999, 'error': 'job 99999: no such job'}], r
r = ask(b'x' * (5 << 20))
assert r['ok'] is False and 'longer than' in r['error'], r
random.seed(7)
seed = b'{"op":"submit","cwd":"/tmp","env":["A=1"],"jobs":[{"cmd":["true"],"gpus":1}]}'
errors = 0
for i in range(300):
    m = bytearray(seed)
    for _ in range(random.randint(1, 4)):
        m[random.randrange(len(m))] = random.choice(b'{}[]":,0123456789x\\')
    if b'\n' in m: continue
    r = ask(bytes(m) + b'\n')
    errors += not r['ok']
print('mutated requests answered, errors:', errors)
assert ask(b'{"op":"ls"}\n')['ok']
PY
    [ -n "$(daemon_pid)" ] || fail "aegisd died"
    "$AEGIS" ls > /dev/null || fail "aegisd does not answer"
}

# A chain of 20,000 afterok jobs whose head fails: each cancellation
# cancels the next. Told by recursion, that overflowed aegisd's stack, and
# again at every restart on the same state.
case_dep_chain() {
    start
    cd "$DIR/work"
    PYTHONPATH="$(dirname "$0")" python3 - "$AEGIS_SOCKET" > last.txt <<'PY' ||
import json, sys
from e2e_sock import connect, read_line
n = 20000
jobs = [{"cmd": ["sh", "-c", "exit 3"]}] + [
    {"cmd": ["true"], "after": [{"index": i - 1, "kind": "afterok"}]}
    for i in range(1, n)]
s = connect(sys.argv[1])
s.sendall(json.dumps({"op": "submit", "cwd": "/tmp", "env": [],
                      "jobs": jobs}).encode() + b"\n")
print(json.loads(read_line(s))["ids"][-1])
PY
        fail "submit the chain"
    last=$(cat last.txt)
    "$AEGIS" wait "$last" >/dev/null && fail "the chain's end did not fail"
    [ -n "$(daemon_pid)" ] || fail "aegisd died"
    "$AEGIS" show --json "$last" | pyjson "
assert d['state']=='cancelled', d" || fail "the last job not cancelled"
}

# aegis report on a few jobs: a CO2 setting from the config, a 2-GPU job,
# a failure and a cancelled queued job; the CSV against its schema and
# its rows against the totals (check_report.py).
case_report() {
    printf 'grid_intensity_g_per_kwh: 400\npue: 1.2\n' >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    a=$("$AEGIS" submit --name small --mem 2000 -- "$FAKE" --mib 2000 --seconds 2 --smact 0.4)
    b=$("$AEGIS" submit --name "two, gpus" --gpus 2 -- "$FAKE" --mib 3000 --seconds 2)
    c=$("$AEGIS" submit -- sh -c 'exit 3')
    d=$("$AEGIS" submit --after "$c" -- true)
    "$AEGIS" wait "$a" "$b" "$c" "$d" >/dev/null
    "$AEGIS" report --csv > r.csv || fail "report --csv"
    "$AEGIS" report --json > r.json || fail "report --json"
    python3 "$(dirname "$0")/check_report.py" r.csv r.json daemon || fail "report schema"
    pyjson "
r={j['job_id']: j for j in d['jobs']}
assert d['grid_intensity_g_per_kwh']==400 and d['pue']==1.2, d
assert r[$a]['state']=='done' and r[$a]['energy_j']>0 and r[$a]['slowdown']>=1, r[$a]
assert abs(r[$b]['gpu_hours'] - 2*r[$b]['duration']/3600) < 1e-9, r[$b]
assert r[$c]['state']=='failed' and r[$c]['slowdown'] is None, r[$c]
assert r[$d]['state']=='cancelled' and r[$d]['attempts']==0, r[$d]
assert r[$d]['start_s'] is None and r[$d]['queue_wait_s']>=0, r[$d]
assert 'cmd' not in r[$a]" < r.json || fail "report rows"
    "$AEGIS" report | grep -q "all users" || fail "report text"
    "$AEGIS" report --since 1d --json | pyjson "assert len(d['jobs'])==4" || fail "--since 1d"
    "$AEGIS" report --since 2999-01-01 --json | pyjson "assert d['jobs']==[] and d['total']['jobs']==0" || fail "--since future"
    "$AEGIS" report --since soon 2>/dev/null; [ $? = 2 ] || fail "bad --since: exit 2"
    "$AEGIS" report --csv --json 2>/dev/null; [ $? = 2 ] || fail "--csv --json: exit 2"
    "$AEGIS" report --help | grep -q SYNOPSIS || fail "report --help"
    # a bad value is refused with file:line, and so is an unknown key
    printf 'pue: 0.5\n' > bad.yaml
    "$AEGISD" --socket "$DIR/x.sock" --state-dir "$DIR/x" --config bad.yaml 2>&1 |
        grep -q "bad.yaml:1: pue" || fail "pue 0.5 accepted"
}

# MPS on GPUs 0 and 2 (GPU 1 naive): each one's control daemon is started
# once when aegisd starts and stopped once when it stops; one left running
# for a job across a restart is kept, not started again, and stopped once
# by the aegisd that kept it. A job on an MPS
# GPU gets its pipe and log folders, its floor as pinned memory when
# shared, and the thread share its submitter asked for (--mps-threads, or
# the variable in the submitter's environment); a job on the naive GPU gets
# none of it.
case_mps() {
    local mps st=$DIR/state
    mps=$(dirname "$FAKE")/aegis-fake-mps-control
    printf 'sharing:\n  default: mps\n  1: naive\nmps_control: %s\n' "$mps" \
        >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    "$AEGIS" drain 1 >/dev/null && "$AEGIS" drain 2 >/dev/null || fail drain
    # the first job runs until the test has restarted aegisd (alone.go)
    alone=$(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 "$AEGIS" submit --mem 1000 -- \
            "$FAKE" --mib 1000 --seconds 0 --until "$DIR/work/alone.go") || fail submit
    until "$AEGIS" show "$alone" 2>/dev/null | grep -q "seen on GPU"; do sleep 0.1; done
    shared=$("$AEGIS" submit --mem 1000 --mps-threads 25 -- "$FAKE" --mib 1000 --seconds 1)
    "$AEGIS" wait "$shared" >/dev/null || fail "shared MPS job"
    # stop with the first job still running: GPU 0's daemon stays for it
    kill -TERM "$(daemon_pid)"
    while [ -n "$(daemon_pid)" ]; do sleep 0.1; done
    start 2> restart.err
    grep -q "GPU 0: MPS control daemon already running on $st/mps/0/pipe: kept" \
        restart.err || fail "GPU 0's daemon not kept: $(cat restart.err)"
    touch alone.go
    "$AEGIS" wait "$alone" >/dev/null || fail "MPS job across a restart"
    "$AEGIS" resume 1 >/dev/null && "$AEGIS" drain 0 >/dev/null || fail resume
    naive=$("$AEGIS" submit -- "$FAKE" --mib 100 --seconds 0)
    "$AEGIS" wait "$naive" >/dev/null || fail "naive job"
    [ "$("$AEGIS" log "$alone" | head -1)" = "aegis-fakegpu: devices=GPU-aegis-test-0000-0 mps_pipe=$st/mps/0/pipe threads=50 pinned=-" ] ||
        fail "alone job's MPS env: $("$AEGIS" log "$alone")"
    [ "$("$AEGIS" log "$shared" | head -1)" = "aegis-fakegpu: devices=GPU-aegis-test-0000-0 mps_pipe=$st/mps/0/pipe threads=25 pinned=0=3048M" ] ||
        fail "shared job's MPS env: $("$AEGIS" log "$shared")"
    [ "$("$AEGIS" log "$naive" | head -1)" = "aegis-fakegpu: devices=GPU-aegis-test-0000-1 mps_pipe=- threads=- pinned=-" ] ||
        fail "naive job's env: $("$AEGIS" log "$naive")"
    "$AEGIS" show "$shared" | grep -q "MPS client of GPU 0's control daemon, memory pinned at its floor, 25% of its threads" ||
        fail "no MPS event: $("$AEGIS" show "$shared")"
    "$AEGIS" submit --mps-threads 101 -- true 2>/dev/null; [ $? = 2 ] ||
        fail "--mps-threads 101 accepted"
    printf 'command: "true"\nmps_threads_pct: 0\n' > zero.yaml
    "$AEGIS" submit zero.yaml 2>/dev/null; [ $? = 2 ] || fail "mps_threads_pct 0 accepted"
    # SIGHUP turning GPU 2 naive stops its daemon
    sed -i 's/^  1: naive$/  1: naive\n  2: naive/' "$DIR/aegis.yaml"
    reload
    grep -q "GPU 2: sharing mps -> naive" "$st/aegisd.log" || fail "GPU 2 still mps"
    kill -TERM "$(daemon_pid)"
    while [ -n "$(daemon_pid)" ]; do sleep 0.1; done
    local g0="gpus=GPU-aegis-test-0000-0 pipe=$st/mps/0/pipe log=$st/mps/0/log"
    local g2="gpus=GPU-aegis-test-0000-2 pipe=$st/mps/2/pipe log=$st/mps/2/log"
    # first run: both start, GPU 2's stops (GPU 0 keeps a job); second
    # run: GPU 2's starts again and stops at the reload, GPU 0's at the end
    printf '%s\n' "start $g0" "start $g2" "command quit $g2" "stop $g2" \
        "start $g2" "command quit $g2" "stop $g2" "command quit $g0" \
        "stop $g0" > want.log
    diff want.log "$AEGIS_TEST_GPU_DIR/mps-calls.log" >&2 ||
        fail "mps-calls.log is not the expected sequence"
    # bad modes are refused, naming the file, line and key
    refused 'sharing:\n  7: mps\n' "bad.yaml:2: sharing: 7: no such GPU (3 found)"
    refused 'sharing: shared\n' "bad.yaml:1: sharing: 'shared' is not a sharing mode"
    # MIG instances someone else made on a mig GPU: refused at start
    mkdir "$DIR/gpu2" && printf 'mode 1\ngi 5 19 6 4864\nci 5 0 0\n' > "$DIR/gpu2/mig0"
    AEGIS_TEST_GPU_DIR=$DIR/gpu2 refused 'sharing: mig\n' \
        "GPU 0 holds a MIG instance aegisd did not make (GPU instance 5 at memory slice 6, MIG-aegis-test-0-5-0)"
}

# aegisd, given the config printf format $1, refuses to start, saying $2.
refused() {
    printf "$1" > bad.yaml
    "$AEGISD" --socket "$DIR/b.sock" --state-dir "$DIR/b" --config bad.yaml \
        --foreground 2> bad.err && fail "config accepted: $1"
    grep -qF "$2" bad.err || fail "config $1: $(cat bad.err)"
}

# The NVML calls aegisd makes on test GPU $1 to create the MIG instance
# with GPU instance id $2 of NVML profile $3 (id $4) at start $5, size $6,
# its compute instance of profile $7, while GPU instances 1..$2-1 exist.
mig_create_calls() {
    local g=gpu$1 gi=$2 k
    echo "nvmlDeviceGetMigMode $g -> 0"
    echo "nvmlDeviceGetGpuInstanceProfileInfo $g profile=$3 -> 0"
    echo "nvmlDeviceCreateGpuInstanceWithPlacement $g profileId=$4 start=$5 size=$6 -> 0"
    echo "nvmlGpuInstanceGetInfo $g/gi$gi -> 0"
    echo "nvmlGpuInstanceGetComputeInstanceProfileInfo $g/gi$gi profile=$7 engProfile=0 -> 0"
    echo "nvmlGpuInstanceCreateComputeInstance $g/gi$gi profileId=$7 -> 0"
    echo "nvmlDeviceGetMaxMigDeviceCount $g -> 0"
    for ((k = 1; k <= gi; k++)); do # MIG devices in GPU instance order
        echo "nvmlDeviceGetMigDeviceHandleByIndex $g index=$((k - 1)) -> 0"
        echo "nvmlDeviceGetGpuInstanceId $g/gi$k/ci0 -> 0"
    done
    echo "nvmlDeviceGetComputeInstanceId $g/gi$gi/ci0 -> 0"
    echo "nvmlDeviceGetUUID $g/gi$gi/ci0 -> 0"
}

# ... and to destroy GPU instance $2 (compute instance 0) of GPU $1.
mig_destroy_calls() {
    echo "nvmlDeviceGetGpuInstanceById gpu$1 id=$2 -> 0"
    echo "nvmlGpuInstanceGetComputeInstanceById gpu$1/gi$2 id=0 -> 0"
    echo "nvmlComputeInstanceDestroy gpu$1/gi$2/ci0 -> 0"
    echo "nvmlGpuInstanceDestroy gpu$1/gi$2 -> 0"
}

# The first line aegis-fakegpu printed for job $1: the devices it was given.
devices_of() { "$AEGIS" log "$1" | head -1 | sed 's/^aegis-fakegpu: devices=\([^ ]*\).*/\1/'; }

# MIG on one A100-40GB: three jobs get the smallest profile holding their
# demand (--mem + 2048 MiB) at the lowest free start, each on its own MIG
# device; a job that outgrows its instance runs out of memory there and
# climbs to the next profile; a job no profile holds gets the whole GPU
# with MIG mode off. Every instance is destroyed when its attempt ends, and
# the NVML calls are exactly the expected ones. Then a job survives a
# crash of aegisd with its instance, which the next aegisd destroys when
# the job ends; and a job that fragmentation keeps out waits until a valid
# start is free (at the latest, the GPU empty) and takes it.
case_mig() {
    export AEGIS_TEST_GPUS=1x40960
    echo "sharing: mig" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    # all three placed, then released one by one, so the instances go in
    # a known order however fast this machine is
    a=$("$AEGIS" submit --mem 2000 -- "$FAKE" --mib 2000 --seconds 0 --until "$DIR/release.a")  # 1g.5gb
    b=$("$AEGIS" submit --mem 7000 -- "$FAKE" --mib 7000 --seconds 0 --until "$DIR/release.b")  # 1g.10gb
    c=$("$AEGIS" submit --mem 15000 -- "$FAKE" --mib 15000 --seconds 0 --until "$DIR/release.c") # 3g.20gb
    for j in a b c; do
        until "$AEGIS" show "${!j}" | grep -q "MIG instance .* created"; do sleep 0.1; done
    done
    for j in a b c; do
        touch "$DIR/release.$j"
        "$AEGIS" wait "${!j}" >/dev/null || fail "MIG job $j"
    done
    oom=$("$AEGIS" submit --mem 2000 -- "$FAKE" --mib 6000 --seconds 0)
    "$AEGIS" wait "$oom" >/dev/null || fail "OOM in a slice not recovered"
    big=$("$AEGIS" submit --mem 39000 -- "$FAKE" --mib 30000 --seconds 0)
    "$AEGIS" wait "$big" >/dev/null || fail "whole-GPU job on a MIG GPU"
    [ "$(devices_of "$a") $(devices_of "$b") $(devices_of "$c")" = \
      "MIG-aegis-test-0-1-0 MIG-aegis-test-0-2-0 MIG-aegis-test-0-3-0" ] ||
        fail "MIG devices: $(devices_of "$a") $(devices_of "$b") $(devices_of "$c")"
    [ "$(devices_of "$oom") $(devices_of "$big")" = \
      "MIG-aegis-test-0-1-0 GPU-aegis-test-0000-0" ] || fail "oom/big devices"
    "$AEGIS" show "$b" | grep -q "MIG instance 1g.10gb created at memory slice 2 of GPU 0 (GPU instance 2, compute instance 0): MIG-aegis-test-0-2-0" ||
        fail "no creation event: $("$AEGIS" show "$b")"
    "$AEGIS" show "$b" | grep -q "MIG instance 1g.10gb destroyed" || fail "no destruction event"
    "$AEGIS" show --json "$oom" | pyjson "
a=d['attempt_list']; assert [x['how'] for x in a]==['oom','ok'], a
assert a[1]['floor_mib']==9856, a" || fail "OOM in 1g.5gb did not climb to 1g.10gb"
    {
        echo "nvmlDeviceGetMigMode gpu0 -> 0"          # startup: check,
        echo "nvmlDeviceGetMigMode gpu0 -> 0"          # no instances (off)
        echo "nvmlDeviceGetMigMode gpu0 -> 0"          # first job: MIG on
        echo "nvmlDeviceSetMigMode gpu0 mode=1 -> 0"   # (its check that
        mig_create_calls 0 1 0 19 0 1 0                # it took opens this)
        mig_create_calls 0 2 9 15 2 2 0
        mig_create_calls 0 3 2 9 4 4 2
        mig_destroy_calls 0 1
        mig_destroy_calls 0 2
        mig_destroy_calls 0 3
        mig_create_calls 0 1 0 19 0 1 0                # the OOM job: 1g.5gb
        mig_destroy_calls 0 1
        mig_create_calls 0 1 9 15 0 2 0                # then 1g.10gb
        mig_destroy_calls 0 1
        echo "nvmlDeviceGetMigMode gpu0 -> 0"          # whole GPU: MIG off
        echo "nvmlDeviceSetMigMode gpu0 mode=0 -> 0"
        echo "nvmlDeviceGetMigMode gpu0 -> 0"
    } > want.log
    diff want.log "$AEGIS_TEST_GPU_DIR/mig-calls.log" >&2 ||
        fail "mig-calls.log is not the expected sequence"
    # a crash with a MIG job running: its instance outlives aegisd, goes
    # back to the job at the restart, and is destroyed when the job ends
    # (it runs until the next aegisd has re-adopted it: one that ended
    # while aegisd was down is collected, not re-adopted)
    long=$("$AEGIS" submit --mem 2000 -- "$FAKE" --mib 2000 --seconds 0 --until "$DIR/release.long")
    until "$AEGIS" show "$long" 2>/dev/null | grep -q "seen on GPU"; do sleep 0.1; done
    kill -9 "$(daemon_pid)"
    while [ -n "$(daemon_pid)" ]; do sleep 0.1; done
    grep -q "^gi " "$AEGIS_TEST_GPU_DIR/mig0" || fail "instance gone with aegisd"
    start
    "$AEGIS" show "$long" | grep -q "re-adopted" || fail "not re-adopted"
    touch "$DIR/release.long"
    "$AEGIS" wait "$long" >/dev/null || fail "MIG job across a crash"
    "$AEGIS" show "$long" | grep -q "MIG instance 1g.5gb destroyed" ||
        fail "instance not destroyed after the restart: $("$AEGIS" show "$long")"
    # a crash that takes the job's watcher too: the attempt is lost, its
    # instance destroyed at the restart, and the rerun gets a new one
    lost=$("$AEGIS" submit --mem 2000 -- "$FAKE" --mib 2000 --seconds 30)
    until "$AEGIS" show "$lost" 2>/dev/null | grep -q "seen on GPU"; do sleep 0.1; done
    shim=$("$AEGIS" show --json "$lost" | pyjson "print(d['attempt_list'][-1]['shim_pid'])")
    job=$("$AEGIS" show --json "$lost" | pyjson "print(d['attempt_list'][-1]['job_pid'])")
    kill -9 "$(daemon_pid)" "$shim" "$job"
    while [ -n "$(daemon_pid)" ]; do sleep 0.1; done
    start
    until "$AEGIS" show "$lost" | grep -q "attempt 2: MIG instance 1g.5gb created"; do sleep 0.1; done
    "$AEGIS" show "$lost" | grep -q "attempt 1: MIG instance 1g.5gb destroyed" ||
        fail "lost attempt's instance: $("$AEGIS" show "$lost")"
    "$AEGIS" cancel "$lost" >/dev/null
    "$AEGIS" wait "$lost" >/dev/null
    grep -q "^gi " "$AEGIS_TEST_GPU_DIR/mig0" && fail "instances left: $(cat "$AEGIS_TEST_GPU_DIR/mig0")"
    # fragmentation: 1g.5gb jobs on slices 0..5, of which those on 1 and 5
    # stay; a 3g.20gb job (starts 0 or 4) then finds 6 free slices but no
    # valid start, and waits until the job on slice 1 ends to take slice 0.
    # Each job runs until the test releases it (release.K), so where they
    # go does not depend on how fast this machine submits.
    ids=""
    for k in 1 2 3 4 5 6; do
        ids="$ids $("$AEGIS" submit --mem 2000 -- "$FAKE" --mib 2000 --seconds 0 --until "$DIR/release.$k")"
    done
    set -- $ids
    for k in 1 2 3 4 5 6; do
        until "$AEGIS" show "${!k}" | grep -q "1g.5gb created at memory slice"; do sleep 0.1; done
        "$AEGIS" show "${!k}" | grep -q "1g.5gb created at memory slice $((k - 1)) " ||
            fail "job on slice $((k - 1)): $("$AEGIS" show "${!k}")"
    done
    touch "$DIR/release.1" "$DIR/release.3" "$DIR/release.4" "$DIR/release.5"
    "$AEGIS" wait "$1" "$3" "$4" "$5" >/dev/null || fail "short 1g.5gb jobs"
    frag=$("$AEGIS" submit --mem 15000 -- "$FAKE" --mib 15000 --seconds 0)
    until "$AEGIS" show "$frag" | grep -q "^waiting .*MIG instance"; do sleep 0.1; done
    touch "$DIR/release.2"
    "$AEGIS" wait "$frag" "$2" >/dev/null || fail "3g.20gb after fragmentation"
    "$AEGIS" show "$frag" | grep -q "3g.20gb created at memory slice 0 " ||
        fail "fragmented job: $("$AEGIS" show "$frag")"
    # it waited for the job on slice 1, whose end frees the start 0
    freed=$("$AEGIS" show --json "$2" | pyjson "print(d['attempt_list'][-1]['ended'])")
    "$AEGIS" show --json "$frag" | pyjson "
assert d['submitted'] < $freed <= d['attempt_list'][0]['started'], (d, $freed)" ||
        fail "3g.20gb did not wait for a valid start"
    touch "$DIR/release.6"
    "$AEGIS" wait "$6" >/dev/null || fail "the job on slice 5"
    [ "$(grep -c CreateGpuInstance "$AEGIS_TEST_GPU_DIR/mig-calls.log")" = \
      "$(grep -c 'nvmlGpuInstanceDestroy.* -> 0' "$AEGIS_TEST_GPU_DIR/mig-calls.log")" ] ||
        fail "instances created and destroyed differ"
    grep -q "^gi " "$AEGIS_TEST_GPU_DIR/mig0" && fail "instances left: $(cat "$AEGIS_TEST_GPU_DIR/mig0")"
    return 0
}

# auto on two A100-40GB: a job whose demand fits a profile well (4048 MiB
# in 1g.5gb's 4864) goes to a MIG instance; one that would waste most of
# its profile (6048 MiB in 1g.10gb's 9856) runs as an MPS client of the
# other GPU. A reload to naive then stops both MPS daemons and turns MIG
# mode off where it was on. Exact NVML and MPS call sequences.
case_auto() {
    local mps st=$DIR/state
    mps=$(dirname "$FAKE")/aegis-fake-mps-control
    export AEGIS_TEST_GPUS=2x40960
    printf 'sharing: auto\nmps_control: %s\n' "$mps" >> "$DIR/aegis.yaml"
    start
    cd "$DIR/work"
    # small holds its MIG instance until odd has been placed: the calls
    # below have odd's placement before small's instance is destroyed
    small=$("$AEGIS" submit --mem 2000 -- "$FAKE" --mib 2000 --seconds 0 --until "$DIR/release.small")
    odd=$("$AEGIS" submit --mem 4000 -- "$FAKE" --mib 4000 --seconds 1)
    wait_until "the odd job placed" eval '! is_state "$odd" queued'
    touch "$DIR/release.small"
    "$AEGIS" wait "$small" "$odd" >/dev/null || fail "auto jobs"
    "$AEGIS" gpus --json | pyjson "
assert [g['sharing'] for g in d['gpus']]==['auto','auto'], d" || fail "gpus --json: sharing"
    [ "$("$AEGIS" log "$small" | head -1)" = "aegis-fakegpu: devices=MIG-aegis-test-0-1-0 mps_pipe=- threads=- pinned=-" ] ||
        fail "MIG job: $("$AEGIS" log "$small")"
    [ "$("$AEGIS" log "$odd" | head -1)" = "aegis-fakegpu: devices=GPU-aegis-test-0000-1 mps_pipe=$st/mps/1/pipe threads=- pinned=-" ] ||
        fail "MPS job: $("$AEGIS" log "$odd")"
    # SIGHUP to naive: both MPS daemons stop, MIG mode goes off on GPU 0
    sed -i 's/^sharing: auto$/sharing: naive/' "$DIR/aegis.yaml"
    reload
    kill -TERM "$(daemon_pid)"
    while [ -n "$(daemon_pid)" ]; do sleep 0.1; done
    {
        echo "nvmlDeviceGetMigMode gpu0 -> 0"          # startup: checks,
        echo "nvmlDeviceGetMigMode gpu1 -> 0"
        echo "nvmlDeviceGetMigMode gpu0 -> 0"          # no instances (off)
        echo "nvmlDeviceGetMigMode gpu1 -> 0"
        echo "nvmlDeviceGetMigMode gpu0 -> 0"          # small: MIG on GPU 0
        echo "nvmlDeviceSetMigMode gpu0 mode=1 -> 0"
        mig_create_calls 0 1 0 19 0 1 0
        echo "nvmlDeviceGetMigMode gpu1 -> 0"          # odd: GPU 1, MIG off
        mig_destroy_calls 0 1
        echo "nvmlDeviceGetMigMode gpu0 -> 0"          # reload: MIG off
        echo "nvmlDeviceSetMigMode gpu0 mode=0 -> 0"
        echo "nvmlDeviceGetMigMode gpu0 -> 0"
        echo "nvmlDeviceGetMigMode gpu1 -> 0"
    } > want.log
    diff want.log "$AEGIS_TEST_GPU_DIR/mig-calls.log" >&2 ||
        fail "mig-calls.log is not the expected sequence"
    local g0="gpus=GPU-aegis-test-0000-0 pipe=$st/mps/0/pipe log=$st/mps/0/log"
    local g1="gpus=GPU-aegis-test-0000-1 pipe=$st/mps/1/pipe log=$st/mps/1/log"
    printf '%s\n' "start $g0" "start $g1" "command quit $g0" "stop $g0" \
        "command quit $g1" "stop $g1" > want-mps.log
    diff want-mps.log "$AEGIS_TEST_GPU_DIR/mps-calls.log" >&2 ||
        fail "mps-calls.log is not the expected sequence"
}

e2e_run
