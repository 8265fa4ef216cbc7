#!/usr/bin/env python3
"""derive_catalog.py -- write data/catalog.csv, the simulator's default catalog.

The simulator needs only a dozen columns of the 33 in the shared measurement
file, so the project carries this narrow copy and can run on a machine
without ../shared. Usage:

    tools/derive_catalog.py ../shared/data/workloads.csv > data/catalog.csv
"""
import csv
import sys

COLUMNS = [
    "name", "num_gpus", "solo_duration_s", "peak_memory_mib",
    "peak_memory_full_run_gpu_b_mib", "avg_smact", "avg_smocc", "avg_drama",
    "horus_gpu_util_mean_pct", "horus_mib", "faketensor_mib", "gpumemnet_mib",
    "lucid_ss",
]

HEADER = """\
# aegis default workload catalog: 53 training workloads measured on A100-40GB.
# Source: AEGIS repository github.com/ehsanyousefzadehasl/AEGIS (profiles,
# estimator-error and Lucid tables), as collected in ../shared/data/workloads.csv;
# see that folder's README.md for the meaning and origin of every column.
# Derived by tools/derive_catalog.py; do not edit by hand. Empty cell = unknown.
"""


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: derive_catalog.py WORKLOADS_CSV > catalog.csv\n")
        return 2
    with open(argv[1], newline="") as f:
        rows = list(csv.DictReader(f))
    out = csv.writer(sys.stdout, lineterminator="\n")
    sys.stdout.write(HEADER)
    out.writerow(COLUMNS)
    for row in rows:
        out.writerow([row[c] for c in COLUMNS])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
