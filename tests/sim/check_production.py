#!/usr/bin/env python3
"""check_production.py -- production-shaped traces and the wide catalog rows.

    check_production.py AEGIS SOURCE_DIR CASE

CASE is one of:
  fit_current  src/sim/prod_fit.h is what tools/fit_production.py writes
               from the shipped Alibaba pods
  shape        gen-trace --profile production looks like those pods: GPU
               counts, GPU shares, run-time and gap quantiles, GPU-seconds
               per job; aegis sim replays it on 8 GPUs
  catalog      the 4- and 8-GPU rows of data/catalog.csv follow the
               documented derivation from their 1-GPU rows, and the
               default gen-trace, replayed on 3 GPUs, never draws them
  usage        bad combinations of options are refused (exit 2)
"""
import csv
import math
import os
import subprocess
import sys
import tempfile


def fail(msg):
    sys.stderr.write("FAIL: %s\n" % msg)
    sys.exit(1)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          **kw)


def quantile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def near(name, got, want, tol):
    if abs(got - want) > tol * abs(want):
        fail("%s: %.4g, the trace's %.4g (tolerance %d%%)"
             % (name, got, want, tol * 100))


def case_fit_current(aegis, src):
    pods = os.path.join(src, "data", "traces", "alibaba", "openb_gpu_pods.csv")
    out = run([sys.executable, os.path.join(src, "tools", "fit_production.py"),
               os.path.relpath(pods, src)], cwd=src)
    if out.returncode != 0:
        fail("fit_production.py: %s" % out.stderr)
    with open(os.path.join(src, "src", "sim", "prod_fit.h")) as f:
        if f.read() != out.stdout:
            fail("src/sim/prod_fit.h differs from what "
                 "tools/fit_production.py writes: rerun it")


def dense_pods(src):
    sys.path.insert(0, os.path.join(src, "tools"))
    import fit_production
    return fit_production.read_pods(os.path.join(
        src, "data", "traces", "alibaba", "openb_gpu_pods.csv"))


def generate(aegis, tmp, jobs, extra=()):
    cat = os.path.join(tmp, "jobs.csv")
    trace = os.path.join(tmp, "trace.csv")
    with open(trace, "w") as out:
        r = subprocess.run([aegis, "gen-trace", "--profile", "production",
                            "--catalog-out", cat, "--jobs", str(jobs)]
                           + list(extra), stdout=out, timeout=300)
    if r.returncode != 0:
        fail("gen-trace --profile production: exit %d" % r.returncode)
    return trace, cat


def case_shape(aegis, src):
    pods = dense_pods(src)
    with tempfile.TemporaryDirectory() as tmp:
        trace, cat = generate(aegis, tmp, 20000,
                              ["--seed", "5", "--gpu-mem-mib", "16384"])
        jobs = {r["name"]: r for r in rows(cat)}
        submits = [float(r["submit_time_s"]) for r in rows(trace)]
        gen = [jobs[r["workload"]] for r in rows(trace)]
        for r in rows(trace)[:500]:
            j = jobs[r["workload"]]
            if (r["num_gpus"], r["mem_mib"], r["peak_mib"], r["duration_s"]) \
                    != (j["num_gpus"], j["peak_memory_mib"],
                        j["peak_memory_mib"], j["solo_duration_s"]):
                fail("job %s: its trace columns differ from its catalog row"
                     % r["job_index"])
        for gpus in ("1", "8"):
            share = sum(p["num_gpu"] == gpus for p in pods) / len(pods)
            near("share of %s-GPU jobs" % gpus,
                 sum(j["num_gpus"] == gpus for j in gen) / len(gen), share, 0.3)
        whole = [p for p in pods if p["num_gpu"] == "1"]
        near("1-GPU jobs asking a whole GPU",
             sum(j["num_gpus"] == "1" and j["peak_memory_mib"] == "16384"
                 for j in gen) / sum(j["num_gpus"] == "1" for j in gen),
             sum(p["gpu_milli"] == "1000" for p in whole) / len(whole), 0.05)
        allowed = {str(math.ceil(int(p["gpu_milli"]) * 16384 / 1000))
                   for p in pods}
        if any(j["peak_memory_mib"] not in allowed for j in gen):
            fail("a job asks for memory no pod's share gives")
        runs = [int(p["deletion_time"]) - int(p["scheduled_time"]) for p in pods]
        for q in (0.5, 0.9):
            near("run time p%d" % (q * 100),
                 quantile([float(j["solo_duration_s"]) for j in gen], q),
                 quantile(runs, q), 0.15)
        # the load a job brings; the tail above a day is most of it
        near("GPU-seconds per job",
             sum(int(j["num_gpus"]) * float(j["solo_duration_s"])
                 for j in gen) / len(gen),
             sum(int(p["num_gpu"]) * max(r, 1) for p, r in zip(pods, runs))
             / len(pods), 0.3)
        created = [int(p["creation_time"]) for p in pods]
        gaps = [b - a for a, b in zip(created, created[1:])]
        mine = [b - a for a, b in zip(submits, submits[1:])]
        near("median gap", quantile(mine, 0.5), quantile(gaps, 0.5), 0.15)
        near("mean gap", sum(mine) / len(mine), sum(gaps) / len(gaps), 0.1)
        os.mkdir(os.path.join(tmp, "small"))
        small, small_cat = generate(aegis, os.path.join(tmp, "small"), 300)
        r = run([aegis, "sim", "--trace", small, "--catalog", small_cat,
                 "--gpus", "8", "--policy", "exclusive,aegis", "--quiet"])
        if r.returncode != 0:
            fail("aegis sim on 8 GPUs: exit %d: %s" % (r.returncode, r.stderr))


def case_catalog(aegis, src):
    sys.path.insert(0, os.path.join(src, "tools"))
    import derive_catalog
    catalog = os.path.join(src, "data", "catalog.csv")
    have = rows(catalog)
    by_name = {r["name"]: r for r in have}
    measured = rows(os.path.join(src, "data", "workloads.csv"))
    for r in measured:
        r["aegis_mib"] = by_name[r["name"]]["aegis_mib"]
    want = derive_catalog.wide_rows(measured)
    if {r["num_gpus"] for r in want} != {"4", "8"}:
        fail("the derivation gives no 4- and 8-GPU rows")
    for w in want:
        got = by_name.get(w["name"])
        if not got or any(got[c] != w[c] for c in derive_catalog.COLUMNS):
            fail("%s: not as tools/derive_catalog.py derives it" % w["name"])
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "t.csv")
        with open(trace, "w") as out:
            subprocess.run([aegis, "gen-trace", "--jobs", "3000"], stdout=out,
                           check=True, timeout=120)
        drawn = {r["workload"] for r in rows(trace)}
        if any(by_name[n]["derived_from"] for n in drawn):
            fail("the default gen-trace drew a derived row")
        r = run([aegis, "sim", "--trace", trace, "--policy", "exclusive",
                 "--quiet"])
        if r.returncode != 0:
            fail("gen-trace | sim on 3 GPUs: exit %d: %s"
                 % (r.returncode, r.stderr))
        r = run([aegis, "gen-trace", "--jobs", "5", "--workloads",
                 "resnet50_imagenet_bs128_8gpu"])
        if r.returncode != 0 or "resnet50_imagenet_bs128_8gpu" not in r.stdout:
            fail("--workloads cannot name a derived row")


def case_usage(aegis, src):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "c.csv")
        narrow = os.path.join(tmp, "narrow.csv")
        with open(narrow, "w") as f:
            f.write("name,num_gpus,solo_duration_s,peak_memory_mib\n"
                    "a,1,100,1000\n")
        refused = {
            "bogus profile": ["--profile", "bogus", "--jobs", "3"],
            "no --catalog-out": ["--profile", "production", "--jobs", "3"],
            "--catalog-out alone": ["--catalog-out", out, "--jobs", "3"],
            "--feeds": ["--profile", "production", "--catalog-out", out,
                        "--jobs", "3", "--feeds", "2"],
            "catalog without wide rows": [
                "--profile", "production", "--catalog-out", out,
                "--jobs", "3000", "--catalog", narrow],
        }
        with open(out, "w") as f:
            f.write("kept\n")
        for what, args in refused.items():
            r = run([aegis, "gen-trace"] + args)
            if r.returncode != 2 or "aegis gen-trace:" not in r.stderr:
                fail("%s: exit %d, stderr %r" % (what, r.returncode, r.stderr))
            with open(out) as f:
                if f.read() != "kept\n":
                    fail("%s: refused, but --catalog-out was written" % what)
        r = run([aegis, "gen-trace", "--profile", "production", "--jobs", "3",
                 "--catalog-out", os.path.join(tmp, "no", "such", "dir")])
        if r.returncode != 1 or "no/such/dir" not in r.stderr:
            fail("unwritable --catalog-out: exit %d, %r"
                 % (r.returncode, r.stderr))
        # a catalog that fails while it is written: no trace naming it
        r = run([aegis, "gen-trace", "--profile", "production", "--jobs", "3",
                 "--catalog-out", "/dev/full"])
        if r.returncode != 1 or "/dev/full" not in r.stderr or r.stdout:
            fail("--catalog-out /dev/full: exit %d, %d bytes of trace, %r"
                 % (r.returncode, len(r.stdout), r.stderr))


def main(argv):
    cases = {"fit_current": case_fit_current, "shape": case_shape,
             "catalog": case_catalog, "usage": case_usage}
    if len(argv) != 4 or argv[3] not in cases:
        sys.stderr.write("usage: check_production.py AEGIS SOURCE_DIR %s\n"
                         % "|".join(cases))
        return 2
    cases[argv[3]](argv[1], argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
