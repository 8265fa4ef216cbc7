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

After the measured rows come derived ones: 4- and 8-GPU data-parallel
runs of a few 1-GPU workloads (wide_rows(); docs/model.md, "Data-parallel
rows", gives the derivation). Their derived_from names the 1-GPU row.
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
    "lucid_ss", "aegis_mib", "derived_from",
]

# 1-GPU workloads that also get 4- and 8-GPU data-parallel rows: the
# ImageNet CNNs and BERT, which are what people train on several GPUs.
WIDE_BASES = ["resnet50_imagenet_bs128_1gpu", "vgg16_imagenet_bs128_1gpu",
              "inception_imagenet_bs128_1gpu", "bert_base_wiki_bs32_1gpu"]
# Scaling efficiency of PyTorch DDP on one NVLink server, assumed (not
# measured here): the share of a GPU's time that is still training.
WIDE_EFFICIENCY = {4: 0.90, 8: 0.85}
# NCCL's communication buffers on each GPU, assumed: a few MiB per
# channel, peer and protocol.
NCCL_MIB = 512
# Bytes of one fp32 gradient, which DDP's buckets copy.
GRAD_BYTES = 4
ACTIVITY = ["avg_smact", "avg_smocc", "avg_drama", "horus_gpu_util_mean_pct"]
ESTIMATES = ["horus_mib", "faketensor_mib", "gpumemnet_mib", "aegis_mib"]

HEADER = """\
# aegis default workload catalog: 53 training workloads measured on A100-40GB,
# then 8 data-parallel ones derived from them (derived_from; docs/model.md).
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


def model_params(name):
    """The parameters of a workload's model, from its description."""
    with open(os.path.join(MODELS, name + ".json")) as f:
        return sum(layer.get("params", 0) for layer in json.load(f)["layers"])


def scaled(text, factor, offset=0.0):
    """A catalog cell times factor plus offset; empty stays empty."""
    return "" if text == "" else "%.6g" % (float(text) * factor + offset)


def wide_row(base, gpus):
    """base run data-parallel on `gpus` GPUs, same batch per GPU and the
    same epochs: each GPU trains 1/gpus of the samples."""
    eff = WIDE_EFFICIENCY[gpus]
    extra = model_params(base["name"]) * GRAD_BYTES / 2**20 + NCCL_MIB
    loop = float(base["training_loop_time_s"])
    row = dict(base, name=base["name"][:-len("1gpu")] + "%dgpu" % gpus,
               num_gpus=str(gpus), peak_memory_full_run_gpu_b_mib="",
               derived_from=base["name"])
    row["solo_duration_s"] = "%.2f" % (float(base["solo_duration_s"]) - loop
                                       + loop / (gpus * eff))
    row["peak_memory_mib"] = "%.0f" % (float(base["peak_memory_mib"]) + extra)
    for col in ACTIVITY:
        row[col] = scaled(base[col], eff)
    for col in ESTIMATES:
        row[col] = scaled(base[col], 1, extra)
    return row


def wide_rows(rows):
    by_name = {r["name"]: r for r in rows}
    return [wide_row(by_name[b], g) for b in WIDE_BASES for g in (4, 8)]


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
        row["derived_from"] = ""
    rows += wide_rows(rows)
    out = csv.writer(sys.stdout, lineterminator="\n")
    sys.stdout.write(HEADER)
    out.writerow(COLUMNS)
    for row in rows:
        out.writerow([row[c] for c in COLUMNS])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
