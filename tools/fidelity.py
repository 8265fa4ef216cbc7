#!/usr/bin/python3
"""Compare `aegis sim` with the real AEGIS runs, and fit its interference model.

    tools/fidelity.py [--aegis BIN] [--data DIR] [--model NAME=VALUE ...]
                      [--set NAME=VALUE ...]
    tools/fidelity.py --fit [--aegis BIN] [--data DIR]
    tools/fidelity.py --check [--aegis BIN] [--data DIR]
    tools/fidelity.py --recovery [--aegis BIN] [--data DIR]
    tools/fidelity.py --jitter SECONDS [--runs N] [--aegis BIN] [--data DIR]

Without --fit: replays the three 60-job traces (philly, saturn, venus) under
all six policies on 3 GPUs of 40960 MiB, with the core set as the measured
AEGIS ran (SETTINGS: a job retried after an OOM waits for an idle GPU), and
prints, per (trace, policy), the simulated and measured makespan and mean
JCT with their errors, then the geomean ratios to exclusive. --model and
--set (core settings, over SETTINGS) apply to every mode.

With --fit: grid-searches beta, threshold, delta and gamma on philly and saturn
only; venus is kept out as validation. A point's loss adds three errors
against the measurements: the mean |makespan error| of the 12 runs, the
mean |log(simulated / real JCT)| of their 720 jobs, and the mean error of
the pair times of aegis_pairwise_colocation_a100.csv. One scheduling
decision that flips can move a makespan by several percent, so each point
is scored by the mean loss of itself and its grid neighbours: the fit picks
a region that is good, not a lucky point. Prints the best point, then the
full comparison with it.

With --check (a CTest case): exits 1 unless the geomean makespans relative
to exclusive keep the real order aegis < lucid < horus < exclusive with
aegis at most 0.75, and every one of the 18 runs, fit and validation alike,
is within 10% of its real makespan (issue 2).

With --recovery: the OOM recovery of every run that had one, real against
simulated: per job, how long it waited in the recovery queue (from the
failed attempt's end to the next attempt's start); per trace group, the
mean wait and the repeat crashes (OOMs beyond a job's first). The real runs
list these for 16 jobs (results_per_job.csv).

With --jitter SECONDS: replays every trace --runs times (default 100) with
each submit time moved by a normal draw of that standard deviation (kept in
trace order, the first job at 0), and prints per (trace, policy) the median
and 5-95% range of the makespan error and how many replays stay within 10%.
The submit times are reconstructed with a stated error (data README:
median 40-80 s, p95 160-260 s, about a normal of 100 s): a miss that
survives the jitter is the model's, not the reconstruction's.

Standard library only; needs the built `aegis` binary and the measurements
in data/ (data/README.md).
"""
import argparse, csv, itertools, json, math, os, random, statistics, subprocess, sys, tempfile

POLICIES = {  # aegis sim name -> policy name in results_per_policy.csv
    "exclusive": "Exclusive",
    "aegis": "AEGIS - EstimatorFree",
    "aegis-est": "AEGIS + AnalyticalMemEst",
    "aegis-oracle": "AEGIS + ProfiledPeakMem",
    "horus": "Horus",
    "lucid": "Lucid",
}
# Core settings of the measured runs where they differ from the defaults.
# AEGIS's scheduler.py collocates only while its recovery queue is empty, so
# a job retried after an OOM waited for an idle GPU; aegis's default lets it
# share a GPU that shows its recovery floor free (DESIGN.md's ladder).
SETTINGS = {"recovery_collocates": 0}
TRACES = ["philly", "saturn", "venus"]
FIT_TRACES = ["philly", "saturn"]
GRID = {"beta": [0.3, 0.5, 0.7, 0.9, 1.1, 1.3, 1.6],
        "threshold": [0.3, 0.5, 0.7, 0.9, 1.1],
        "delta": [0.0, 0.2, 0.4, 0.6],
        "gamma": [0.0, 0.05, 0.1, 0.2]}


def read_csv(data, name):
    with open(os.path.join(data, name)) as f:
        return list(csv.DictReader(f))


class Real:
    """The measurements: per-run aggregates, per-job JCTs, pair runs."""

    def __init__(self, data):
        self.runs = {(r["trace"], r["policy"]): r
                     for r in read_csv(data, "results_per_policy.csv")}
        jobs = read_csv(data, "results_per_job.csv")
        self.jct = {(r["trace"], r["policy"], int(r["job_index"])): float(r["jct_s"])
                    for r in jobs}
        # (trace, policy) -> [(job index, recovery-queue wait s)]
        self.recovered = {}
        for r in jobs:
            if r["oom_failed_attempts"] == "1":
                self.recovered.setdefault((r["trace"], r["policy"]), []).append(
                    (int(r["job_index"]), float(r["recovery_queue_wait_s"])))
        catalog = {r["name"]: r for r in read_csv(data, "workloads.csv")}
        self.pairs = []
        for r in read_csv(data, "aegis_pairwise_colocation_a100.csv"):
            a, b = catalog.get(r["workload_a"]), catalog.get(r["workload_b"])
            if a and b:  # the 10-epoch UNet variant is not in the catalog
                self.pairs.append((float(r["solo_time_a_s"]), float(r["solo_time_b_s"]),
                                   float(r["pair_time_a_s"]), float(r["pair_time_b_s"]),
                                   profile(a), profile(b)))


def profile(row):
    return tuple(float(row[k] or 0) for k in ("avg_smact", "avg_drama"))


def slowdown(model, me, other):
    """model.c's formula for a pair: keep the two in step."""
    load = me[0] + other[0]
    if load <= 0:
        return 1.0
    excess = max(0.0, load - model["threshold"])
    return 1 + model["beta"] * excess * other[0] / load + model["delta"] * other[1]


def pair_error(model, pairs):
    """Mean relative error of the pair times: both start together, the
    first to finish leaves the other to run alone."""
    errs = []
    for solo_a, solo_b, real_a, real_b, a, b in pairs:
        s_a, s_b = slowdown(model, a, b), slowdown(model, b, a)
        end_a, end_b = solo_a * s_a, solo_b * s_b
        if end_a <= end_b:
            end_b = end_a + solo_b - end_a / s_b
        else:
            end_a = end_b + solo_a - end_b / s_a
        errs += [abs(end_a / real_a - 1), abs(end_b / real_b - 1)]
    return sum(errs) / len(errs)


def simulate(aegis, data, trace, model, trace_file=None):
    # The policies the real runs measured: aegis-plus has no real run.
    cmd = [aegis, "sim", "--json", "--policy", ",".join(POLICIES),
           "--catalog", os.path.join(data, "workloads.csv"),
           "--trace", trace_file or os.path.join(data, "traces", trace + ".csv")]
    for name, value in model.items():
        cmd += ["--model", f"{name}={value}"]
    for name, value in SETTINGS.items():
        cmd += ["--set", f"{name}={value}"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {res.returncode}: {res.stderr}")
    return json.loads(res.stdout)["policies"]


def compare(aegis, data, model, traces, real):
    """Rows of (trace, policy, simulated run, real run, per-job |log ratio|)."""
    rows = []
    for t in traces:
        for run in simulate(aegis, data, t, model):
            name = POLICIES[run["policy"]]
            logs = [abs(math.log((j["attempts"][-1]["end_s"] - j["submit_s"]) /
                                 real.jct[t, name, j["index"]]))
                    for j in run["jobs"]]
            rows.append((t, run["policy"], run, real.runs[t, name], logs))
    return rows


def makespan_error(sim, real):
    return sim["makespan_s"] / float(real["makespan_s"]) - 1


def loss(rows, model, real):
    mk = sum(abs(makespan_error(s, r)) for _, _, s, r, _ in rows) / len(rows)
    logs = [x for *_, l in rows for x in l]
    return mk + sum(logs) / len(logs) + pair_error(model, real.pairs)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def report(rows, model, real):
    print("model: " + " ".join(f"{k}={v}" for k, v in model.items()))
    print(f"{'trace':7} {'policy':13} {'makespan sim':>12} {'real':>9} {'err':>7}"
          f" {'mean JCT sim':>12} {'real':>9} {'err':>7} {'OOMs sim/real':>13}")
    for t, pol, s, r, _ in rows:
        jct_err = s["mean_jct_s"] / float(r["mean_jct_s"]) - 1
        print(f"{t:7} {pol:13} {s['makespan_s']:12.0f} {float(r['makespan_s']):9.0f}"
              f" {100*makespan_error(s, r):+6.1f}% {s['mean_jct_s']:12.0f}"
              f" {float(r['mean_jct_s']):9.0f} {100*jct_err:+6.1f}%"
              f" {s['ooms']:9d}/{r['oom_count']}")
    for group, traces in (("fit (philly, saturn)", FIT_TRACES), ("validation (venus)", ["venus"])):
        errs = [abs(makespan_error(s, r)) for t, _, s, r, _ in rows if t in traces]
        if errs:
            print(f"{group}: worst makespan error {100*max(errs):.1f}%, mean {100*sum(errs)/len(errs):.1f}%")
    print(f"pair times: mean error {100*pair_error(model, real.pairs):.1f}%")
    print("geomean ratio to exclusive over the traces, simulated / real:")
    excl = {t: (s, r) for t, p, s, r, _ in rows if p == "exclusive"}
    for pol in POLICIES:
        mine = [(t, s, r) for t, p, s, r, _ in rows if p == pol]
        parts = []
        for key in ("makespan_s", "mean_jct_s"):
            sim = geomean([s[key] / excl[t][0][key] for t, s, _ in mine])
            act = geomean([float(r[key]) / float(excl[t][1][key]) for t, _, r in mine])
            parts.append(f"{sim:.3f} / {act:.3f}")
        print(f"  {pol:13} makespan {parts[0]}   mean JCT {parts[1]}")


def recovery_waits(run):
    """[(job index, wait s)] for every OOM of a simulated run that was retried."""
    waits = []
    for j in run["jobs"]:
        tries = j["attempts"]
        waits += [(j["index"], tries[k + 1]["start_s"] - tries[k]["end_s"])
                  for k in range(len(tries) - 1) if tries[k]["oom"]]
    return waits


def report_recovery(rows, real):
    print("OOM recovery, real / simulated: job index (recovery-queue wait, s)")
    for group, traces in (("fit (philly, saturn)", FIT_TRACES), ("validation (venus)", ["venus"])):
        real_w, sim_w, real_repeat, sim_repeat = [], [], 0, 0
        for t, pol, s, r, _ in rows:
            if t not in traces:
                continue
            mine = recovery_waits(s)
            theirs = real.recovered.get((t, POLICIES[pol]), [])
            if mine or theirs:
                show = lambda ws: " ".join(f"{i}({w:.0f})" for i, w in ws) or "-"
                print(f"  {t:7} {pol:13} real {show(theirs)}\n  {'':21} sim  {show(mine)}")
            real_w += [w for _, w in theirs]
            sim_w += [w for _, w in mine]
            real_repeat += int(r["oom_count"]) - len(theirs)
            sim_repeat += len(mine) - len({i for i, _ in mine})
        mean = lambda ws: sum(ws) / len(ws) if ws else 0
        print(f"{group}: mean recovery wait real {mean(real_w):.0f} s ({len(real_w)} OOMs),"
              f" sim {mean(sim_w):.0f} s ({len(sim_w)} OOMs); repeat crashes:"
              f" real {real_repeat}, sim {sim_repeat}")


def jittered_trace(src, dst, sigma, rng):
    """Copies trace src to dst with each submit after the first moved by a
    normal draw of deviation sigma, kept non-decreasing and >= 0."""
    with open(src) as f:
        jobs = list(csv.DictReader(f))
    prev = 0.0
    for i, job in enumerate(jobs):
        t = float(job["submit_time_s"])
        if i > 0:
            t = max(prev, t + rng.gauss(0, sigma))
        job["submit_time_s"] = f"{t:.1f}"
        prev = t
    with open(dst, "w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=list(jobs[0]))
        out.writeheader()
        out.writerows(jobs)


def report_jitter(aegis, data, model, real, sigma, runs):
    print(f"makespan error over {runs} replays, submit times jittered by a normal"
          f" of {sigma:g} s (seed 1)")
    print(f"{'trace':7} {'policy':13} {'median':>7} {'5%':>7} {'95%':>7} {'within 10%':>11}")
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        for t in TRACES:
            errs = {}
            for _ in range(runs):
                path = os.path.join(tmp, t + ".csv")
                jittered_trace(os.path.join(data, "traces", t + ".csv"), path, sigma, rng)
                for run in simulate(aegis, data, t, model, path):
                    errs.setdefault(run["policy"], []).append(
                        makespan_error(run, real.runs[t, POLICIES[run["policy"]]]))
            for pol, e in errs.items():
                e.sort()
                inside = sum(abs(x) <= 0.10 for x in e)
                print(f"{t:7} {pol:13} {100*statistics.median(e):+6.1f}%"
                      f" {100*e[int(0.05*len(e))]:+6.1f}% {100*e[int(0.95*len(e)) - 1]:+6.1f}%"
                      f" {inside:7d}/{len(e)}")


def fit(aegis, data, real):
    names = list(GRID)
    losses = {}
    for idx in itertools.product(*(range(len(GRID[n])) for n in names)):
        model = {n: GRID[n][i] for n, i in zip(names, idx)}
        losses[idx] = loss(compare(aegis, data, model, FIT_TRACES, real), model, real)
        print(f"{model} loss {losses[idx]:.4f}", file=sys.stderr, flush=True)

    def smoothed(idx):
        near = [n for n in itertools.product(*((i - 1, i, i + 1) for i in idx)) if n in losses]
        return sum(losses[n] for n in near) / len(near)

    best = min(losses, key=smoothed)
    model = {n: GRID[n][i] for n, i in zip(names, best)}
    print(f"best on {'+'.join(FIT_TRACES)}: {model} "
          f"(loss {losses[best]:.4f}, neighbourhood {smoothed(best):.4f})")
    return model


def name_values(ap, flag, items):
    """{NAME: VALUE} from NAME=VALUE items; a usage error (exit 2) else."""
    pairs = [item.split("=", 1) for item in items]
    for item, pair in zip(items, pairs):
        if len(pair) != 2 or not pair[0]:
            ap.error(f"{flag} {item}: expected NAME=VALUE")
    return dict(pairs)


def add_sources(ap):
    """--aegis and --data, which tools/oom_cost.py takes too."""
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--aegis", metavar="BIN",
                    default=os.path.join(here, "..", "build", "src", "cli", "aegis"),
                    help="the aegis binary whose sim is compared (default: this checkout's "
                         "build/src/cli/aegis)")
    ap.add_argument("--data", metavar="DIR", default=os.path.join(here, "..", "data"),
                    help="the traces and measurements of the real runs (default: this "
                         "checkout's data)")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_sources(ap)
    ap.add_argument("--model", action="append", default=[], metavar="NAME=VALUE",
                    help="an interference model parameter (beta, threshold, delta, gamma) "
                         "for `aegis sim --model`; repeatable (default: sim's own)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="a core setting for `aegis sim --set`, over the measured runs' "
                         "(recovery_collocates=0); repeatable")
    ap.add_argument("--fit", action="store_true",
                    help="grid-search the model on philly and saturn, then compare with "
                         "the best point")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless the geomean makespans keep the real policy order "
                         "(aegis at most 0.75 of exclusive) and all 18 runs are "
                         "within 10%% of the real ones")
    ap.add_argument("--recovery", action="store_true",
                    help="print the OOM recovery waits, real against simulated, "
                         "instead of the comparison")
    ap.add_argument("--jitter", type=float, metavar="SECONDS",
                    help="replay each trace --runs times with every submit time moved "
                         "by a normal draw of this standard deviation")
    ap.add_argument("--runs", type=int, default=100,
                    help="replays per trace for --jitter (default: %(default)s)")
    args = ap.parse_args()
    if args.jitter is not None and (args.jitter < 0 or args.runs < 1):
        ap.error("--jitter needs SECONDS >= 0 and --runs >= 1")
    if not os.path.isfile(os.path.join(args.data, "results_per_policy.csv")):
        ap.error(f"{args.data}: no results_per_policy.csv "
                 "(data/README.md says what it holds)")
    real = Real(args.data)
    model = name_values(ap, "--model", args.model)
    SETTINGS.update(name_values(ap, "--set", args.set))
    if args.fit:
        model = fit(args.aegis, args.data, real)
    if args.jitter is not None:
        report_jitter(args.aegis, args.data, model, real, args.jitter, args.runs)
        return
    rows = compare(args.aegis, args.data, model, TRACES, real)
    if args.recovery:
        report_recovery(rows, real)
        return
    report(rows, read_defaults(args.aegis, {k: float(v) for k, v in model.items()}), real)
    if args.check:
        problems = check(rows)
        for p in problems:
            print("FAIL: " + p)
        sys.exit(1 if problems else 0)


def check(rows):
    """What the issue asks of the simulator, as a list of broken promises."""
    excl = {t: s for t, p, s, _, _ in rows if p == "exclusive"}
    ratio = {pol: geomean([s["makespan_s"] / excl[t]["makespan_s"]
                           for t, p, s, _, _ in rows if p == pol])
             for pol in POLICIES}
    problems = []
    order = ["aegis", "lucid", "horus", "exclusive"]
    if sorted(order, key=ratio.get) != order:
        problems.append(f"geomean makespan order is not {' < '.join(order)}: {ratio}")
    if ratio["aegis"] > 0.75:
        problems.append(f"aegis geomean makespan {ratio['aegis']:.3f} > 0.75")
    for t, pol, s, r, _ in rows:
        if abs(makespan_error(s, r)) > 0.10:
            problems.append(f"{t} {pol}: makespan error {100*makespan_error(s, r):+.1f}%"
                            f" beyond 10%")
    return problems


def read_defaults(aegis, overrides):
    """The model's defaults as `aegis sim --help` lists them, with overrides."""
    text = subprocess.run([aegis, "sim", "--help"], capture_output=True, text=True).stdout
    model = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] in ("beta", "threshold", "delta", "gamma"):
            model[words[0]] = float(words[1])
    model.update(overrides)
    return model


if __name__ == "__main__":
    main()
