#!/usr/bin/python3
"""Compare `aegis sim` with the real AEGIS runs, and fit the interference model.

    tools/fidelity.py [--aegis BIN] [--data DIR] [--model NAME=VALUE ...]
    tools/fidelity.py --fit [--aegis BIN] [--data DIR]

Without --fit: replays the three 60-job traces (philly, saturn, venus) under
all six policies on 3 GPUs of 40960 MiB and prints, per (trace, policy), the
simulated and measured makespan and mean JCT and their error, then the
geomean ratios to exclusive. With --fit: grid-searches the model parameters
on philly and saturn only (venus is kept out as validation), scoring the
mean absolute makespan error, and prints the best parameters.

Standard library only; needs the built `aegis` binary and ../shared/data.
"""
import argparse, csv, itertools, json, math, os, subprocess, sys

POLICIES = {  # aegis sim name -> policy name in results_per_policy.csv
    "exclusive": "Exclusive",
    "aegis": "AEGIS - EstimatorFree",
    "aegis-est": "AEGIS + AnalyticalMemEst",
    "aegis-oracle": "AEGIS + ProfiledPeakMem",
    "horus": "Horus",
    "lucid": "Lucid",
}
TRACES = ["philly", "saturn", "venus"]
FIT_TRACES = ["philly", "saturn"]


def measured(data):
    out = {}
    with open(os.path.join(data, "results_per_policy.csv")) as f:
        for row in csv.DictReader(f):
            out[row["trace"], row["policy"]] = (float(row["makespan_s"]),
                                                float(row["mean_jct_s"]),
                                                int(row["oom_count"]))
    return out


def simulate(aegis, data, trace, model):
    cmd = [aegis, "sim", "--json", "--policy", "all",
           "--catalog", os.path.join(data, "workloads.csv"),
           "--trace", os.path.join(data, "traces", trace + ".csv")]
    for item in model:
        cmd += ["--model", item]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {res.returncode}: {res.stderr}")
    return {p["policy"]: (p["makespan_s"], p["mean_jct_s"], p["ooms"])
            for p in json.loads(res.stdout)["policies"]}


def errors(aegis, data, model, traces, real):
    rows = []
    for t in traces:
        sim = simulate(aegis, data, t, model)
        for pol, name in POLICIES.items():
            rows.append((t, pol, sim[pol], real[t, name]))
    return rows


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def report(rows):
    print(f"{'trace':7} {'policy':13} {'sim makespan':>12} {'real':>9} {'err':>7}"
          f" {'sim jct':>9} {'real':>9} {'err':>7} {'ooms sim/real':>13}")
    for t, pol, s, r in rows:
        print(f"{t:7} {pol:13} {s[0]:12.0f} {r[0]:9.0f} {100*(s[0]/r[0]-1):+6.1f}%"
              f" {s[1]:9.0f} {r[1]:9.0f} {100*(s[1]/r[1]-1):+6.1f}% {s[2]:6d}/{r[2]}")
    worst = max(abs(s[0] / r[0] - 1) for _, _, s, r in rows)
    print(f"worst makespan error: {100*worst:.1f}%")
    print("geomean ratio to exclusive (sim / real):")
    for pol in POLICIES:
        out = []
        for k in (0, 1):
            sim = geomean([s[k] / e[k] for (t, p, s, _), (_, _, e, _) in
                           zip([x for x in rows if x[1] == pol],
                               [x for x in rows if x[1] == "exclusive"])])
            real = geomean([r[k] / e[k] for (t, p, _, r), (_, _, _, e) in
                            zip([x for x in rows if x[1] == pol],
                                [x for x in rows if x[1] == "exclusive"])])
            out.append(f"{sim:.3f} / {real:.3f}")
        print(f"  {pol:13} makespan {out[0]}   mean JCT {out[1]}")


def score(rows):
    return sum(abs(s[0] / r[0] - 1) for _, _, s, r in rows) / len(rows)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--aegis", default=os.path.join(here, "..", "build", "src", "cli", "aegis"))
    ap.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data"))
    ap.add_argument("--model", action="append", default=[])
    ap.add_argument("--fit", action="store_true")
    args = ap.parse_args()
    real = measured(args.data)
    if not args.fit:
        report(errors(args.aegis, args.data, args.model, TRACES, real))
        return
    grid = {"beta": [0.4, 0.6, 0.8, 1.0, 1.2, 1.5, 2.0],
            "threshold": [0.2, 0.4, 0.6, 0.8, 1.0, 1.2],
            "delta": [0.0, 0.25, 0.5]}
    best = None
    for values in itertools.product(*grid.values()):
        model = [f"{k}={v}" for k, v in zip(grid, values)] + args.model
        s = score(errors(args.aegis, args.data, model, FIT_TRACES, real))
        print(f"{' '.join(model):40} mean |makespan error| {100*s:.2f}%", flush=True)
        if best is None or s < best[0]:
            best = (s, model)
    print(f"best on {'+'.join(FIT_TRACES)}: {' '.join(best[1])} ({100*best[0]:.2f}%)")
    report(errors(args.aegis, args.data, best[1], TRACES, real))


if __name__ == "__main__":
    main()
