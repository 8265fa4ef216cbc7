#!/usr/bin/python3
"""production_windows.py -- aegis-plus on windows of a production GPU trace.

Cuts windows of consecutive GPU pods out of Alibaba's cluster-trace-gpu-
v2023 as shipped in data/traces/alibaba/openb_gpu_pods.csv and replays each
with `aegis sim` on one server of 8 GPUs, under exclusive, aegis and
aegis-plus, in four settings:
  - GPU memory of 16 GiB and of 40 GiB, each job asking for its pod's
    share (gpu_milli) of it, declared and true peak alike;
  - offered load sum(gpus x run) / (span x 8) brought to 1.0 and to 1.5
    by compressing the window's arrivals; a window already above the
    target is left as it is (arrivals are never stretched), and its load
    is printed; one above both is replayed once.
A job's run time is its pod's (deletion - scheduled); its GPU activity is
that of a data/catalog.csv row of its GPU count, chosen by its pod number.
Each job is a row of a per-job catalog, which the trace names; the trace
gives the same figures in the per-job columns (num_gpus, mem_mib,
peak_mib, duration_s) too, for a simulator that reads them (one that
trusts a declared mem_mib whole, as aegisd trusts --mem, will then do so
here).

Per window and setting it prints aegis-plus's mean JCT and makespan over
aegis's, its longest wait (JCT minus the time its attempts ran) beside
exclusive FIFO's, the OOM crashes under aegis-plus and aegis, then PASS when mean JCT <= 1.02x, makespan <= 1.02x and
longest wait <= exclusive's, else FAIL.

usage: production_windows.py AEGIS [--root DIR] [--jobs N] [--windows K]
       [--starts LIST] [--set NAME=VALUE]...
  --jobs N      pods per window (default 400)
  --windows K   windows spread evenly over the trace's dense part (default 8)
  --starts LIST the windows' first pods instead, comma-separated indexes
                into the dense part (0-based, in creation order)
  --set         passed to every `aegis sim` (a core parameter to try)
Exit status: 0 when every window passes, 1 when one fails, 2 on bad usage.
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

GPUS = 8
MEMORIES_MIB = (16384, 40960)
LOADS = (1.0, 1.5)
POLICIES = ("exclusive", "aegis", "aegis-plus")
LIMITS = {"jct": 1.02, "makespan": 1.02}
CATALOG_COLUMNS = ["name", "num_gpus", "solo_duration_s", "peak_memory_mib",
                   "avg_smact", "avg_smocc", "avg_drama",
                   "horus_gpu_util_mean_pct", "horus_mib", "faketensor_mib",
                   "gpumemnet_mib", "aegis_mib", "lucid_ss"]


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))


def dense_pods(root):
    sys.path.insert(0, os.path.join(root, "tools"))
    import fit_production
    return fit_production.read_pods(os.path.join(
        root, "data", "traces", "alibaba", "openb_gpu_pods.csv"))


def activity_rows(root):
    """GPU count -> the catalog rows of that count, in file order."""
    by_width = {}
    for row in read_csv(os.path.join(root, "data", "catalog.csv")):
        by_width.setdefault(int(row["num_gpus"]), []).append(row)
    return by_width


def job(pod):
    return {"name": pod["name"], "gpus": int(pod["num_gpu"]),
            "milli": int(pod["gpu_milli"]),
            "created": int(pod["creation_time"]),
            "run": max(int(pod["deletion_time"]) - int(pod["scheduled_time"]),
                       1)}


def offered_load(jobs, span):
    return sum(j["gpus"] * j["run"] for j in jobs) / (span * GPUS)


def compression(jobs, target):
    """The factor arrivals are multiplied by (<= 1) and the load it gives."""
    span = max(jobs[-1]["created"] - jobs[0]["created"], 1)
    load = offered_load(jobs, span)
    factor = min(1.0, load / target)
    return factor, offered_load(jobs, span * factor)


def write_window(tmp, jobs, factor, mem_mib, widths):
    """The trace and its per-job catalog; returns their paths."""
    trace, catalog = os.path.join(tmp, "trace.csv"), os.path.join(tmp, "c.csv")
    with open(catalog, "w", newline="") as c, open(trace, "w") as t:
        out = csv.writer(c, lineterminator="\n")
        out.writerow(CATALOG_COLUMNS)
        t.write("job_index,submit_time_s,workload,num_gpus,mem_mib,peak_mib,"
                "duration_s\n")
        for i, j in enumerate(jobs, 1):
            rows = widths[j["gpus"]]
            like = rows[int(j["name"].rsplit("-", 1)[1]) % len(rows)]
            mib = "%d" % math.ceil(j["milli"] * mem_mib / 1000)
            out.writerow([j["name"], j["gpus"], j["run"], mib] +
                         [like[k] for k in CATALOG_COLUMNS[4:8]] +
                         [mib] * 4 + [like["lucid_ss"]])
            t.write("%d,%.1f,%s,%d,%s,%s,%d\n" % (
                i, (j["created"] - jobs[0]["created"]) * factor, j["name"],
                j["gpus"], mib, mib, j["run"]))
    return trace, catalog


def simulate(aegis, trace, catalog, mem_mib, sets):
    out = subprocess.run(
        [aegis, "sim", "--trace", trace, "--catalog", catalog, "--gpus",
         str(GPUS), "--gpu-mem-mib", str(mem_mib), "--policy",
         ",".join(POLICIES), "--json"] + sets,
        check=True, capture_output=True, text=True).stdout
    return {p["policy"]: p for p in json.loads(out)["policies"]}


def longest_wait(run):
    return max(j["wait_s"] for j in run["jobs"])


def verdict(runs):
    """(jct ratio, makespan ratio, plus's and exclusive's longest wait, ok)."""
    plus, base = runs["aegis-plus"], runs["aegis"]
    jct = plus["mean_jct_s"] / base["mean_jct_s"]
    span = plus["makespan_s"] / base["makespan_s"]
    wait, fifo = longest_wait(plus), longest_wait(runs["exclusive"])
    ok = jct <= LIMITS["jct"] and span <= LIMITS["makespan"] and wait <= fifo
    return jct, span, wait, fifo, ok


def window_starts(npods, args):
    if args.starts:
        starts = [int(s) for s in args.starts.split(",")]
    else:
        k = args.windows
        starts = [round(i * (npods - args.jobs) / max(k - 1, 1))
                  for i in range(k)]
    bad = [s for s in starts if s < 0 or s + args.jobs > npods]
    if bad:
        raise ValueError("window start %d: the dense part has %d pods"
                         % (bad[0], npods))
    return starts


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("aegis")
    ap.add_argument("--root", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--jobs", type=int, default=400)
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--starts")
    ap.add_argument("--set", action="append", default=[])
    args = ap.parse_args(argv)
    if args.jobs < 2 or args.windows < 1:
        ap.error("--jobs must be >= 2 and --windows >= 1")
    return args


def main(argv):
    args = parse(argv)
    pods = dense_pods(args.root)
    try:
        starts = window_starts(len(pods), args)
    except ValueError as e:
        sys.stderr.write("production_windows.py: %s\n" % e)
        return 2
    sets = [a for s in args.set for a in ("--set", s)]
    widths = activity_rows(args.root)
    print("%6s %4s %4s %4s %5s %7s %8s %9s %9s %9s  %s" % (
        "start", "jobs", "wide", "GiB", "load", "jct/ag", "span/ag",
        "wait h", "fifo h", "OOMs +/ag", "verdict"))
    failed = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for start in starts:
            jobs = [job(p) for p in pods[start:start + args.jobs]]
            wide = sum(j["gpus"] > 1 for j in jobs)
            settings = sorted({compression(jobs, t) for t in LOADS},
                              key=lambda s: s[1])
            for mem in MEMORIES_MIB:
                for factor, load in settings:
                    runs = simulate(args.aegis, *write_window(
                        tmp, jobs, factor, mem, widths), mem, sets)
                    jct, span, wait, fifo, ok = verdict(runs)
                    failed += not ok
                    total += 1
                    ooms = "%d/%d" % (runs["aegis-plus"]["ooms"],
                                      runs["aegis"]["ooms"])
                    print("%6d %4d %4d %4d %5.2f %7.3f %8.3f %9.2f %9.2f "
                          "%9s  %s" % (start, len(jobs), wide, mem // 1024,
                                       load, jct, span, wait / 3600,
                                       fifo / 3600, ooms,
                                       "PASS" if ok else "FAIL"), flush=True)
    print("%d of %d window settings pass (mean JCT <= %.2fx aegis, makespan "
          "<= %.2fx aegis, longest wait <= exclusive FIFO's)"
          % (total - failed, total, LIMITS["jct"], LIMITS["makespan"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
