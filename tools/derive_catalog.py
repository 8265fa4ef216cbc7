#!/usr/bin/env python3
"""derive_catalog.py -- write data/catalog.csv, the simulator's default catalog.

The simulator needs only a dozen columns of the 33 in the measurement file
data/workloads.csv, so the project carries this narrow copy, which is also
what `make install` ships. Usage:

    tools/derive_catalog.py data/workloads.csv [--aegis AEGIS] \
        > data/catalog.csv

With --aegis (the built `aegis` binary) the column aegis_mib holds aegis's
own memory estimate (`aegis estimate`) of each workload that has a model
description data/models/<name>.json; it is empty for the others.
"""
import csv
import json
import os
import subprocess
import sys

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                      "data", "models")

COLUMNS = [
    "name", "num_gpus", "solo_duration_s", "peak_memory_mib",
    "peak_memory_full_run_gpu_b_mib", "avg_smact", "avg_smocc", "avg_drama",
    "horus_gpu_util_mean_pct", "horus_mib", "faketensor_mib", "gpumemnet_mib",
    "lucid_ss", "aegis_mib",
]

HEADER = """\
# aegis default workload catalog: 53 training workloads measured on A100-40GB.
# Source: AEGIS repository github.com/ehsanyousefzadehasl/AEGIS (profiles,
# estimator-error and Lucid tables), as collected in data/workloads.csv;
# see data/README.md for the meaning and origin of every column.
# Derived by tools/derive_catalog.py; do not edit by hand. Empty cell = unknown.
"""


def aegis_estimates(aegis, names):
    """name -> aegis's estimate (MiB) for the names with a description."""
    files = [(n, os.path.join(MODELS, n + ".json")) for n in names]
    files = [(n, p) for n, p in files if os.path.exists(p)]
    if not files:
        return {}
    run = subprocess.run([aegis, "estimate", "--json"] + [p for _, p in files],
                         capture_output=True, text=True, check=True)
    return {n: "%.0f" % json.loads(line)["estimates"]["aegis"]["estimate_mib"]
            for (n, _), line in zip(files, run.stdout.splitlines())}


def main(argv):
    aegis = None
    if len(argv) == 4 and argv[2] == "--aegis":
        aegis = argv[3]
    elif len(argv) != 2:
        sys.stderr.write("usage: derive_catalog.py WORKLOADS_CSV [--aegis AEGIS]"
                         " > catalog.csv\n")
        return 2
    with open(argv[1], newline="") as f:
        rows = list(csv.DictReader(f))
    estimates = aegis_estimates(aegis, [r["name"] for r in rows]) if aegis else {}
    for row in rows:
        row["aegis_mib"] = estimates.get(row["name"], "")
    out = csv.writer(sys.stdout, lineterminator="\n")
    sys.stdout.write(HEADER)
    out.writerow(COLUMNS)
    for row in rows:
        out.writerow([row[c] for c in COLUMNS])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
