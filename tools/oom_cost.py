#!/usr/bin/python3
"""What an OOM costs: the simulator's crashes against the real AEGIS runs'.

    tools/oom_cost.py [--aegis BIN] [--data DIR] [--check]
    tools/oom_cost.py --fit [--data DIR]

Replays the three 60-job traces under policy aegis as the measured runs
were set (tools/fidelity.py's SETTINGS) and prints, per trace and summed
over the three, the OOMs and the time lost to them (the failed attempts'
run time, launch to crash), simulated against the real "AEGIS -
EstimatorFree" runs of data/results_per_job.csv, with the ratio
simulated / real.

With --check (a CTest case): exits 1 unless the OOMs and the time lost,
summed over the three traces, are each within 25% of the real runs'.

With --fit: fits the simulator's crash time (model.c's oom_crash_s,
oom_knee_mib, oom_s_per_gib) to every measured failed attempt, of every
policy, against its workload's peak memory: a least-squares line in the
GiB above a knee, the knee the best of a 2 GiB grid. Prints the fit and
each attempt's measured and fitted time.

Standard library only; docs/model.md, "What an OOM costs", has the model.
"""
import argparse, csv, json, os, subprocess, sys

from fidelity import SETTINGS, TRACES, add_sources, read_csv

REAL_POLICY = "AEGIS - EstimatorFree"   # aegis sim's policy aegis
BOUND = 0.25                            # the goal, either way


def real_ooms(data):
    """{trace: (OOMs, seconds lost)} of the real aegis runs."""
    out = {t: [0, 0.0] for t in TRACES}
    for r in read_csv(data, "results_per_job.csv"):
        if r["policy"] == REAL_POLICY and r["oom_failed_attempts"] not in ("", "0"):
            out[r["trace"]][0] += int(r["oom_failed_attempts"])
            out[r["trace"]][1] += float(r["failed_attempt_runtime_s"])
    return out


def simulated_ooms(aegis, data, trace):
    """(OOMs, seconds lost) of `aegis sim --policy aegis` on the trace."""
    cmd = [aegis, "sim", "--json", "--policy", "aegis",
           "--catalog", os.path.join(data, "workloads.csv"),
           "--trace", os.path.join(data, "traces", trace + ".csv")]
    for name, value in SETTINGS.items():
        cmd += ["--set", f"{name}={value}"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {res.returncode}: {res.stderr}")
    crashed = [a for j in json.loads(res.stdout)["policies"][0]["jobs"]
               for a in j["attempts"] if a["oom"]]
    return len(crashed), sum(a["end_s"] - a["start_s"] for a in crashed)


def ratio(sim, real):
    return sim / real if real else float("inf") if sim else 1.0


def compare(aegis, data):
    """Prints the table; returns the summed (sim, real) OOMs and seconds."""
    real = real_ooms(data)
    total = [0, 0, 0.0, 0.0]
    print(f"{'trace':8} {'OOMs sim':>8} {'real':>5} {'ratio':>6}"
          f" {'lost s sim':>11} {'real':>7} {'ratio':>6}")
    for t in TRACES:
        n, lost = simulated_ooms(aegis, data, t)
        rn, rlost = real[t]
        print(f"{t:8} {n:8d} {rn:5d} {ratio(n, rn):6.2f}"
              f" {lost:11.1f} {rlost:7.1f} {ratio(lost, rlost):6.2f}")
        total = [total[0] + n, total[1] + rn, total[2] + lost, total[3] + rlost]
    print(f"{'all':8} {total[0]:8d} {total[1]:5d} {ratio(total[0], total[1]):6.2f}"
          f" {total[2]:11.1f} {total[3]:7.1f} {ratio(total[2], total[3]):6.2f}")
    return total


def crash_points(data):
    """[(peak GiB, measured crash s, workload)] of every failed attempt."""
    peak = {r["name"]: float(r["peak_memory_mib"]) / 1024
            for r in read_csv(data, "workloads.csv")}
    return [(peak[r["workload"]], float(r["failed_attempt_runtime_s"]), r["workload"])
            for r in read_csv(data, "results_per_job.csv")
            if r["oom_failed_attempts"] == "1"]


def line_above(points, knee):
    """Least squares of crash s on GiB above knee: (base, slope, mean error)."""
    xs = [max(0.0, gib - knee) for gib, _, _ in points]
    ys = [s for _, s, _ in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = (sum((x - mx) * (y - my) for x, y in zip(xs, ys))
             / sum((x - mx) ** 2 for x in xs))
    base = my - slope * mx
    err = sum(abs(base + slope * x - y) / y for x, y in zip(xs, ys)) / len(xs)
    return base, slope, err


def fit(data):
    points = crash_points(data)
    knee = min(range(8, 34, 2), key=lambda k: line_above(points, k)[2])
    base, slope, err = line_above(points, knee)
    print(f"oom_crash_s={base:.1f} oom_knee_mib={knee * 1024} oom_s_per_gib={slope:.2f}"
          f"  (mean error {100 * err:.0f}% over {len(points)} failed attempts)")
    for gib, s, name in sorted(points):
        print(f"  {name:40} peak {gib:5.1f} GiB  measured {s:5.1f} s"
              f"  fitted {base + slope * max(0.0, gib - knee):5.1f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_sources(ap)
    ap.add_argument("--check", action="store_true",
                    help=f"exit 1 unless the summed OOMs and time lost are within "
                         f"{100 * BOUND:.0f}%% of the real runs'")
    ap.add_argument("--fit", action="store_true",
                    help="fit the crash time to the measured failed attempts")
    args = ap.parse_args()
    if not os.path.isfile(os.path.join(args.data, "results_per_job.csv")):
        ap.error(f"{args.data}: no results_per_job.csv (data/README.md says what it holds)")
    if args.fit:
        fit(args.data)
        return
    n, rn, lost, rlost = compare(args.aegis, args.data)
    if args.check:
        bad = [f"{what} {ratio(s, r):.2f} of the real runs', outside 1 +- {BOUND}"
               for what, s, r in (("OOMs", n, rn), ("time lost", lost, rlost))
               if abs(ratio(s, r) - 1) > BOUND]
        for b in bad:
            print("FAIL: " + b)
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
