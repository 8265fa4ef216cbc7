#!/usr/bin/env python3
"""fit_production.py -- fit `aegis gen-trace --profile production` to a trace.

Reads the GPU pods of Alibaba's cluster-trace-gpu-v2023 as shipped in
data/traces/alibaba/openb_gpu_pods.csv and writes the C header that holds
the fitted parameters (src/sim/prod_fit.h):

    tools/fit_production.py data/traces/alibaba/openb_gpu_pods.csv \
        > src/sim/prod_fit.h

The test `prod_fit_current` runs it and compares, so the header cannot
drift from the data. docs/simulator.md ("Production-shaped traces") says
what is fitted and why these distributions; in short:

- gaps between arrivals: Weibull, maximum likelihood;
- GPUs per job: the observed frequencies of 1, 2, 4 and 8;
- GPU share of a 1-GPU job (gpu_milli): the observed frequencies;
- run time (deletion - scheduled), for 1-GPU jobs and for wider ones
  apart: a log-normal body (maximum likelihood on the runs of up to a
  day) and, with the share of runs longer than a day, a Pareto tail
  above a day (maximum likelihood), cut at the longest run seen.
"""
import csv
import math
import sys

# Before this creation time (day 115) the trace holds 25 pods in 114 days,
# services that run for the whole trace; the 35 days after it hold the
# other 6,178. Only those describe the arrival process.
DENSE_FROM_S = 115 * 86400
# Creation times are whole seconds: a gap of 0 is one under a second.
MIN_GAP_S = 0.5
MIN_RUN_S = 1.0
# Runs longer than this are the tail: 0.9% of 1-GPU runs, 63% of the
# 1-GPU GPU-time; one log-normal through all runs gives half the GPU-time.
LONG_RUN_S = 86400


def read_pods(path):
    with open(path, newline="") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        pods = [r for r in rows if int(r["creation_time"]) >= DENSE_FROM_S]
    pods.sort(key=lambda r: int(r["creation_time"]))
    return pods


def weibull_mle(xs):
    """(shape, scale) maximizing the likelihood, by bisection on the shape."""
    logs = [math.log(x) for x in xs]
    mean_log = sum(logs) / len(xs)

    def score(k):
        pw = [x ** k for x in xs]
        return sum(p * l for p, l in zip(pw, logs)) / sum(pw) - 1 / k - mean_log

    lo, hi = 0.01, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if score(mid) > 0 else (mid, hi)
    k = (lo + hi) / 2
    return k, (sum(x ** k for x in xs) / len(xs)) ** (1 / k)


def lognormal_mle(xs):
    logs = [math.log(x) for x in xs]
    mu = sum(logs) / len(logs)
    return mu, math.sqrt(sum((l - mu) ** 2 for l in logs) / len(logs))


def run_fit(runs):
    """(share of long runs, body mu, body sigma, tail alpha)."""
    body = [r for r in runs if r <= LONG_RUN_S]
    tail = [math.log(r / LONG_RUN_S) for r in runs if r > LONG_RUN_S]
    mu, sigma = lognormal_mle(body)
    alpha = len(tail) / sum(tail) if tail else 1.0
    return len(tail) / len(runs), mu, sigma, alpha


def run_s(pod):
    return max(int(pod["deletion_time"]) - int(pod["scheduled_time"]),
               MIN_RUN_S)


def header(path, pods):
    created = [int(p["creation_time"]) for p in pods]
    gaps = [max(b - a, MIN_GAP_S) for a, b in zip(created, created[1:])]
    shape, scale = weibull_mle(gaps)
    narrow = [run_s(p) for p in pods if p["num_gpu"] == "1"]
    wide = [run_s(p) for p in pods if p["num_gpu"] != "1"]
    counts = {g: sum(p["num_gpu"] == str(g) for p in pods) for g in (1, 2, 4, 8)}
    shares = {}
    for p in pods:
        if p["num_gpu"] == "1":
            shares[int(p["gpu_milli"])] = shares.get(int(p["gpu_milli"]), 0) + 1
    out = [
        "/* prod_fit.h -- the fitted parameters of gen-trace's production",
        " * profile. Written by tools/fit_production.py from",
        " * %s" % path,
        " * (%d pods created from day %d on); do not edit by hand. */"
        % (len(pods), DENSE_FROM_S // 86400),
        "#ifndef AEGIS_PROD_FIT_H", "#define AEGIS_PROD_FIT_H", "",
        "/* gaps between arrivals: Weibull (shape, scale in s) */",
        "#define PROD_GAP_SHAPE %.6f" % shape,
        "#define PROD_GAP_SCALE_S %.3f" % scale,
        "/* run time of 1-GPU and of wider jobs: {share longer than",
        " * PROD_LONG_S, mean and deviation of ln(seconds) of the others,",
        " * Pareto alpha of the longer ones} */",
        "#define PROD_LONG_S %d.0" % LONG_RUN_S,
        "#define PROD_RUN1 { %.6f, %.6f, %.6f, %.6f }" % run_fit(narrow),
        "#define PROD_RUNW { %.6f, %.6f, %.6f, %.6f }" % run_fit(wide),
        "/* the longest run seen: the draws are cut there */",
        "#define PROD_RUN_MAX_S %d.0" % max(narrow + wide), "",
        "/* jobs seen of each width: {gpus, count} */",
        "#define PROD_WIDTHS { %s }" % ", ".join(
            "{%d, %d}" % (g, n) for g, n in counts.items() if n),
        "/* 1-GPU jobs seen of each GPU share: {thousandths, count} */",
        "#define PROD_SHARES { %s }" % ", ".join(
            "{%d, %d}" % kv for kv in sorted(shares.items())),
        "", "#endif",
    ]
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: fit_production.py PODS_CSV > prod_fit.h\n")
        return 2
    pods = read_pods(argv[1])
    if len(pods) < 2:
        sys.stderr.write("%s: fewer than 2 pods after day %d\n"
                         % (argv[1], DENSE_FROM_S // 86400))
        return 1
    sys.stdout.write(header(argv[1], pods))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
