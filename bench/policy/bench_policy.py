#!/usr/bin/env python3
"""bench_policy.py -- aegis-plus against aegis and exclusive, in one run.

Replays, with `aegis sim` (3 GPUs of 40960 MiB and naive sharing unless a
part says otherwise):
  1. the three real traces (data/traces), defaults: makespan and mean JCT
     relative to exclusive (geomean), OOMs, p95 JCT per trace;
  2. synthetic traces from `aegis gen-trace` (seeds, 100-300 jobs, mean
     gaps 0-120 s, 3-8 GPUs drawn from each seed): aegis-plus relative to
     aegis;
  3. the real traces under the alternative fit (--model beta=0.9 --model
     threshold=1.1);
  4. the fairness scenario: user A submits 80 jobs within a minute, user B
     8 jobs five minutes later.
and prints the tables docs/design.md shows, then PASS or FAIL per goal.
With --readme FILE it also writes the summary table into FILE, between
the lines README_BEGIN and README_END; with --check-readme FILE it only
compares, and fails when the table there is not what this run measured.

usage: bench_policy.py AEGIS [--root DIR] [--seeds LIST] [--held-out LIST]
       [--readme FILE | --check-readme FILE]
       (a LIST is comma-separated seeds or ranges: 101-108,201)
Exit status: 0 when every goal holds, 1 when one does not, 2 on bad
usage. With --check-readme it is 1 only when the README's table is stale:
the goals are printed, and judged by a run without it (bench-policy).
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile

REAL = ("philly", "saturn", "venus")
README_BEGIN = "<!-- bench_policy.py --readme: begin -->"
README_END = "<!-- bench_policy.py --readme: end -->"
ALT_MODEL = ["--model", "beta=0.9", "--model", "threshold=1.1"]


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


# --set NAME=VALUE given to the bench: passed to every `aegis sim`, for
# trying a parameter of aegis-plus (the other policies ignore its own).
SETS = []


def sim(aegis, trace, policies, extra=()):
    """{policy: run} of one `aegis sim --json` call."""
    out = subprocess.run(
        [aegis, "sim", "--trace", trace, "--policy", ",".join(policies),
         "--json", *extra, *SETS], check=True, capture_output=True,
        text=True).stdout
    return {p["policy"]: p for p in json.loads(out)["policies"]}


def real_traces(aegis, root, extra=()):
    return {t: sim(aegis, os.path.join(root, "data", "traces", t + ".csv"),
                   ["exclusive", "aegis", "aegis-plus"], extra)
            for t in REAL}


def synthetic_shape(seed):
    """Jobs, mean gap and GPUs of the trace of `seed`: drawn from the seed,
    so a list of seeds covers the ranges without anyone choosing them."""
    rng = random.Random(seed)
    return rng.randint(100, 300), rng.uniform(0, 120), rng.randint(3, 8)


def synthetic(aegis, tmp, seed):
    jobs, gap, gpus = synthetic_shape(seed)
    path = os.path.join(tmp, "gen-%d.csv" % seed)
    with open(path, "w") as f:
        subprocess.run([aegis, "gen-trace", "--jobs", str(jobs), "--seed",
                        str(seed), "--mean-gap-s", "%.1f" % gap], check=True,
                       stdout=f)
    runs = sim(aegis, path, ["aegis", "aegis-plus"], ["--gpus", str(gpus)])
    return (jobs, gap, gpus), runs


def seed_list(text):
    """Seeds from "1,2,5-9": integers and inclusive ranges; ValueError on
    anything else, an empty range included."""
    seeds = []
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        first, last = int(lo), int(hi or lo)
        if last < first:
            raise ValueError(part)
        seeds.extend(range(first, last + 1))
    return seeds


def fairness_trace(path):
    """User A: 80 jobs within the first minute; user B: 8 jobs five minutes
    later. Workloads cycle through a fixed mix of the catalog."""
    mix = ["resnet18_cifar100_bs32_50e_1gpu", "mobilenet_imagenet_bs64_1gpu",
           "efficientnet_cifar100_bs64_50e_1gpu", "inception_imagenet_bs32_1gpu",
           "bert_large_wiki_bs8_1gpu", "resnet50_imagenet_bs32_1gpu",
           "mobilenet_cifar100_bs64_50e_1gpu", "unet_voc_1gpu"]
    with open(path, "w") as f:
        f.write("job_index,submit_time_s,workload,user\n")
        for i in range(80):
            f.write("%d,%.1f,%s,A\n" % (i + 1, i * 0.75, mix[i % len(mix)]))
        for i in range(8):
            f.write("%d,%.1f,%s,B\n" % (81 + i, 360 + i, mix[(i + 3) % len(mix)]))


def user_mean_jct(run, trace_path, user):
    users = {}
    with open(trace_path) as f:
        next(f)
        for line in f:
            idx, _, _, who = line.strip().split(",")
            users[int(idx)] = who
    jcts = [j["jct_s"] for j in run["jobs"] if users[j["index"]] == user]
    return sum(jcts) / len(jcts)


class Goals:
    def __init__(self):
        self.failed = 0

    def check(self, name, ok):
        print("%-66s %s" % (name, "PASS" if ok else "FAIL"))
        self.failed += not ok


def report_real(title, runs):
    print("\n## %s\n" % title)
    print("| trace | policy | makespan (s) | /excl | mean JCT (s) | /excl | "
          "p95 JCT (s) | OOMs |")
    print("|---|---|---|---|---|---|---|---|")
    for t, by in runs.items():
        ex = by["exclusive"]
        for p in ("exclusive", "aegis", "aegis-plus"):
            r = by[p]
            print("| %s | %s | %.0f | %.3f | %.0f | %.3f | %.0f | %d |" % (
                t, p, r["makespan_s"], r["makespan_s"] / ex["makespan_s"],
                r["mean_jct_s"], r["mean_jct_s"] / ex["mean_jct_s"],
                r["p95_jct_s"], r["ooms"]))
    print("\n| policy | geomean makespan /excl | geomean mean JCT /excl | OOMs |")
    print("|---|---|---|---|")
    out = {}
    for p in ("aegis", "aegis-plus"):
        mk = geomean([by[p]["makespan_s"] / by["exclusive"]["makespan_s"]
                      for by in runs.values()])
        jct = geomean([by[p]["mean_jct_s"] / by["exclusive"]["mean_jct_s"]
                       for by in runs.values()])
        ooms = sum(by[p]["ooms"] for by in runs.values())
        out[p] = (mk, jct, ooms)
        print("| %s | %.3f | %.3f | %d |" % (p, mk, jct, ooms))
    return out


def report_synthetic(title, aegis, tmp, seeds):
    print("\n## %s\n" % title)
    print("| seed | jobs | gap (s) | GPUs | makespan plus/aegis | "
          "mean JCT plus/aegis | OOMs plus / aegis |")
    print("|---|---|---|---|---|---|---|")
    mks, jcts, ooms_plus, ooms_aegis = [], [], 0, 0
    for seed in seeds:
        (jobs, gap, gpus), r = synthetic(aegis, tmp, seed)
        a, p = r["aegis"], r["aegis-plus"]
        mk = p["makespan_s"] / a["makespan_s"]
        jct = p["mean_jct_s"] / a["mean_jct_s"]
        mks.append(mk)
        jcts.append(jct)
        ooms_plus += p["ooms"]
        ooms_aegis += a["ooms"]
        print("| %d | %d | %.1f | %d | %.3f | %.3f | %d / %d |" % (
            seed, jobs, gap, gpus, mk, jct, p["ooms"], a["ooms"]))
    print("\ngeomean makespan %.3f, mean JCT %.3f, slowest %.3f, OOMs %d / %d, "
          "%d of %d traces above 1.03" % (
              geomean(mks), geomean(jcts), max(mks), ooms_plus, ooms_aegis,
              sum(mk > 1.03 for mk in mks), len(mks)))
    return geomean(mks), geomean(jcts), max(mks), ooms_plus, ooms_aegis


def summary_table(real, alt, tuned, fresh, fair, seeds, held):
    """The README's table: the figures of the issue's goals, per policy."""
    def ratio(runs, policy, key):
        return geomean([by[policy][key] / by["exclusive"][key]
                        for by in runs.values()])
    rows = [
        ("real traces: geomean makespan / exclusive", "makespan_s", real),
        ("real traces: geomean mean JCT / exclusive", "mean_jct_s", real),
        ("alternative fit: geomean makespan / exclusive", "makespan_s", alt),
    ]
    out = ["| | exclusive | aegis | aegis-plus |", "|---|---|---|---|"]
    for name, key, runs in rows:
        out.append("| %s | 1 | %.3f | %.3f |" % (
            name, ratio(runs, "aegis", key), ratio(runs, "aegis-plus", key)))
    out.append("| real traces: OOM crashes | 0 | %d | %d |" % tuple(
        sum(by[p]["ooms"] for by in real.values())
        for p in ("aegis", "aegis-plus")))
    for t, by in real.items():
        out.append("| %s: p95 JCT (s) | %s |" % (t, " | ".join(
            "%.0f" % by[p]["p95_jct_s"]
            for p in ("exclusive", "aegis", "aegis-plus"))))
    for name, (mk, jct, worst, po, ao) in (
            ("seeds %s (tuned on)" % seeds, tuned),
            ("seeds %s (held out)" % held, fresh)):
        out.append("| synthetic, %s: geomean makespan / aegis | | 1 | %.3f |"
                   % (name, mk))
        out.append("| synthetic, %s: geomean mean JCT / aegis | | 1 | %.3f |"
                   % (name, jct))
    out.append("| fairness: user B's mean JCT (s) | | %.0f | %.0f |" % fair)
    return "\n".join(out) + "\n"


def readme_block(path, table, write):
    """Writes the table between the markers of `path`, or (write False)
    says whether it is there already; an error text when the markers are
    missing."""
    with open(path) as f:
        text = f.read()
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        return "%s: no %s ... %s lines" % (path, README_BEGIN, README_END)
    start = begin + len(README_BEGIN) + 1
    if text[start:end] == table:
        return None
    if not write:
        return ("%s: the table between the bench_policy.py markers is not "
                "what this run measured; run bench_policy.py --readme %s"
                % (path, path))
    with open(path, "w") as f:
        f.write(text[:start] + table + text[end:])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("aegis", help="the aegis command-line binary to "
                    "measure (build/src/cli/aegis): the bench runs its "
                    "`sim` and `gen-trace`")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--root", metavar="DIR",
                    default=os.path.join(here, "..", ".."),
                    help="the aegis source tree, whose data/traces holds "
                    "the real traces (default: the tree holding this "
                    "script, two folders up)")
    ap.add_argument("--seeds", metavar="LIST", default="1-6",
                    help="synthetic seeds tuned on, comma-separated seeds or "
                    "ranges A-B (default 1-6)")
    ap.add_argument("--held-out", metavar="LIST", default="101-108",
                    help="synthetic seeds never tuned on (default 101-108)")
    ap.add_argument("--set", action="append", default=[],
                    metavar="NAME=VALUE", help="a core parameter for every "
                    "run (aegis sim --set), to try one of aegis-plus's")
    readme = ap.add_mutually_exclusive_group()
    readme.add_argument("--readme", metavar="FILE",
                        help="write the summary table into FILE")
    readme.add_argument("--check-readme", metavar="FILE",
                        help="fail unless FILE has this run's table")
    args = ap.parse_args()
    if (args.readme or args.check_readme) and (
            args.set or args.seeds != ap.get_default("seeds") or
            args.held_out != ap.get_default("held_out")):
        ap.error("the README's table is of the defaults: --readme and "
                 "--check-readme take no --set, --seeds or --held-out")
    for kv in args.set:
        SETS.extend(["--set", kv])
    try:
        seeds = seed_list(args.seeds)
        held = seed_list(args.held_out)
    except ValueError:
        ap.error("seeds are comma-separated integers or ranges A-B")
    goals = Goals()
    with tempfile.TemporaryDirectory() as tmp:
        real = real_traces(args.aegis, args.root)
        g = report_real("The real traces, aegis sim's defaults", real)
        alt_by_trace = real_traces(args.aegis, args.root, ALT_MODEL)
        alt = report_real("The real traces, --model beta=0.9 --model "
                          "threshold=1.1", alt_by_trace)
        tuned = report_synthetic("Synthetic traces, seeds tuned on",
                                 args.aegis, tmp, seeds)
        fresh = report_synthetic("Synthetic traces, held-out seeds",
                                 args.aegis, tmp, held)
        fair_path = os.path.join(tmp, "fair.csv")
        fairness_trace(fair_path)
        fair = sim(args.aegis, fair_path, ["aegis", "aegis-plus"])
        b_aegis = user_mean_jct(fair["aegis"], fair_path, "B")
        b_plus = user_mean_jct(fair["aegis-plus"], fair_path, "B")
        fair_mk = fair["aegis-plus"]["makespan_s"] / fair["aegis"]["makespan_s"]
        print("\n## Fairness: user A 80 jobs in a minute, user B 8 jobs at "
              "5 min\n")
        print("| policy | B's mean JCT (s) | A's mean JCT (s) | makespan (s) |")
        print("|---|---|---|---|")
        for p in ("aegis", "aegis-plus"):
            print("| %s | %.0f | %.0f | %.0f |" % (
                p, user_mean_jct(fair[p], fair_path, "B"),
                user_mean_jct(fair[p], fair_path, "A"),
                fair[p]["makespan_s"]))
    print("\n## Goals\n")
    mk, jct, ooms = g["aegis-plus"]
    goals.check("real: geomean makespan %.3f <= 0.65 of exclusive" % mk,
                mk <= 0.65)
    goals.check("real: geomean mean JCT %.3f <= 0.45 of exclusive" % jct,
                jct <= 0.45)
    goals.check("real: OOMs %d <= aegis's %d" % (ooms, g["aegis"][2]),
                ooms <= g["aegis"][2])
    for t, by in real.items():
        goals.check("real %s: p95 JCT %.0f <= aegis's %.0f" % (
            t, by["aegis-plus"]["p95_jct_s"], by["aegis"]["p95_jct_s"]),
            by["aegis-plus"]["p95_jct_s"] <= by["aegis"]["p95_jct_s"])
    for name, (smk, sjct, worst, po, ao) in (("tuned", tuned),
                                             ("held-out", fresh)):
        goals.check("synthetic %s: geomean makespan %.3f <= 0.93 x aegis"
                    % (name, smk), smk <= 0.93)
        goals.check("synthetic %s: geomean mean JCT %.3f <= 0.85 x aegis"
                    % (name, sjct), sjct <= 0.85)
        goals.check("synthetic %s: slowest trace %.3f <= 1.03 x aegis"
                    % (name, worst), worst <= 1.03)
        goals.check("synthetic %s: OOMs %d within 10%% of aegis's %d"
                    % (name, po, ao), po <= 1.1 * ao)
    amk = alt["aegis-plus"][0] / alt["aegis"][0]
    goals.check("alternative fit: geomean makespan %.3f <= 0.95 x aegis"
                % amk, amk <= 0.95)
    goals.check("fairness: B's mean JCT %.3f <= 0.4 x under aegis"
                % (b_plus / b_aegis), b_plus / b_aegis <= 0.4)
    goals.check("fairness: makespan %.3f within 3%% of aegis" % fair_mk,
                abs(fair_mk - 1) <= 0.03)
    table = summary_table(real, alt_by_trace, tuned, fresh,
                          (b_aegis, b_plus), args.seeds, args.held_out)
    print("\n## Summary (the README's table)\n")
    print(table, end="")
    if args.readme or args.check_readme:
        err = readme_block(args.readme or args.check_readme, table,
                           bool(args.readme))
        if err:
            print(err, file=sys.stderr)
            return 1
        if args.check_readme:
            return 0
    return 1 if goals.failed else 0


if __name__ == "__main__":
    sys.exit(main())
