#!/bin/sh
# e2e.sh AEGIS SOURCE_DIR DATA_DIR CASE -- one end-to-end check of the
# real `aegis` binary. Bad input must exit 2 with a message naming the file
# and the line or field; good input must give output that holds together.
set -u
AEGIS=$1 SRC=$2 DATA=$3 CASE=$4
DEMO=$SRC/data/traces/demo.csv
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL ($CASE): $*" >&2; exit 1; }

# expect_bad FILE PATTERN [ARG...]: `aegis sim` on FILE (with the ARGs)
# exits 2 and says PATTERN.
expect_bad() {
    file=$1 want=$2
    shift 2
    "$AEGIS" sim --trace "$file" "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    cat "$TMP/err"
    [ $rc -eq 2 ] || fail "exit $rc, expected 2"
    grep -q -- "$want" "$TMP/err" || fail "message lacks '$want'"
    [ ! -s "$TMP/out" ] || fail "printed results for bad input"
}

# sacct_refused LINE BEFORE ROW@MESSAGE: tools/sacct_trace.py on sacct
# output of $head, the lines BEFORE (a printf format: "" or "...\n") and
# ROW exits 1 saying "bad.txt:LINE: MESSAGE".
sacct_refused() {
    printf "$head\n$2${3%%@*}\n" >"$TMP/bad.txt"
    python3 "$SRC/tools/sacct_trace.py" "$TMP/bad.txt" >"$TMP/o" 2>"$TMP/err"
    [ $? = 1 ] && grep -qF "bad.txt:$1: ${3#*@}" "$TMP/err" ||
        fail "'${3%%@*}': $(cat "$TMP/err")"
}

HEAD=submit_time_s,workload
W=bert_base_wiki_bs32_1gpu
case $CASE in
bad_time)
    printf '%s\n0,%s\nsoon,%s\n' $HEAD $W $W >"$TMP/t.csv"
    expect_bad "$TMP/t.csv" "t.csv:3: field 'submit_time_s': 'soon' is not a number" ;;
negative_time)
    printf '# a comment\n%s\n-5,%s\n' $HEAD $W >"$TMP/t.csv"
    expect_bad "$TMP/t.csv" "t.csv:3: field 'submit_time_s': '-5' is negative" ;;
huge_time)
    # Times past TRACE_MAX_SUBMIT_S (trace.h): 1e308 made energies infinite.
    printf '%s\n0,%s\n1e308,%s\n' $HEAD $W $W >"$TMP/t.csv"
    expect_bad "$TMP/t.csv" "t.csv:3: field 'submit_time_s': '1e308' is over 1000000000000 s"
    # a plain number (the fast reader's path) is held to the same bound
    printf '%s\n999999999999999,%s\n' $HEAD $W >"$TMP/t.csv"
    expect_bad "$TMP/t.csv" "t.csv:2: field 'submit_time_s': '999999999999999' is over" ;;
duplicate_index)
    printf 'job_index,%s\n1,0,%s\n2,5,%s\n# gap\n\n1,7,%s\n' \
        $HEAD $W $W $W >"$TMP/t.csv"
    expect_bad "$TMP/t.csv" "t.csv:6: field 'job_index': 1 repeats line 2"
    # sparse numbers, and a file big enough to be read in two halves
    # (trace.c) with the repeat in the second half of the first's
    "$AEGIS" gen-trace --jobs 40000 --seed 2 >"$TMP/g.csv" || fail "gen-trace"
    [ "$(wc -c <"$TMP/g.csv")" -gt 1100000 ] || fail "trace too small to split"
    sed '1!s/^\([0-9]*\),/\1000000000,/' "$TMP/g.csv" >"$TMP/s.csv"
    printf '7000000000,99999,%s\n' $W >>"$TMP/s.csv"
    expect_bad "$TMP/s.csv" "s.csv:40002: field 'job_index': 7000000000 repeats line 8"
    printf '3,99999,%s\n' $W >>"$TMP/g.csv"
    expect_bad "$TMP/g.csv" "g.csv:40002: field 'job_index': 3 repeats line 4" ;;
gpu_limit)
    # A job that could never start is refused before any run, naming its
    # line: more GPUs than a server has, or than max_gpus_per_user under a
    # policy that applies the limit (aegis-plus); where none does, the
    # trace runs.
    SAT=$SRC/data/traces/saturn.csv
    expect_bad "$SAT" "saturn.csv:37: job 36 (xlnet_base_cased_wiki_bs8_2gpu) \
cannot start under aegis-plus: 2 GPUs asked, over max_gpus_per_user 1" \
        --policy aegis-plus --set max_gpus_per_user=1
    expect_bad "$SAT" "saturn.csv:37: job 36 .* over max_gpus_per_user 1" \
        --set max_gpus_per_user=1
    expect_bad "$SAT" "saturn.csv:37: job 36 (xlnet_base_cased_wiki_bs8_2gpu) \
needs 2 GPUs but a server has 1 (--gpus)" --gpus 1
    printf '%s\n# two GPUs\n0,%s\n\n5,xlnet_base_cased_wiki_bs8_2gpu\n' \
        $HEAD $W >"$TMP/t.csv"
    expect_bad "$TMP/t.csv" "t.csv:5: job 2 " --set max_gpus_per_user=1
    "$AEGIS" sim --trace "$SAT" --policy aegis,aegis-plus \
        --set max_gpus_per_user=2 --quiet || fail "a limit of 2: exit $?"
    "$AEGIS" sim --trace "$SAT" --policy aegis --set max_gpus_per_user=1 \
        --quiet || fail "aegis, which has no limits: exit $?" ;;
unknown_workload)
    printf '%s\n0,%s\n1,no_such_model\n' $HEAD $W >"$TMP/t.csv"
    expect_bad "$TMP/t.csv" "t.csv:3: field 'workload': unknown workload 'no_such_model'" ;;
missing_column)
    printf 'time,workload\n0,%s\n' $W >"$TMP/t.csv"
    expect_bad "$TMP/t.csv" "t.csv:1: missing column 'submit_time_s'"
    # a column named twice: the second copy was ignored without a word
    printf 'submit_time_s,duration_s,mem_mib,duration_s\n0,100,1000,5000\n' \
        >"$TMP/d.csv"
    expect_bad "$TMP/d.csv" "d.csv:1: column 'duration_s' appears twice" ;;
binary)
    printf '%s\n0,%s\n1\000\001,x\n' $HEAD $W >"$TMP/t.csv"
    expect_bad "$TMP/t.csv" "t.csv:3: binary file"
    # a stream without end is refused at its first NUL, not read whole
    expect_bad /dev/zero "/dev/zero:1: binary file"
    timeout 20 "$AEGIS" sim --trace "$DEMO" --catalog /dev/zero 2>"$TMP/err"
    [ $? -eq 2 ] && grep -q "binary file" "$TMP/err" || fail "--catalog /dev/zero" ;;
missing_file)
    expect_bad "$TMP/nothing.csv" "nothing.csv: cannot open" ;;
empty_file)
    : >"$TMP/t.csv"
    expect_bad "$TMP/t.csv" "t.csv: empty file" ;;
field_count)
    printf '%s\n0,%s\n1,%s,extra\n' $HEAD $W $W >"$TMP/t.csv"
    expect_bad "$TMP/t.csv" "t.csv:3: too many fields" ;;
bad_usage)
    "$AEGIS" sim --trace "$DEMO" --policy nonesuch 2>"$TMP/err"
    [ $? -eq 2 ] || fail "unknown policy accepted"
    grep -q "unknown policy 'nonesuch'" "$TMP/err" || fail "no policy message"
    "$AEGIS" sim --trace "$DEMO" --gpus 0 2>/dev/null
    [ $? -eq 2 ] || fail "--gpus 0 accepted"
    "$AEGIS" sim --trace "$DEMO" --model beta=x 2>/dev/null
    [ $? -eq 2 ] || fail "--model beta=x accepted"
    # the core's policy key is aegisd's: the simulator lists its policies
    "$AEGIS" sim --trace "$DEMO" --set policy=lucid 2>"$TMP/err"
    [ $? -eq 2 ] || fail "--set policy=lucid accepted"
    grep -q "give --policy lucid" "$TMP/err" || fail "--set policy: $(cat "$TMP/err")"
    # getopt's own messages name the subcommand as aegis's do
    "$AEGIS" sim --bogus 2>"$TMP/err"
    grep -q "^aegis sim: unrecognized option '--bogus'" "$TMP/err" ||
        fail "option message: $(cat "$TMP/err")"
    "$AEGIS" frobnicate 2>/dev/null
    [ $? -eq 2 ] || fail "unknown command accepted" ;;
help)
    "$AEGIS" --help | grep -q "gen-trace" || fail "aegis --help lacks gen-trace"
    "$AEGIS" sim --help >"$TMP/h" || fail "sim --help failed"
    for word in SYNOPSIS "EXIT STATUS" threshold exclusive --timeline; do
        grep -q -- "$word" "$TMP/h" || fail "sim --help lacks $word"
    done
    "$AEGIS" --version | grep -Eq '^aegis [0-9]+\.[0-9]+' || fail "bad --version" ;;
gen_trace)
    "$AEGIS" gen-trace --jobs 50 --seed 3 >"$TMP/a" || fail "gen-trace failed"
    "$AEGIS" gen-trace --jobs 50 --seed 3 >"$TMP/b"
    "$AEGIS" gen-trace --jobs 50 --seed 4 >"$TMP/c"
    cmp -s "$TMP/a" "$TMP/b" || fail "same seed, different traces"
    cmp -s "$TMP/a" "$TMP/c" && fail "different seeds, same trace"
    [ "$(wc -l <"$TMP/a")" -eq 51 ] || fail "not 50 jobs plus a header"
    "$AEGIS" sim --trace "$TMP/a" --policy exclusive --quiet ||
        fail "generated trace does not simulate"
    # nor one that the simulator would refuse (submit times past 1e12 s)
    "$AEGIS" gen-trace --jobs 3000 --mean-gap-s 1e9 >"$TMP/a" 2>"$TMP/err"
    [ $? -eq 2 ] && grep -q "half the 1e12 s" "$TMP/err" ||
        fail "gen-trace over the span a trace may have" ;;
plus_users)
    # gen-trace --users adds a user column and leaves the jobs as they were.
    "$AEGIS" gen-trace --jobs 40 --seed 3 --users 3 >"$TMP/u" || fail "exit $?"
    [ "$(head -1 "$TMP/u")" = job_index,submit_time_s,workload,user ] ||
        fail "no user column"
    [ "$(tail -n +2 "$TMP/u" | cut -d, -f4 | sort -u | tr '\n' ' ')" = \
        "user1 user2 user3 " ] || fail "users are not user1..user3"
    "$AEGIS" gen-trace --jobs 40 --seed 3 | tail -n +2 >"$TMP/plain"
    tail -n +2 "$TMP/u" | cut -d, -f1-3 | cmp -s - "$TMP/plain" ||
        fail "--users changed the jobs"
    # Fair share: a user who comes late behind 30 jobs of another is served
    # first under aegis-plus, last under aegis.
    printf 'submit_time_s,workload,user\n' >"$TMP/f.csv"
    i=0
    while [ $i -lt 30 ]; do
        printf '%d,resnet50_imagenet_bs64_1gpu,a\n' $i >>"$TMP/f.csv"
        i=$((i + 1))
    done
    printf '300,resnet50_imagenet_bs64_1gpu,b\n300,mnist_bs32_1gpu,b\n' \
        >>"$TMP/f.csv"
    "$AEGIS" sim --trace "$TMP/f.csv" --policy aegis,aegis-plus --json \
        >"$TMP/f.json" || fail "exit $?"
    python3 - "$TMP/f.json" <<'PY' || fail "user b not served first"
import json, sys
runs = {p["policy"]: p for p in json.load(open(sys.argv[1]))["policies"]}
def b(p):
    return sum(j["jct_s"] for j in runs[p]["jobs"] if j["index"] > 30) / 2
print("b's mean JCT: aegis %.0f, aegis-plus %.0f" % (b("aegis"), b("aegis-plus")))
assert b("aegis-plus") < 0.4 * b("aegis")
PY
    ;;
user_collision)
    # "costarring" and "liquid" shared a 32-bit hash, so one user's limit:
    # with one job per user, both start at once, as alice's and bob's do.
    printf '%s,user\n0,%s,costarring\n0,%s,liquid\n' $HEAD $W $W >"$TMP/t.csv"
    "$AEGIS" sim --trace "$TMP/t.csv" --policy aegis-plus \
        --set max_jobs_per_user=1 --json >"$TMP/o.json" || fail "exit $?"
    python3 - "$TMP/o.json" <<'PY' || fail "the two users were one"
import json, sys
jobs = json.load(open(sys.argv[1]))["policies"][0]["jobs"]
starts = [j["attempts"][0]["start_s"] for j in jobs]
print("starts:", starts)
assert starts == [0, 0]
PY
    ;;
bad_user)
    # A user cell that cannot be a name: exit 2, naming file, line, column.
    for cell in ' ' "$(printf 'a\tb')" ' alice' 'alice ' \
        aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; do
        printf '%s,user\n0,%s,ok\n1,%s,%s\n' $HEAD $W $W "$cell" >"$TMP/t.csv"
        expect_bad "$TMP/t.csv" "t.csv:3: field 'user': "
    done ;;
json_user)
    # --json names each job's user when the trace has the column ("-" for
    # an empty cell), and no user without it; --help says both.
    printf '%s,user\n0,%s,alice\n5,%s,\n9,%s,bob\n' $HEAD $W $W $W >"$TMP/t.csv"
    "$AEGIS" sim --trace "$TMP/t.csv" --policy aegis,aegis-plus --json \
        >"$TMP/u.json" || fail "exit $?"
    "$AEGIS" sim --trace "$DEMO" --policy aegis --json >"$TMP/d.json" ||
        fail "exit $?"
    python3 - "$TMP/u.json" "$TMP/d.json" <<'PY' || fail "bad user in --json"
import json, sys
for p in json.load(open(sys.argv[1]))["policies"]:
    assert [j["user"] for j in p["jobs"]] == ["alice", "-", "bob"], p["jobs"]
for p in json.load(open(sys.argv[2]))["policies"]:
    assert all("user" not in j for j in p["jobs"])
PY
    "$AEGIS" sim --help >"$TMP/h" || fail "sim --help failed"
    for word in 'column user' '"user"' '"wait_by_reason_s"' \
        '"total_wait_by_reason_s"' '"jct_s"' '"slowdown"' '"status"'; do
        grep -q -- "$word" "$TMP/h" || fail "sim --help lacks $word"
    done ;;
feed_sweep)
    # gen-trace --feeds: sweeps on shared data sets, arrivals as without.
    "$AEGIS" gen-trace --jobs 60 --feeds 4 --seed 1 >"$TMP/s.csv" || fail "exit $?"
    [ "$(head -1 "$TMP/s.csv")" = job_index,submit_time_s,workload,feed,load_cpus ] ||
        fail "no feed columns"
    [ "$(tail -n +2 "$TMP/s.csv" | cut -d, -f4 | sort -u | tr '\n' ' ')" = \
        "feed1 feed2 feed3 feed4 " ] || fail "feeds are not feed1..feed4"
    "$AEGIS" gen-trace --jobs 60 --seed 1 | tail -n +2 | cut -d, -f1-2 >"$TMP/plain"
    tail -n +2 "$TMP/s.csv" | cut -d, -f1-2 | cmp -s - "$TMP/plain" ||
        fail "--feeds changed the arrivals"
    # Independent loaders pay each job's load over its run; a feed once per
    # GPU; co-placement puts fewer feed GPUs to work.
    for run in "indep --model feed_share=0" "spread --set feed_colocate=0" "together"; do
        set -- $run
        name=$1; shift
        "$AEGIS" sim --trace "$TMP/s.csv" --policy aegis-plus --json "$@" \
            >"$TMP/$name.json" || fail "$name: exit $?"
    done
    python3 - "$TMP" <<'PY' || fail "loading CPU"
import csv, json, sys
d = sys.argv[1]
load = {int(r["job_index"]): float(r["load_cpus"])
        for r in csv.DictReader(open(d + "/s.csv"))}
run = {n: json.load(open("%s/%s.json" % (d, n)))["policies"][0]
       for n in ("indep", "spread", "together")}
want = sum(load[j["index"]] * (a["end_s"] - a["active_s"])
           for j in run["indep"]["jobs"] for a in j["attempts"]
           if not a["oom"] and a["active_s"] >= 0)
cpu = {n: r["load_cpu_s"] for n, r in run.items()}
print("load CPU-h", {n: round(c / 3600, 2) for n, c in cpu.items()})
assert abs(cpu["indep"] - want) < 1e-3 * want, (cpu["indep"], want)
assert cpu["together"] < cpu["spread"] < cpu["indep"], cpu
PY
    printf 'submit_time_s,workload,feed,load_cpus\n0,%s,a,-1\n' $W >"$TMP/t.csv"
    expect_bad "$TMP/t.csv" "t.csv:2: field 'load_cpus': '-1' is not 0..1000000 cores"
    "$AEGIS" sim --trace "$TMP/s.csv" --policy aegis | grep -q "load_cpu_h$" ||
        fail "no load_cpu_h column" ;;
cpu_contention)
    # Two jobs alone on their GPUs whose loaders want 4 + 8 CPUs of a
    # server's 6 (docs/simulator.md, "Data loading"; work = duration with
    # exec_factor 1 and no start-up): each loader gets 6/12 of its CPUs, so
    # both go at 0.5 and job 1 (1000 s of work) ends at 2000; job 2 has
    # done 1000 of its 3000 s then, and alone its loader gets 6/8: the
    # 2000 s left take 2666.667, to 4666.667. The CPUs give 6 a second
    # throughout: 28000 CPU-seconds, each job's load times its work.
    # Without the limit both run at 1. aegis-plus does not start job 2
    # beside job 1 (4 + 8 > 6): it waits 1000 s for "cpus", then runs alone
    # (it wants more than the server has) at 0.75, from 1000 to 5000.
    printf 'submit_time_s,num_gpus,mem_mib,duration_s,load_cpus\n0,1,10000,1000,4\n0,1,10000,3000,8\n' \
        >"$TMP/t.csv"
    for c in 0 6; do
        "$AEGIS" sim --trace "$TMP/t.csv" --gpus 2 --server-cpus $c --check \
            --model exec_factor=1 --model activation_delay_s=0 \
            --policy exclusive,aegis-plus --json >"$TMP/c$c.json" ||
            fail "--server-cpus $c: exit $?"
    done
    python3 - "$TMP" <<'PY' || fail "the worked figures"
import json, sys
d = sys.argv[1]
def runs(c):
    return {p["policy"]: p for p in json.load(open("%s/c%d.json" % (d, c)))["policies"]}
def spans(p):
    return [(a["start_s"], a["end_s"]) for j in p["jobs"] for a in j["attempts"]]
free, six = runs(0), runs(6)
for p in free.values():
    assert spans(p) == [(0, 1000), (0, 3000)], spans(p)
assert spans(six["exclusive"]) == [(0, 2000), (0, 4666.667)], spans(six["exclusive"])
assert spans(six["aegis-plus"]) == [(0, 1000), (1000, 5000)], spans(six["aegis-plus"])
assert six["aegis-plus"]["jobs"][1]["wait_by_reason_s"] == {"cpus": 1000}
for p in list(free.values()) + list(six.values()):
    assert abs(p["load_cpu_s"] - 28000) < 0.1, p["load_cpu_s"]
PY
    "$AEGIS" sim --trace "$TMP/t.csv" --server-cpus -1 2>"$TMP/err"
    [ $? -eq 2 ] || fail "--server-cpus -1 accepted"
    grep -q "server-cpus" "$TMP/err" || fail "no --server-cpus message" ;;
no_load_cpus_same)
    # Without load_cpus the CPUs change nothing, even on a server of 3: the
    # demo trace gives the output it gave before they were modelled, byte
    # for byte (made by `aegis sim --trace data/traces/demo.csv --policy
    # aegis,aegis-plus --json` at commit 4f04818); the fidelity to the real
    # runs rests on that.
    "$AEGIS" sim --trace "$DEMO" --catalog "$SRC/data/catalog.csv" \
        --policy aegis,aegis-plus --json --server-cpus 3 >"$TMP/out.json" ||
        fail "exit $?"
    cmp "$TMP/out.json" "$SRC/tests/sim/demo_no_load_cpus.json" ||
        fail "output differs from tests/sim/demo_no_load_cpus.json" ;;
demo_all_json)
    "$AEGIS" sim --trace "$DEMO" --policy all --json >"$TMP/out.json" ||
        fail "exit $?"
    python3 "$SRC/tests/sim/check_json.py" "$TMP/out.json" 60 3 ||
        fail "JSON checks" ;;
two_servers)
    "$AEGIS" sim --trace "$DEMO" --servers 2 --policy exclusive,aegis --json \
        >"$TMP/out.json" || fail "exit $?"
    python3 "$SRC/tests/sim/check_json.py" "$TMP/out.json" 60 6 3 ||
        fail "JSON checks" ;;
threads_same)
    # Servers are replayed in parallel: the thread count must not show.
    # 20000 jobs: the summary takes its percentiles through buckets from
    # 16384 finished jobs on (report.c), and check_json.py checks them.
    "$AEGIS" gen-trace --jobs 20000 --seed 7 --mean-gap-s 0.6 >"$TMP/t.csv"
    for n in 1 3; do
        "$AEGIS" sim --trace "$TMP/t.csv" --servers 8 --gpus 4 --threads $n \
            --policy aegis,lucid --json >"$TMP/out$n.json" || fail "exit $?"
    done
    cmp -s "$TMP/out1.json" "$TMP/out3.json" ||
        fail "1 and 3 threads differ"
    python3 "$SRC/tests/sim/check_json.py" "$TMP/out1.json" 20000 32 4 ||
        fail "JSON checks" ;;
core_check)
    # --check recounts the core's bookkeeping after every event: the
    # policies (FIFO, backfill, feeds' none), MIG and MPS, both dispatches
    # of a busy generated trace keep it whole, and the check changes
    # nothing of the results.
    "$AEGIS" gen-trace --jobs 800 --seed 11 --mean-gap-s 0.5 >"$TMP/t.csv"
    for d in work slurm; do
        for c in "" --check; do
            "$AEGIS" sim --trace "$TMP/t.csv" --servers 2 --gpus 4 \
                --dispatch $d --policy aegis,aegis-plus,lucid \
                --sharing naive,mps,mig --json $c \
                >"$TMP/out$c.json" || fail "$d $c: exit $?"
        done
        cmp -s "$TMP/out.json" "$TMP/out--check.json" ||
            fail "$d: --check changed the results"
    done
    "$AEGIS" sim --help | grep -q -- "--check" || fail "--help lacks --check" ;;
many_retries)
    # More OOM retries than a replay's first guess at its attempt count
    # (a job each, a sixteenth more and 16): its server's log must grow.
    "$AEGIS" gen-trace --jobs 40 --seed 3 --mean-gap-s 0 --workloads \
        mobilenet_imagenet_bs128_1gpu,xception_imagenet_bs128_1gpu,gpt2_xl_wiki_bs2_1gpu \
        >"$TMP/t.csv" || fail "gen-trace exit $?"
    "$AEGIS" sim --trace "$TMP/t.csv" --policy aegis --json >"$TMP/out.json" ||
        fail "exit $?"
    python3 "$SRC/tests/sim/check_json.py" "$TMP/out.json" 40 3 ||
        fail "JSON checks"
    python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["policies"][0]
n = sum(len(j["attempts"]) for j in p["jobs"])
assert n > 40 + 40 // 16 + 16, n' "$TMP/out.json" || fail "too few retries to test" ;;
timeline)
    "$AEGIS" sim --trace "$DEMO" --policy exclusive,aegis --quiet \
        --timeline "$TMP/t.svg" || fail "exit $?"
    python3 - "$TMP/t.svg" <<'PY' || fail "bad SVG"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
rects = root.findall(ns + "rect")
texts = " ".join(t.text or "" for t in root.iter(ns + "text"))
assert len(rects) > 120, len(rects)  # 2 policies x 60 jobs + chart
assert "exclusive" in texts and "aegis" in texts, texts[:200]
PY
    # a workload's name is drawn escaped: the SVG still parses
    grep -v '^#' "$DATA/catalog.csv" | head -2 >"$TMP/c.csv"
    sed -i '2s/^[^,]*,/<a\&b"'"'"'>,/' "$TMP/c.csv"
    printf 'submit_time_s,workload\n0,<a&b"'"'"'>\n' >"$TMP/t.csv"
    "$AEGIS" sim --trace "$TMP/t.csv" --catalog "$TMP/c.csv" --quiet \
        --policy exclusive --timeline "$TMP/n.svg" || fail "exit $?"
    python3 - "$TMP/n.svg" <<'PY' || fail "a name broke the SVG"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
assert "job 1 <a&b\"'>" in titles, titles
PY
    ;;
task_path_stem)
    printf 'submit_time_s,task_path\n0,specs/yaml/%s.yaml\n' $W >"$TMP/t.csv"
    "$AEGIS" sim --trace "$TMP/t.csv" --policy exclusive --json >"$TMP/o" ||
        fail "exit $?"
    grep -q "\"workload\": \"$W\"" "$TMP/o" || fail "stem not resolved" ;;
philly_fidelity)
    "$AEGIS" sim --trace "$DATA/traces/philly.csv" --catalog \
        "$DATA/workloads.csv" --policy exclusive --json >"$TMP/o" ||
        fail "exit $?"
    # Measured Exclusive makespan on the real server: 42633.5 s.
    python3 - "$TMP/o" <<'PY' || fail "exclusive makespan off by over 2%"
import json, sys
m = json.load(open(sys.argv[1]))["policies"][0]["makespan_s"]
print("exclusive makespan", m, "measured 42633.5")
assert abs(m / 42633.5 - 1) < 0.02
PY
    ;;
report_csv)
    # the per-job CSV in `aegis report`'s schema (+ policy), its rows
    # summing to each policy's jobs_total, and CO2 scaling with the flags
    "$AEGIS" sim --trace "$DEMO" --policy all --json --grid-intensity 300 \
        --pue 1.2 --report-csv "$TMP/r.csv" >"$TMP/r.json" || fail "exit $?"
    python3 "$SRC/tests/daemon/check_report.py" "$TMP/r.csv" "$TMP/r.json" sim ||
        fail "report CSV checks"
    python3 - "$TMP/r.json" <<'PY' || fail "CO2 per policy"
import json, sys
for p in json.load(open(sys.argv[1]))["policies"]:
    assert abs(p["co2_g"] - p["energy_j"] / 3.6e6 * 1.2 * 300) < 0.01, p["policy"]
    assert p["pue"] == 1.2 and p["grid_intensity_g_per_kwh"] == 300
    assert p["gpu_hours"] > 0 and p["jobs_total"]["jobs"] == 60
PY
    "$AEGIS" sim --trace "$DEMO" --policy aegis | grep -q "co2_kg" || fail "table"
    "$AEGIS" sim --trace "$DEMO" --pue 0.5 2>/dev/null
    [ $? -eq 2 ] || fail "--pue 0.5 accepted"
    "$AEGIS" sim --trace "$DEMO" --report-csv /nonexistent/x.csv 2>/dev/null
    [ $? -eq 1 ] || fail "unwritable --report-csv"
    # an output over an input is refused before anything is written
    cp "$DEMO" "$TMP/in.csv"
    for out in report-csv timeline chart; do
        expect_bad "$TMP/in.csv" "--$out: .*in.csv is the --trace file" \
            --policy exclusive --$out "$TMP/in.csv"
        cmp -s "$DEMO" "$TMP/in.csv" || fail "--$out wrote over the trace"
    done
    cp "$DATA/catalog.csv" "$TMP/cat.csv"
    expect_bad "$DEMO" "is the --catalog file" --catalog "$TMP/cat.csv" \
        --report-csv "$TMP/cat.csv"
    "$AEGIS" gen-trace --jobs 3 --profile production --catalog "$TMP/cat.csv" \
        --catalog-out "$TMP/cat.csv" >/dev/null 2>"$TMP/err"
    [ $? -eq 2 ] && grep -q "is the --catalog file" "$TMP/err" &&
        cmp -s "$DATA/catalog.csv" "$TMP/cat.csv" || fail "catalog overwritten" ;;
slurm_fifo)
    # --dispatch slurm on 2 one-GPU nodes (aegis_mem 40960 each), faketensor
    # estimates: xception 16641 MiB, gpt2_xl 40000, mnist 37. By hand:
    # A, B fit node 0 together (first fit), C goes to node 1, D fits no
    # node and waits in Slurm's queue, E fits node 0 but waits behind D
    # (FIFO). When C ends, node 1 is free: D goes there, then E to node 0
    # (its aegisd starts it when its policy lets it).
    printf 'job_index,submit_time_s,workload\n1,0,xception_imagenet_bs128_1gpu\n2,1,xception_imagenet_bs128_1gpu\n3,2,xception_imagenet_bs128_1gpu\n4,3,gpt2_xl_wiki_bs2_1gpu\n5,4,mnist_bs32_1gpu\n' >"$TMP/t.csv"
    for pol in aegis exclusive; do
        "$AEGIS" sim --trace "$TMP/t.csv" --servers 2 --gpus 1 \
            --estimator faketensor_mib --dispatch slurm --policy $pol --json \
            >"$TMP/o.json" || fail "$pol: exit $?"
        python3 - "$TMP/o.json" <<'PY' || fail "$pol: not the hand-made assignment"
import json, sys
p = json.load(open(sys.argv[1]))["policies"][0]
assert p["dispatch"] == "slurm", p.get("dispatch")
jobs = {j["index"]: j for j in p["jobs"]}
node = {i: jobs[i]["attempts"][0]["gpus"][0] for i in jobs}
assert node == {1: 0, 2: 0, 3: 1, 4: 1, 5: 0}, node
c_end = jobs[3]["attempts"][-1]["end_s"]
# D starts on the empty node as Slurm hands it on; E on node 0 no sooner
assert abs(jobs[4]["attempts"][0]["start_s"] - c_end) < 1e-6, c_end
assert jobs[5]["attempts"][0]["start_s"] >= c_end, c_end
assert p["unfinished"] == 0
PY
    done
    # the default dispatcher balances by work: B goes to node 1
    "$AEGIS" sim --trace "$TMP/t.csv" --servers 2 --gpus 1 \
        --estimator faketensor_mib --policy aegis --json >"$TMP/d.json" ||
        fail "default: exit $?"
    python3 - "$TMP/d.json" <<'PY' || fail "default dispatch"
import json, sys
p = json.load(open(sys.argv[1]))["policies"][0]
assert p["dispatch"] == "work", p.get("dispatch")
jobs = {j["index"]: j for j in p["jobs"]}
assert jobs[2]["attempts"][0]["gpus"][0] == 1
PY
    # a job asking more aegis_mem than a node has is refused (sbatch
    # refuses it): never started, the others run, exit 1 for it
    printf 'submit_time_s,workload\n0,gpt2_xl_wiki_bs2_1gpu\n1,mnist_bs32_1gpu\n' \
        >"$TMP/r.csv"
    "$AEGIS" sim --trace "$TMP/r.csv" --gpus 1 --gpu-mem-mib 39000 --servers 2 \
        --estimator faketensor_mib --dispatch slurm --policy aegis --json \
        >"$TMP/r.json"
    [ $? -eq 1 ] || fail "a refused job: exit not 1"
    python3 - "$TMP/r.json" <<'PY' || fail "refused job"
import json, sys
p = json.load(open(sys.argv[1]))["policies"][0]
st = {j["workload"]: (j["status"], len(j["attempts"])) for j in p["jobs"]}
assert st == {"gpt2_xl_wiki_bs2_1gpu": ("unfinished", 0),
              "mnist_bs32_1gpu": ("done", 1)}, st
assert p["unfinished"] == 1
PY
    "$AEGIS" sim --trace "$TMP/t.csv" --dispatch fastest 2>"$TMP/err"
    [ $? -eq 2 ] || fail "--dispatch fastest accepted"
    grep -q "dispatch" "$TMP/err" || fail "no message for a bad --dispatch" ;;
slurm_one_server)
    # One node whose aegis_mem never runs out (the demo's 60 jobs, each
    # under a GPU's memory, on a node of 64 GPUs): Slurm hands each job on
    # at its submit time, so the replay is the single server's one.
    for d in work slurm; do
        "$AEGIS" sim --trace "$DEMO" --gpus 64 --policy all --dispatch $d \
            --json | sed 's/"dispatch": "[a-z]*", //g' >"$TMP/$d.json" ||
            fail "$d: exit $?"
    done
    cmp -s "$TMP/work.json" "$TMP/slurm.json" || fail "slurm differs on one server"
    # on the 3-GPU server Slurm holds jobs back: still every job finishes
    "$AEGIS" sim --trace "$DEMO" --policy all --dispatch slurm --json \
        >"$TMP/s3.json" || fail "3 GPUs: exit $?"
    python3 "$SRC/tests/sim/check_json.py" "$TMP/s3.json" 60 3 ||
        fail "JSON checks" ;;
slurm_retries)
    # OOM retries under Slurm's dispatch: a job aegisd requeues stays on
    # its node (slurm_step.h), every job ends, and the servers' logs grow.
    "$AEGIS" gen-trace --jobs 40 --seed 3 --mean-gap-s 0 --workloads \
        mobilenet_imagenet_bs128_1gpu,xception_imagenet_bs128_1gpu,gpt2_xl_wiki_bs2_1gpu \
        >"$TMP/t.csv" || fail "gen-trace exit $?"
    "$AEGIS" sim --trace "$TMP/t.csv" --servers 2 --dispatch slurm \
        --policy aegis,exclusive --json >"$TMP/out.json" || fail "exit $?"
    python3 "$SRC/tests/sim/check_json.py" "$TMP/out.json" 40 6 3 ||
        fail "JSON checks"
    python3 - "$TMP/out.json" <<'PY' || fail "retries"
import json, sys
p = json.load(open(sys.argv[1]))["policies"][0]
assert p["ooms"] > 0, p["ooms"]
for j in p["jobs"]:
    assert len({a["gpus"][0] // 3 for a in j["attempts"]}) == 1, j
PY
    ;;
wide_head)
    # A 4-GPU job behind a stream of 1-GPU jobs on an 8-GPU server: once
    # half of backfill_max_passes have passed it, its kept GPUs take no
    # partner and empty for it. It waited 9086 s (all at the pressure
    # gate of its GPUs) while partners kept coming, 7245 s since.
    "$AEGIS" sim --trace "$SRC/tests/sim/wide_head_trace.csv" \
        --catalog "$SRC/tests/sim/wide_head_catalog.csv" --gpus 8 \
        --policy aegis-plus,exclusive --json >"$TMP/out.json" ||
        fail "exit $?"
    python3 - "$TMP/out.json" <<'PY' || fail "the wide job's wait"
import json, sys
runs = {p["policy"]: p for p in json.load(open(sys.argv[1]))["policies"]}
wide = {p: [j for j in r["jobs"] if j["workload"] == "wide"][0]
        for p, r in runs.items()}
w = wide["aegis-plus"]
print("wide job's wait: aegis-plus %.0f s %s, exclusive %.0f s"
      % (w["wait_s"], w["wait_by_reason_s"], wide["exclusive"]["wait_s"]))
assert w["wait_by_reason_s"].get("reserving", 0) > 0, w
assert w["wait_s"] < 8000, w
assert w["wait_s"] < wide["exclusive"]["wait_s"], wide
PY
    ;;
job_columns)
    # Jobs given by the per-job columns (job_columns.h), not the catalog.
    # A declared mem_mib is trusted whole, as aegisd trusts submit --mem:
    # jobs that declare a whole GPU are not capped at est_cap_mib and put
    # beside others, so none crashes (issue 25: 544 OOMs in one window),
    # nor taken at the estimator-free aegis's flat 5120 MiB.
    python3 -c '
print("submit_time_s,mem_mib,peak_mib,duration_s")
for i in range(12):
    print("%d,40960,%d,600" % (i * 10, 38000 if i % 2 else 2000))' >"$TMP/d.csv"
    "$AEGIS" sim --trace "$TMP/d.csv" --gpus 3 --policy aegis-plus,aegis --json \
        >"$TMP/d.json" || fail "declared: exit $?"
    # The peak decides an OOM: the second job declares 4000 MiB but
    # reaches 30000 beside the first's 20000 on one 40960-MiB GPU. A row
    # over a catalog workload keeps the catalog's figures but its own.
    printf 'submit_time_s,workload,mem_mib,peak_mib,duration_s,time_limit_s\n0,,20000,,600,\n1,,4000,30000,300,3600\n2,%s,,,100,\n' \
        $W >"$TMP/p.csv"
    "$AEGIS" sim --trace "$TMP/p.csv" --gpus 1 --policy aegis-est,exclusive \
        --json >"$TMP/p.json" || fail "peak: exit $?"
    python3 - "$TMP" "$W" <<'PY' || fail "per-job columns"
import json, sys
d, w = sys.argv[1], sys.argv[2]
for plus in json.load(open(d + "/d.json"))["policies"]:
    assert plus["ooms"] == 0, (plus["policy"], plus["ooms"])
    assert [j["status"] for j in plus["jobs"]] == ["done"] * 12
    assert {j["workload"] for j in plus["jobs"]} == {"-"}
est, excl = json.load(open(d + "/p.json"))["policies"]
assert [a["oom"] for a in est["jobs"][1]["attempts"]][0], est["jobs"][1]
assert excl["ooms"] == 0, excl["ooms"]
bert = excl["jobs"][2]
assert bert["workload"] == w, bert
run = bert["attempts"][0]
assert abs(run["end_s"] - run["start_s"] - 101) < 1e-6, run
PY
    ;;
time_limits)
    # An attempt is stopped at its time limit (time_limit_s, or the
    # site's default_time for a row without one), as aegisd stops it, and
    # never retried: the first job (600 s of work, 300 s allowed) ends at
    # 300 s; the second starts on the freed GPU; under default_time the
    # third (no limit) ends at 200 s. Under aegis-plus the three share
    # the GPU; --check runs the core's checker after every event.
    printf 'submit_time_s,mem_mib,peak_mib,duration_s,time_limit_s\n0,10000,,600,300\n1,10000,,100,3600\n2,10000,,600,\n' \
        >"$TMP/l.csv"
    for p in exclusive aegis-plus; do
        "$AEGIS" sim --trace "$TMP/l.csv" --gpus 1 --policy $p --set default_time=200 \
            --check --json >"$TMP/l-$p.json" || fail "time limits, $p: exit $?"
    done
    "$AEGIS" sim --trace "$TMP/l.csv" --gpus 1 --policy exclusive --json \
        >"$TMP/l-none.json" || fail "time limits, no default: exit $?"
    "$AEGIS" sim --trace "$TMP/l.csv" --gpus 1 --policy exclusive --set default_time=200 \
        >"$TMP/l.txt" || fail "time limits, text: exit $?"
    grep -q "^exclusive: 2 of the stopped jobs reached their time limit" "$TMP/l.txt" ||
        fail "the table does not say so: $(cat "$TMP/l.txt")"
    python3 - "$TMP" <<'PY' || fail "time limits"
import json, sys
d = sys.argv[1]
for p in ("exclusive", "aegis-plus"):
    r = json.load(open("%s/l-%s.json" % (d, p)))["policies"][0]
    assert [j["status"] for j in r["jobs"]] == ["timeout", "done", "timeout"], r["jobs"]
    assert r["timeouts"] == 2 and r["stopped"] == 0, r
    for j, limit in ((0, 300), (2, 200)):
        runs = r["jobs"][j]["attempts"]
        assert len(runs) == 1, runs
        assert abs(runs[0]["end_s"] - runs[0]["start_s"] - limit) < 1e-6, (p, j, runs)
r = json.load(open(d + "/l-none.json"))["policies"][0]
assert [j["status"] for j in r["jobs"]] == ["timeout", "done", "done"], r["jobs"]
assert r["timeouts"] == 1, r
PY
    # a limit shorter than the start-up (8.2 s) ends the attempt at it,
    # never active (it ended at 8.2 s)
    printf 'submit_time_s,mem_mib,duration_s,time_limit_s\n0,1000,100,5\n' >"$TMP/s.csv"
    "$AEGIS" sim --trace "$TMP/s.csv" --gpus 1 --policy aegis --json >"$TMP/s.json" ||
        fail "short limit: exit $?"
    python3 - "$TMP/s.json" <<'PY' || fail "short limit: $(cat "$TMP/s.json")"
import json, sys
job = json.load(open(sys.argv[1]))["policies"][0]["jobs"][0]
run = job["attempts"][0]
assert job["status"] == "timeout" and run["end_s"] == 5 and run["active_s"] is None, job
PY
    ;;
job_columns_bad)
    # Each fault in a per-job column is named with its line and field.
    bad() { printf "$1\n" >"$TMP/t.csv"; expect_bad "$TMP/t.csv" "$2"; }
    bad 'submit_time_s,mem_mib,duration_s\n0,4000,' \
        "t.csv:2: field 'duration_s': empty, but required where the row names no workload"
    bad 'submit_time_s,peak_mib,duration_s\n0,,60' \
        "t.csv:2: field 'peak_mib': empty, and so is mem_mib"
    # a column the header lacks is not called an empty field
    bad 'submit_time_s,workload,mem_mib\n0,,4000' \
        "t.csv:2: no column 'duration_s' in the header, but the row names no workload"
    # either memory column serves: the message names both
    bad 'submit_time_s,workload,duration_s\n0,,60' \
        "t.csv:2: no column 'mem_mib' or 'peak_mib' in the header, but the row names no workload"
    bad 'submit_time_s,peak_mib,duration_s,num_gpus\n0,1000,60,1.5' \
        "t.csv:2: field 'num_gpus': 1.5 is not whole"
    bad 'submit_time_s,peak_mib,duration_s,num_gpus\n0,1000,60,9' \
        "t.csv:2: field 'num_gpus': 9 is outside \[1, 8\]"
    bad 'submit_time_s,workload,smact\n0,'$W',2' \
        "t.csv:2: field 'smact': 2 is outside \[0, 1\]"
    # as written, bounds whole: not "1 is outside [0, 1]", "1e+12"
    bad 'submit_time_s,workload,smact\n0,'$W',1.0000001' \
        "t.csv:2: field 'smact': 1.0000001 is outside \[0, 1\]"
    bad 'submit_time_s,mem_mib,duration_s\n0,123456789012345,60' \
        "t.csv:2: field 'mem_mib': 123456789012345 is outside \[0, 1000000000000\]"
    bad 'submit_time_s,mem_mib,duration_s\n0,lots,60' \
        "t.csv:2: field 'mem_mib': 'lots' is not a number"
    # a number too large is named so, not "not a number" (1e400), nor
    # a job number of 40 digits "not a job number"
    bad 'submit_time_s,mem_mib,duration_s\n0,1e400,60' \
        "t.csv:2: field 'mem_mib': '1e400' is too large a number"
    bad 'job_index,submit_time_s,mem_mib,duration_s\n1234567890123456789012345678901234567890,0,1000,60' \
        "t.csv:2: field 'job_index': '1234567890123456789012345678901234567890' is over 9223372036854775807, the largest job number"
    # lines ended by CR alone (classic Mac OS): one line, named so (it
    # was "no jobs after the header" or a missing column)
    printf 'submit_time_s,mem_mib,duration_s\r0,4000,60\r' >"$TMP/t.csv"
    expect_bad "$TMP/t.csv" "t.csv:1: a carriage return inside the header line: lines ended by CR alone"
    bad 'submit_time_s,workload,duration_s\n0,no_such_model,60' \
        "t.csv:2: field 'workload': unknown workload 'no_such_model'"
    bad 'submit_time_s,user\n0,alice' \
        "t.csv:1: missing column 'workload (or task_path, or duration_s)'"
    # the fast reader's path (a plain row) and the general one alike
    bad 'submit_time_s,workload,time_limit_s\n0,'$W',-5' \
        "t.csv:2: field 'time_limit_s': -5 is outside \[0, 31536000\]"
    bad 'submit_time_s,workload,time_limit_s\n0,'$W',1e9' \
        "t.csv:2: field 'time_limit_s': 1e9 is outside" ;;
catalog_bad)
    # A catalog's faults are named with the file and line like a trace's:
    # a name listed twice names both lines, a missing column line 1, and
    # a name that is not UTF-8 text is refused, as it would reach --json
    # and --timeline as bytes no JSON or SVG reader takes.
    printf '%s\n0,w1\n' $HEAD >"$TMP/t.csv"
    cols=name,num_gpus,solo_duration_s,peak_memory_mib
    printf '%s\nw1,1,100,1000\n# two\nw2,1,100,1000\nw1,1,200,1000\n' $cols >"$TMP/c.csv"
    expect_bad "$TMP/t.csv" "c.csv:5: field 'name': workload 'w1' is listed twice (line 2)" \
        --catalog "$TMP/c.csv"
    printf 'name,num_gpus,solo_duration_s\nw1,1,100\n' >"$TMP/c.csv"
    expect_bad "$TMP/t.csv" "c.csv:1: missing column 'peak_memory_mib'" --catalog "$TMP/c.csv"
    printf '%s\nw\377,1,100,1000\n' $cols >"$TMP/c.csv"
    printf '%s\n0,w\377\n' $HEAD >"$TMP/u.csv"
    expect_bad "$TMP/u.csv" "c.csv:2: field 'name': not UTF-8 text" --catalog "$TMP/c.csv"
    printf '%s\nw\001,1,100,1000\n' $cols >"$TMP/c.csv"
    expect_bad "$TMP/t.csv" "c.csv:2: field 'name': control character 0x01" --catalog "$TMP/c.csv" ;;
sacct_recipe)
    # docs/simulator.md's recipe: sacct --parsable2 output to a trace, and
    # that trace replayed under every policy.
    python3 "$SRC/tools/sacct_trace.py" "$SRC/tests/sim/sacct_sample.txt" \
        >"$TMP/s.csv" 2>"$TMP/err" || fail "recipe: exit $?"
    grep -q "left out 1 GPU jobs with neither" "$TMP/err" ||
        fail "the unsized job is not reported"
    cat >"$TMP/want.csv" <<'CSV'
job_index,submit_time_s,user,num_gpus,duration_s,time_limit_s,mem_mib,peak_mib,load_cpus
1008,0,erin,1,240,600,8000,2560,0.502083
1001,120,alice,1,1800,3600,20000,18000,3
1002,450,bob,2,7200,14400,30000,26624,2
1003,1320,alice,1,600,,,9000,0.5
1007,2520,bob,8,1830,1800,40960,38400,51.1475
CSV
    cmp -s "$TMP/want.csv" "$TMP/s.csv" || { diff "$TMP/want.csv" "$TMP/s.csv"; fail "trace differs"; }
    "$AEGIS" sim --trace "$TMP/s.csv" --gpus 8 --policy all --json \
        >"$TMP/out.json" || fail "sim: exit $?"
    python3 - "$TMP/out.json" <<'PY' || fail "replay"
import json, sys
runs = json.load(open(sys.argv[1]))["policies"]
assert len(runs) == 7, [p["policy"] for p in runs]
for p in runs:
    assert sorted(j["index"] for j in p["jobs"]) == [1001, 1002, 1003, 1007, 1008]
    # 1007 ran 1,830 s against its 30 minutes: stopped at its limit
    status = {j["index"]: j["status"] for j in p["jobs"]}
    assert status.pop(1007) == "timeout", p["policy"]
    assert set(status.values()) == {"done"}, p["policy"]
    assert {j["user"] for j in p["jobs"]} == {"alice", "bob", "erin"}
PY
    # sacct as other sites print it: a month-long window (offsets and
    # runs past 10^6 s written whole, not to 6 digits: 2000001 and
    # 2000002 were both 2e+06), a limit past the simulator's year (none),
    # and GPUs tracked by type only (AccountingStorageTRES=gres/gpu:a100,
    # no gres/gpu: the job was left out as if it held no GPU)
    h='JobIDRaw|User|Submit|ElapsedRaw|TimelimitRaw|AllocTRES|ReqTRES|TRESUsageInMax|TotalCPU'
    printf '%s\n' "$h" \
        '5|a|2026-06-01T00:00:00|1234567|20577|gres/gpu=1|gres/aegis_mem=900||1:00' \
        '6|a|2026-06-24T03:33:21|60|600000|gres/gpu=1|gres/aegis_mem=900||1:00' \
        '7|a|2026-06-24T03:33:22|60|UNLIMITED|cpu=2,gres/gpu:a100=2,gres/gpu:v100=1|gres/aegis_mem=900||1:00' \
        >"$TMP/long.txt"
    python3 "$SRC/tools/sacct_trace.py" "$TMP/long.txt" >"$TMP/long.csv" ||
        fail "long window: exit $?"
    cat >"$TMP/want.csv" <<'CSV'
job_index,submit_time_s,user,num_gpus,duration_s,time_limit_s,mem_mib,peak_mib,load_cpus
5,0,a,1,1234567,1234620,900,,4.86e-05
6,2000001,a,1,60,,900,,1
7,2000002,a,3,60,,300,,1
CSV
    cmp -s "$TMP/want.csv" "$TMP/long.csv" || { diff "$TMP/want.csv" "$TMP/long.csv"; fail "long window differs"; }
    "$AEGIS" sim --trace "$TMP/long.csv" --gpus 8 --policy aegis --quiet ||
        fail "long window replay: exit $?"
    # with a State field, a job that had not ended when sacct ran is left
    # out and counted, not replayed with its partial run as if it ended:
    # 12 still runs, 13 waits, 16 is suspended, 15's first record was
    # requeued (sacct --duplicates) and its second ended, 18 was
    # preempted and runs again; 14 was cancelled while running
    # ('CANCELLED by UID'), 17 timed out
    h='JobIDRaw|User|Submit|ElapsedRaw|TimelimitRaw|AllocTRES|ReqTRES|TRESUsageInMax|TotalCPU|State'
    g='gres/gpu=1|gres/aegis_mem=900|'
    printf '%s\n' "$h" \
        "11|a|2026-06-01T00:00:00|600|60|$g|1:00|COMPLETED" \
        "12|a|2026-06-01T00:01:00|300|60|$g|1:00|RUNNING" \
        "12.0||2026-06-01T00:01:00|300||||gres/gpumem=5G|1:00|RUNNING" \
        "13|a|2026-06-01T00:02:00|0|60||gres/aegis_mem=900||0:00|PENDING" \
        "14|a|2026-06-01T00:03:00|120|60|$g|1:00|CANCELLED by 1000" \
        "15|a|2026-06-01T00:04:00|50|60|$g|1:00|REQUEUED" \
        "15|a|2026-06-01T00:04:00|700|60|$g|1:00|COMPLETED" \
        "16|a|2026-06-01T00:05:00|200|60|$g|1:00|SUSPENDED" \
        "17|a|2026-06-01T00:06:00|3600|60|$g|1:00|TIMEOUT" \
        "18|a|2026-06-01T00:07:00|90|60|$g|1:00|PREEMPTED" \
        "18|a|2026-06-01T00:07:00|30|60|$g|1:00|RUNNING" \
        >"$TMP/state.txt"
    python3 "$SRC/tools/sacct_trace.py" "$TMP/state.txt" >"$TMP/state.csv" \
        2>"$TMP/err" || fail "State: exit $?"
    # (15 is counted by its last record: it ended, and is in the trace)
    grep -qF "left out 4 jobs that had not ended when sacct ran (PENDING 1, RUNNING 2, SUSPENDED 1)" \
        "$TMP/err" || fail "jobs that had not ended are not reported: $(cat "$TMP/err")"
    cat >"$TMP/want.csv" <<'CSV'
job_index,submit_time_s,user,num_gpus,duration_s,time_limit_s,mem_mib,peak_mib,load_cpus
11,0,a,1,600,3600,900,,0.1
14,180,a,1,120,3600,900,,0.5
15,240,a,1,700,3600,900,,0.0857143
17,360,a,1,3600,3600,900,,0.0166667
CSV
    cmp -s "$TMP/want.csv" "$TMP/state.csv" ||
        { diff "$TMP/want.csv" "$TMP/state.csv"; fail "State: trace differs"; }
    printf 'JobIDRaw|User\n1|a\n' >"$TMP/bad.txt"
    python3 "$SRC/tools/sacct_trace.py" "$TMP/bad.txt" >"$TMP/o" 2>"$TMP/err" &&
        fail "a short header was taken"
    grep -q "bad.txt:1: missing field Submit" "$TMP/err" || fail "no message"
    # a line's bad field is named, never a traceback nor nan/inf in the trace
    head='JobIDRaw|User|Submit|ElapsedRaw|TimelimitRaw|AllocTRES|ReqTRES|TRESUsageInMax|TotalCPU'
    at='2026-06-01T00:00:00'
    for c in "1|a|$at|1e400|60|gres/gpu=2|gres/aegis_mem=9000||1:00@ElapsedRaw '1e400' is not a number of at least 0" \
             "1|a|$at|60|60|gres/gpu=2.5|gres/aegis_mem=9000||1:00@gres/gpu '2.5' is not a whole number" \
             "1|a|$at|2000000000000|60|gres/gpu=2|gres/aegis_mem=9000||1:00@ElapsedRaw '2000000000000' is over 10^12" \
             "1|a|$at|60|60|gres/gpu=2|gres/aegis_mem=nan||1:00@gres/aegis_mem 'nan' is not a number" \
             "x|a|$at|60|60|gres/gpu=2|gres/aegis_mem=9000||1:00@JobIDRaw 'x' is not a whole number" \
             "²|a|$at|60|60|gres/gpu=2|gres/aegis_mem=9000||1:00@JobIDRaw '²' is not a whole number" \
             "1|a|$at|60|60|gres/gpu=2|gres/aegis_mem=9000||1:00|9@not the 9 fields of the header" \
             "1|\377|$at|60|60|gres/gpu=2|gres/aegis_mem=9000||1:00@not UTF-8 text"; do
        sacct_refused 2 "" "$c"
    done
    # a step's peak that is no size (it reached the trace as inf, which
    # aegis sim refuses), and a carriage return inside a line (a Python
    # traceback): named with their line too
    job="1|a|$at|60|60|gres/gpu=2|gres/aegis_mem=9000||1:00"
    for c in "1.0||$at|60||||gres/gpumem=1e400G|1:00@gres/gpumem '1e400G' is not a size" \
             "1.0||$at|60||||gres/gpumem=-5G|1:00@gres/gpumem '-5G' is not a size" \
             "1.0||$at|60||||gres/gpumem=99999999999T|1:00@gres/gpumem '99999999999T' is over 10^12 MiB" \
             "1.0||2026-06\r-01T00:00:00|60||||gres/gpumem=5G|1:00@not one line of sacct --parsable2 output"; do
        sacct_refused 3 "$job\n" "$c"
    done ;;
*) fail "unknown case" ;;
esac
exit 0
