#!/bin/bash
# e2e_metrics.sh -- aegisd's Prometheus endpoint (metrics_listen): a scrape
# that promtool accepts, a real Prometheus server (Debian's) that scrapes
# it and answers a job's memory and a GPU's energy through its HTTP API,
# and HTTP clients that misbehave without hurting aegisd.
set -u
AEGISD=$1 AEGIS=$2 NVML=$3 FAKE=$4 CATALOG=$5 CASE=$6
source "$(dirname "$0")/e2e_lib.sh"

# Starts aegisd serving its metrics on a free port ($PORT).
start_metrics() {
    PORT=$(free_port)
    echo "metrics_listen: 127.0.0.1:$PORT" >> "$DIR/aegis.yaml"
    start
}

# GET $1 from aegisd's endpoint into scrape.txt (5 s at most); the HTTP
# status is printed.
scrape() {
    curl -s -m 5 -o scrape.txt -w '%{http_code}' "http://127.0.0.1:$PORT$1"
}

# Polls `cond` (a shell command) every 0.2 s for at most $2 s.
await() {
    local until=$((SECONDS + $2))
    until eval "$1"; do
        [ $SECONDS -lt $until ] || return 1
        sleep 0.2
    done
}

# A running job's memory, a GPU's energy and the counters, in a scrape
# promtool accepts; a job name needing escapes stays one label value.
case_metrics_scrape() {
    export AEGIS_DCGM_LIBRARY=$DIR/no-libdcgm.so # none, even on a GPU server
    cd "$DIR/work"
    start_metrics
    id=$("$AEGIS" submit --name 'say "hi"\now' -- "$FAKE" --mib 1500 --seconds 30) ||
        fail submit
    await "[ \"\$(scrape /metrics)\" = 200 ] && grep -q '^aegis_job_memory_used_bytes{job_id=\"$id\"[^}]*} [1-9]' scrape.txt" 20 ||
        fail "no memory of job $id in /metrics: $(cat scrape.txt)"
    promtool check metrics < scrape.txt > promtool.txt 2>&1 ||
        fail "promtool check metrics: $(cat promtool.txt)"
    grep -qF 'name="say \"hi\"\\now"' scrape.txt || fail "name not escaped: $(grep ^aegis_job_state scrape.txt)"
    grep -q '^aegis_gpu_energy_joules_total{gpu="0"} [0-9]' scrape.txt || fail "no energy of GPU 0"
    grep -q '^aegis_placements_total 1$' scrape.txt || fail "placements: $(grep placements scrape.txt)"
    grep -q '^aegis_scheduling_pass_seconds_count [1-9]' scrape.txt || fail "no pass histogram"
    grep -q '^aegis_gpu_info{gpu="0",.*sharing="naive"' scrape.txt || fail "no sharing mode"
    grep -q '^aegis_gpu_sm_active_ratio' scrape.txt && fail "SMACT without DCGM"
    [ "$(scrape /nothing)" = 404 ] || fail "/nothing is not a 404"
    # a restarted aegisd adopts the job under its name
    kill "$(daemon_pid)"
    await "[ -z \"\$(daemon_pid)\" ]" 10 || fail "aegisd did not stop"
    start
    await "[ \"\$(scrape /metrics)\" = 200 ] && grep -qF 'aegis_job_state{job_id=\"$id\",user=\"root\",name=\"say \\\"hi\\\"\\\\now\",gpu=\"' scrape.txt" 10 ||
        fail "job $id after a restart: $(grep aegis_job_state scrape.txt)"
    "$AEGIS" cancel "$id" > /dev/null && "$AEGIS" wait "$id" > /dev/null
    await "[ \"\$(scrape /metrics)\" = 200 ] && ! grep -q 'job_id=\"$id\"' scrape.txt" 10 ||
        fail "finished job $id still in /metrics"
    grep -q '^aegis_user_jobs_finished_total{user="[^"]*",state="cancelled"} 1$' scrape.txt ||
        fail "no cancelled job counted: $(grep finished scrape.txt)"
}

# With DCGM (the test library) on one GPU: the GPU's SMACT, SMOCC and
# DRAMA; a job's OOM beside a neighbour counted as a crash and a recovery
# (its attempts 1, requeued); a held job under the reason "held"; the
# neighbour's SM share; its user's GPU-seconds of the ended attempt.
case_metrics_oom() {
    export AEGIS_TEST_GPUS=1x40960
    export AEGIS_DCGM_LIBRARY=$(dirname "$NVML")/libaegis-testdcgm.so
    cd "$DIR/work"
    start_metrics
    big=$("$AEGIS" submit --name neighbour --mem 34000 -- \
          "$FAKE" --mib 34000 --smact 0.4 --seconds 600) || fail "submit neighbour"
    until_job "$big" "assert d['state']=='running' and d['active']"
    held=$("$AEGIS" submit --name later --after "$big" -- true) || fail "submit later"
    "$AEGIS" hold "$held" > /dev/null || fail hold
    # beside it (4000 + 2048 MiB fit), then 4000 MiB more: OOM. It grows
    # once aegisd has seen it on the GPU (--until grow), not at a time a
    # loaded machine's sampler may not reach.
    id=$("$AEGIS" submit --name grows --mem 4000 -- \
         "$FAKE" --mib 4000 --seconds 8 --oom-over --until "$DIR/work/grow") ||
        fail "submit grows"
    wait_until "job $id seen on the GPU" is_active "$id"
    touch grow
    await "[ \"\$(scrape /metrics)\" = 200 ] && grep -q '^aegis_oom_crashes_total 1$' scrape.txt" 30 ||
        fail "no OOM counted: $(grep -E 'oom|recover' scrape.txt)"
    promtool check metrics < scrape.txt > promtool.txt 2>&1 ||
        fail "promtool check metrics: $(cat promtool.txt)"
    grep -q '^aegis_recoveries_total 1$' scrape.txt || fail "recoveries: $(grep recover scrape.txt)"
    grep -q "^aegis_job_attempts{job_id=\"$id\",user=\"root\",name=\"grows\",gpu=\"\"} 1$" scrape.txt ||
        fail "attempts of job $id: $(grep -E "job_id=\"$id\"" scrape.txt)"
    grep -q "^aegis_job_state{job_id=\"$id\",.*state=\"queued\"} 1$" scrape.txt ||
        fail "job $id not requeued: $(grep aegis_job_state scrape.txt)"
    grep -q '^aegis_queue_jobs{reason="held"} 1$' scrape.txt || fail "held: $(grep queue_jobs scrape.txt)"
    grep -q "^aegis_job_sm_share_ratio{job_id=\"$big\",.*gpu=\"0\"} 0.4$" scrape.txt ||
        fail "SM share: $(grep sm_share scrape.txt)"
    for m in sm_active sm_occupancy dram_active; do
        grep -q "^aegis_gpu_${m}_ratio{gpu=\"0\"} [0-9.]*$" scrape.txt || fail "no $m with DCGM"
    done
    grep -q '^aegis_user_gpu_seconds_total{user="root"} [1-9]' scrape.txt ||
        fail "GPU-seconds: $(grep gpu_seconds scrape.txt)"
    "$AEGIS" cancel "$big" "$id" "$held" > /dev/null 2>&1
}

# Debian's prometheus scrapes aegisd every second; its query API answers
# the job's memory and GPU 0's energy.
case_metrics_prometheus() {
    command -v prometheus > /dev/null || { echo "no prometheus: skipped"; exit 77; }
    cd "$DIR/work"
    start_metrics
    id=$("$AEGIS" submit --name prom -- "$FAKE" --mib 2000 --seconds 40) || fail submit
    PROM=$(free_port)
    cat > prometheus.yml <<YAML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: aegis
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YAML
    prometheus --config.file=prometheus.yml --storage.tsdb.path="$DIR/work/tsdb" \
        --web.listen-address="127.0.0.1:$PROM" > prometheus.log 2>&1 &
    prom_pid=$!
    query() {
        curl -s -m 3 "http://127.0.0.1:$PROM/api/v1/query" --data-urlencode "query=$1"
    }
    await "query 'aegis_job_memory_used_bytes{job_id=\"$id\"}' | pyjson \"
r=d['data']['result']; assert r and float(r[0]['value'][1])>0, d\" 2>/dev/null" 40 ||
        fail "prometheus has no memory of job $id: $(tail -5 prometheus.log)"
    query 'aegis_gpu_energy_joules_total{gpu="0"}' | pyjson "
r=d['data']['result']; assert r and float(r[0]['value'][1])>0, d" ||
        fail "prometheus has no energy of GPU 0"
    query 'up{job="aegis"}' | pyjson "assert d['data']['result'][0]['value'][1]=='1', d" ||
        fail "scrape not up"
    kill "$prom_pid"
    await "! kill -0 $prom_pid 2>/dev/null" 10 || fail "prometheus did not stop"
}

# Bad requests get their status, and neither they nor clients that hang
# up, stall or flood stop aegisd serving scrapes and requests.
case_metrics_badhttp() {
    cd "$DIR/work"
    start_metrics
    python3 - "$PORT" <<'PY' || fail "bad HTTP"
import socket, sys, time
port = int(sys.argv[1])
def ask(data, hangup=False, half=False):
    s = socket.create_connection(('127.0.0.1', port), timeout=5)
    s.sendall(data)
    if hangup:
        s.close()
        return b''
    if half: # the client's side ends, as `nc -N` ends it
        s.shutdown(socket.SHUT_WR)
    out = b''
    try:
        while True:
            b = s.recv(65536)
            if not b: break
            out += b
    except ConnectionResetError:
        pass
    s.close()
    return out
def status(ans):
    return ans.split(b'\r\n', 1)[0]
assert status(ask(b'\x00\x01junk\r\n\r\n')) == b'HTTP/1.1 400 Bad Request', ask(b'junk\r\n\r\n')
assert status(ask(b'POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n')) == b'HTTP/1.1 405 Method Not Allowed'
assert status(ask(b'GET /x HTTP/1.1\r\n\r\n')) == b'HTTP/1.1 404 Not Found'
huge = ask(b'GET /metrics HTTP/1.1\r\nX: ' + b'a' * (1 << 20) + b'\r\n\r\n')
assert status(huge) == b'HTTP/1.1 431 Request Header Fields Too Large', huge[:80]
ask(b'GET /metr', hangup=True)
ask(b'GET /metrics HTTP/1.1\r\n\r\n', hangup=True)
half = ask(b'GET /metrics HTTP/1.0\r\n\r\n', half=True)
assert status(half) == b'HTTP/1.1 200 OK' and b'aegis_gpus ' in half, half[:200]
cut = ask(b'GET /metrics HTTP/1.1\r\nHost', half=True)
assert status(cut) == b'HTTP/1.1 400 Bad Request', cut[:200]
# a client that stalls mid-request while another scrapes
stall = socket.create_connection(('127.0.0.1', port), timeout=5)
stall.sendall(b'GET /metrics HTTP/1.1\r\nHost')
ok = ask(b'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n')
assert status(ok) == b'HTTP/1.1 200 OK' and b'aegis_gpus ' in ok, ok[:200]
assert b'Content-Type: text/plain; version=0.0.4' in ok
stall.close()
# more connections than aegisd serves at once, dropped: scrapes work again
# once it has seen them go
socks = [socket.create_connection(('127.0.0.1', port)) for _ in range(200)]
for s in socks: s.close()
deadline = time.time() + 10
while status(ask(b'GET /metrics HTTP/1.0\r\n\r\n')) != b'HTTP/1.1 200 OK':
    assert time.time() < deadline, 'no scrape after a flood'
    time.sleep(0.1)
# clients that half-close at once, more than the 64 pages a second aegisd
# writes (under its 64 connections): those past the limit wait their turn
# and are still answered
for _ in range(2):
    half = []
    for _ in range(60):
        s = socket.create_connection(('127.0.0.1', port), timeout=5)
        s.sendall(b'GET /metrics HTTP/1.0\r\n\r\n')
        s.shutdown(socket.SHUT_WR)
        half.append(s)
    for s in half:
        out = b''
        while True:
            b = s.recv(65536)
            if not b: break
            out += b
        s.close()
        assert status(out) == b'HTTP/1.1 200 OK', out[:80]
PY
    [ -n "$(daemon_pid)" ] || fail "aegisd died"
    "$AEGIS" ls > /dev/null || fail "aegisd does not answer"
}

# metrics_listen is checked with the rest of the configuration, off
# unless set, applied at a restart (not a reload), and a port that cannot
# be bound is logged while aegisd runs on.
case_metrics_config() {
    cd "$DIR/work"
    for bad in 'nohost' '127.0.0.1:0' '127.0.0.1:99999' '1.2.3:80' 'host:80x'; do
        printf 'metrics_listen: %s\n' "$bad" > bad.yaml
        "$AEGISD" --check-config bad.yaml 2> err.txt && fail "accepted '$bad'"
        grep -q 'bad.yaml:1: metrics_listen' err.txt || fail "'$bad': $(cat err.txt)"
    done
    printf 'metrics_listen: "[::1]:9464"\n' > good.yaml
    "$AEGISD" --check-config good.yaml > /dev/null || fail "[::1]:9464 refused"
    start
    pid=$(daemon_pid)
    ss -ltnpH | grep -q "pid=$pid," && fail "aegisd listens on TCP by default: $(ss -ltnp | grep "pid=$pid,")"
    echo "metrics_listen: 127.0.0.1:$(free_port)" >> "$DIR/aegis.yaml"
    kill -HUP "$pid"
    await "grep -q 'metrics_listen .* applies when aegisd restarts' '$DIR/state/aegisd.log'" 10 ||
        fail "reload: no word of metrics_listen"
    ss -ltnpH | grep -q "pid=$pid," && fail "a reload opened the metrics port"
    kill "$pid"
    await "[ -z \"\$(daemon_pid)\" ]" 10 || fail "aegisd did not stop"
    # a port another program holds
    python3 -c "import socket, time
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(60)" > held.txt &
    await "[ -s held.txt ]" 10 || fail "no port held"
    sed -i '/metrics_listen/d' "$DIR/aegis.yaml"
    echo "metrics_listen: 127.0.0.1:$(cat held.txt)" >> "$DIR/aegis.yaml"
    start 2> start.err
    grep -q "metrics_listen 127.0.0.1:$(cat held.txt): .*not serving /metrics" \
        start.err || fail "busy port not logged: $(cat start.err)"
    "$AEGIS" ls > /dev/null || fail "aegisd does not answer without its metrics"
}

# metrics_cache_s: one rendering serves every scrape for that long (the
# same bytes, a job submitted since not in them); a reload shortens it.
case_metrics_cache() {
    cd "$DIR/work"
    echo "metrics_cache_s: 3600" >> "$DIR/aegis.yaml"
    start_metrics
    [ "$(scrape /metrics)" = 200 ] || fail "first scrape"
    mv scrape.txt first.txt
    id=$("$AEGIS" submit -- sleep 60) || fail submit
    until_job "$id" "assert d['state']=='running'"
    [ "$(scrape /metrics)" = 200 ] || fail "second scrape"
    cmp -s first.txt scrape.txt || fail "a second rendering within metrics_cache_s: $(diff first.txt scrape.txt | head -5)"
    sed -i 's/^metrics_cache_s: .*/metrics_cache_s: 0.2/' "$DIR/aegis.yaml"
    kill -HUP "$(daemon_pid)"
    await "[ \"\$(scrape /metrics)\" = 200 ] && grep -q 'aegis_job_state{job_id=\"$id\"' scrape.txt" 20 ||
        fail "job $id not in /metrics after the reload: $(grep aegis_job_state scrape.txt)"
    "$AEGIS" cancel "$id" > /dev/null
}

# A connection must send its whole request within 2 s: one that sends
# nothing, one that stops mid-request and one that trickles a byte every
# 0.3 s are each closed then, not at the 10 s every connection gets.
case_metrics_reqtimeout() {
    cd "$DIR/work"
    start_metrics
    python3 - "$PORT" <<'PY' || fail "request timeout"
import select, socket, sys, time
port = int(sys.argv[1])
def closed_after(first, trickle=b''):
    """Seconds from connecting until aegisd closes the connection (30 s at
    most), sending `first`, then `trickle` a byte every 0.3 s."""
    t0 = time.monotonic()
    s = socket.create_connection(('127.0.0.1', port), timeout=5)
    s.sendall(first)
    while time.monotonic() - t0 < 30:
        if select.select([s], [], [], 0.3)[0]:
            try:
                got = s.recv(4096)
            except ConnectionResetError:
                got = b''
            assert got == b'', got[:100]
            return time.monotonic() - t0
        try:
            if trickle:
                s.send(trickle[:1])
                trickle = trickle[1:] or trickle
        except OSError:
            pass  # closed under us: the next select sees it
    raise AssertionError('never closed')
cases = [(b'', b''), (b'GET /metrics HTTP/1.1\r\nHo', b''),
         (b'GET /metrics HTTP/1.1\r\n', b'X-Slow: aaaaaaaaaaaaaaaaaaaaaaaa')]
for first, trickle in cases:
    t = closed_after(first, trickle)
    assert 1.9 <= t < 7, f'{first!r} {trickle!r}: closed after {t:.1f} s, not 2 s'
    print(f'{first!r}: closed after {t:.2f} s')
PY
    [ "$(scrape /metrics)" = 200 ] || fail "no scrape after the timeouts"
}

# Clients of one address that ask in a loop and never read their pages
# (4 threads) spent the 64 pages a second and took every slot: a scraper
# from another address got 0 of 18 scrapes. Clients are told apart by
# address now, and the scraper gets each of its pages.
case_metrics_fair() {
    cd "$DIR/work"
    start_metrics
    python3 - "$PORT" <<'PY' || fail "a scraper locked out"
import socket, sys, threading
port = int(sys.argv[1])
GET = b'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n'
done = threading.Event()
def hog():
    held = []
    while not done.is_set():
        try:
            s = socket.create_connection(('127.0.0.1', port), timeout=5)
            s.sendall(GET)
            held.append(s)
        except OSError:
            pass
        if len(held) > 100:
            held.pop(0).close()
    for s in held:
        s.close()
hogs = [threading.Thread(target=hog) for _ in range(4)]
for t in hogs:
    t.start()
try:
    for i in range(10):
        s = socket.create_connection(('127.0.0.1', port), timeout=10,
                                     source_address=('127.0.0.2', 0))
        s.sendall(GET)
        out = b''
        while (b := s.recv(1 << 16)):
            out += b
        s.close()
        assert out.startswith(b'HTTP/1.1 200 OK'), (i, out[:80])
    print('10 scrapes from 127.0.0.2 while 127.0.0.1 hogged the endpoint')
finally:
    done.set()
    for t in hogs:
        t.join()
PY
}

# With 10,000 jobs waiting, clients that take every connection slot (64
# that send a GET and never read, then 64 that send nothing) neither
# grow aegisd's memory past one shared page nor keep a new scraper out,
# and root's `aegis gpus` answers; past metrics_max_jobs (1000) jobs are
# counted, not listed.
case_metrics_hogs() {
    cd "$DIR/work"
    start_metrics
    for g in 0 1 2; do "$AEGIS" drain "$g" > /dev/null || fail "drain $g"; done
    # long names: the page of every job is over the 4 MiB a socket buffers
    "$AEGIS" submit --name "$(printf 'n%.0s' {1..120})" --array 0-9999 -- true \
        > ids.txt || fail "submit 10000 jobs"
    [ "$(wc -w < ids.txt)" = 10000 ] || fail "$(wc -w < ids.txt) jobs, not 10000"
    python3 - "$PORT" "$(daemon_pid)" "$AEGIS" <<'PY' || fail "hogs"
import fcntl, re, socket, struct, subprocess, sys, termios, time
port, pid, aegis = int(sys.argv[1]), sys.argv[2], sys.argv[3]
GET = b'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n'
def rss_mib():
    with open(f'/proc/{pid}/status') as f:
        return next(int(l.split()[1]) for l in f if l.startswith('VmRSS:')) / 1024
def scrape():
    s = socket.create_connection(('127.0.0.1', port), timeout=10)
    s.sendall(GET)
    out = b''
    while (b := s.recv(1 << 16)):
        out += b
    s.close()
    assert out.startswith(b'HTTP/1.1 200 OK'), out[:100]
    return out.decode()
def unread(s):
    return struct.unpack('i', fcntl.ioctl(s, termios.FIONREAD, b'\0' * 4))[0]
def until(cond, what):
    deadline = time.monotonic() + 30
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)
page = scrape()
listed = len(re.findall(r'^aegis_job_state\{', page, re.M))
unlisted = sum(int(n) for n in re.findall(r'^aegis_jobs_unlisted\{.*\} (\d+)$', page, re.M))
assert (listed, unlisted) == (1000, 9000), (listed, unlisted)
before = rss_mib()
readers = []
for i in range(64):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(('127.0.0.1', port))
    s.sendall(GET)
    until(lambda: unread(s) > 0, f'no answer to non-reader {i}')
    readers.append(s)
grown = rss_mib() - before
print(f'aegisd RSS {before:.0f} MiB, +{grown:.1f} MiB with 64 clients that never read')
assert grown < 50, f'RSS grew by {grown:.0f} MiB'
silent = [socket.create_connection(('127.0.0.1', port)) for _ in range(64)]
assert 'aegis_gpus 3' in scrape(), 'no page with every slot taken'
t0 = time.monotonic()
subprocess.run([aegis, 'gpus'], check=True, capture_output=True, timeout=20)
print(f'aegis gpus: {time.monotonic() - t0:.2f} s')
for s in readers + silent:
    s.close()
PY
    xargs "$AEGIS" cancel < ids.txt > /dev/null
}

# The per-user counters start again from zero when aegisd restarts, as
# the page says: a job running across a restart counts only what it drew
# and ran since (they started at its totals from before, which
# Prometheus' increase() then counted twice).
case_metrics_user_restart() {
    cd "$DIR/work"
    start_metrics
    id=$("$AEGIS" submit --mem 1000 -- "$FAKE" --mib 1000 --seconds 0 --smact 0.5 \
        --until "$DIR/go") || fail submit
    until_job "$id" "assert d['energy_j'] > 2000"
    local t0 e0; t0=$(date +%s.%N); e0=$(job_field "$id" energy_j)
    restart
    await "[ \"\$(scrape /metrics)\" = 200 ]" 10 || fail "no /metrics after the restart"
    local e1 t1; e1=$(job_field "$id" energy_j); t1=$(date +%s.%N)
    python3 - scrape.txt "$e0" "$e1" "$t0" "$t1" <<'PY' || fail "user counters after the restart: $(grep '^aegis_user_' scrape.txt)"
import re, sys
text = open(sys.argv[1]).read()
e0, e1, t0, t1 = map(float, sys.argv[2:6])
def value(name):
    m = re.search(r'^%s\{user="root"\} (\S+)$' % name, text, re.M)
    assert m, name
    return float(m.group(1))
energy, gpu_s = value('aegis_user_energy_joules_total'), value('aegis_user_gpu_seconds_total')
# since the restart only: no more than the job drew since e0 was read,
# and no more GPU-seconds than passed since (a tick's slack)
assert 0 <= energy <= e1 - e0 + 1e-6, (energy, e0, e1)
assert 0 <= gpu_s <= t1 - t0 + 1.5, (gpu_s, t1 - t0)
PY
    touch "$DIR/go"
    "$AEGIS" wait "$id" > /dev/null || fail "job $id failed"
}

e2e_run
