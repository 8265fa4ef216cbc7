#!/usr/bin/python3
"""fit_estimator.py -- fit aegis's learned memory correction and check it.

The physical model is written once, in C (src/estimate/physical.c): this
script sends every model description through `aegis estimate --json -` and
fits, on the groups of components it returns, a linear model

    predicted_mib = intercept[stack] + sum_g coef_g * group_g

that minimises the squared relative error, with every coefficient kept
non-negative (a negative weight on memory would be unphysical). The data:

  * the 6,000 synthetic MLP runs of GPUMemNet (data/gpumemnet/
    mlp_data_step*.csv), turned into descriptions here. The data does not
    record optimizer or precision; GPUMemNet's data README and DESIGN.md do
    not say either, so adam and fp32 are assumed;
  * the catalog workloads in FIT_WORKLOADS (26 of the 53, a fixed split:
    the catalog sorted by measured peak, alternate entries, with a
    workload's 20- and 50-epoch variants kept on the same side), from their
    descriptions data/models/<workload>.json.

The two sets were measured on different software stacks (GPUMemNet's
smallest run takes 1,443 MiB, AEGIS's smallest whole job 592 MiB: CUDA
context and fixed costs differ), so each gets its own intercept while the
multipliers are shared. The two sets carry equal total weight, so the few catalog workloads count
as much as the many MLPs. The safety margin is the MARGIN_QUANTILE quantile
of log(actual / predicted) over held-out predictions (5-fold CV on the MLP
runs, leave-one-out on the fitted catalog workloads), the larger of the two.

Modes:
  fit_estimator.py [--write FILE]   fit, print the CV figures, write the C
                                    table (default src/estimate/learned_params.c)
  fit_estimator.py --eval           the held-out table: catalog workloads not
                                    in the fit plus the buildable rows of
                                    real_models.csv
  fit_estimator.py --check          exit 1 unless the shipped table is what
                                    the fit produces and the held-out goals
                                    hold (the CTest test estimate_fit)
numpy only; run with /usr/bin/python3.
"""

import argparse
import ast
import csv
import json
import math
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The fixed split: these catalog workloads may be fitted, the rest are held
# out for evaluation (see the module docstring for how it was drawn).
FIT_WORKLOADS = [
    "mobilenet_cifar100_bs32_20e_1gpu", "mobilenet_cifar100_bs32_50e_1gpu",
    "mobilenet_cifar100_bs128_20e_1gpu", "mobilenet_cifar100_bs128_50e_1gpu",
    "efficientnet_cifar100_bs64_20e_1gpu", "efficientnet_cifar100_bs64_50e_1gpu",
    "resnet18_cifar100_bs64_20e_1gpu", "resnet18_cifar100_bs64_50e_1gpu",
    "efficientnet_cifar100_bs128_20e_1gpu",
    "efficientnet_cifar100_bs128_50e_1gpu",
    "resnet34_cifar100_bs64_20e_1gpu", "resnet34_cifar100_bs64_50e_1gpu",
    "mnist_bs32_1gpu", "mobilenet_imagenet_bs32_1gpu",
    "resnet50_imagenet_bs32_1gpu", "unet_voc_1gpu",
    "mobilenet_imagenet_bs64_1gpu", "efficientnet_imagenet_bs64_1gpu",
    "xlnet_base_cased_wiki_bs8_2gpu", "xception_imagenet_bs64_1gpu",
    "vgg16_imagenet_bs64_1gpu", "efficientnet_imagenet_bs128_1gpu",
    "xlnet_large_cased_wiki_bs4_2gpu", "bert_base_wiki_bs32_1gpu",
    "vgg16_imagenet_bs128_1gpu", "llama3_width_8layer_wiki_bs1_1gpu",
]
assert len(FIT_WORKLOADS) <= 26

GROUPS = ["state", "act_matmul", "act_elementwise", "act_input", "act_scores",
          "workspace", "conv_workspace"]
STACKS = ["aegis", "gpumemnet"]      # the order of est_stack
AEGIS, GPUMEMNET = 0, 1
MARGIN_QUANTILE = 0.95
FOLDS = 5
SEED = 20261129

# Held-out goals (issue 4): no underestimate, median estimate/actual <= 1.25.
# The shipped fit meets both (0 of 43 under, median 1.15; README); --check
# fails on any underestimate or a median ratio above 1.20, so that a change
# that loses either shows.
GOAL_MAX_UNDER = 0
GOAL_MEDIAN_RATIO = 1.25
CHECK_MAX_UNDER = 0
CHECK_MEDIAN_RATIO = 1.20

# GPUMemNet's layer names -> torch.nn class names (desc_format.md).
MLP_TYPES = {"linear": "Linear", "batch_normalization": "BatchNorm1d",
             "dropout": "Dropout"}


def die(msg, status=2):
    sys.stderr.write("fit_estimator.py: %s\n" % msg)
    sys.exit(status)


# ---- descriptions ---------------------------------------------------------

def mlp_descriptions(data):
    """(description, measured MiB) for every GPUMemNet MLP run."""
    out = []
    for step in (1, 2):
        path = os.path.join(data, "gpumemnet", "mlp_data_step%d.csv" % step)
        with open(path, newline="") as f:
            for n, row in enumerate(csv.DictReader(f), start=2):
                m = re.search(r"input:(\d+)", row["Filename"])
                if not m:
                    die("%s:%d: Filename: no input:N" % (path, n))
                layers = []
                for kind, acts, params in ast.literal_eval(
                        row["Activations-Params"]):
                    layer = {"type": MLP_TYPES.get(kind, kind),
                             "activations": int(acts), "params": int(params)}
                    if kind == "batch_normalization":
                        # running mean and variance, one each per feature
                        layer["buffers"] = int(params)
                    layers.append(layer)
                desc = {"format": "aegis-model/1", "model": row["Filename"],
                        "batch_size": int(row["Batch Size"]),
                        "optimizer": "adam", "precision": "fp32",
                        "input_elements": int(m.group(1)), "layers": layers}
                out.append((desc, float(row["Max GPU Memory (MiB)"])))
    return out


def read_catalog(path):
    with open(path, newline="") as f:
        return {r["name"]: r for r in csv.DictReader(
            line for line in f if not line.startswith("#"))}


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def catalog_descriptions(models, catalog, names):
    """(name, description, actual MiB) for the catalog workloads in names
    that have a description file."""
    out = []
    for name in names:
        path = os.path.join(models, name + ".json")
        if os.path.exists(path):
            with open(path) as f:
                out.append((name, json.load(f),
                            float(catalog[name]["peak_memory_mib"])))
    return out


def real_rows(data, models):
    """The rows of real_models.csv with a description in models/real:
    (label, description, actual, gpumemnet, faketensor, horus)."""
    real_dir = os.path.join(models, "real")
    files = {f.lower(): f for f in os.listdir(real_dir)} if os.path.isdir(
        real_dir) else {}
    out, model = [], None
    with open(os.path.join(data, "gpumemnet", "real_models.csv"),
              newline="") as f:
        reader = csv.reader(f)
        next(reader)
        for row in reader:
            model = row[0].strip() or model
            label = "%s_bs%s" % (model, row[1].strip())
            file = files.get(label.lower() + ".json")
            if not file:
                continue
            with open(os.path.join(real_dir, file)) as jf:
                desc = json.load(jf)
            out.append((label, desc, float(row[2]), number(row[3]),
                        number(row[4]), number(row[5])))
    return out


# ---- the C physical model -------------------------------------------------

def run_estimate(aegis, descs, stack="aegis"):
    """aegis's JSON result for each description (JSON lines on stdin)."""
    text = "".join(json.dumps(d) + "\n" for d in descs)
    run = subprocess.run([aegis, "estimate", "--json", "--stack", stack, "-"],
                         input=text, capture_output=True, text=True)
    if run.returncode != 0:
        die("aegis estimate failed: %s" % run.stderr.strip(), 1)
    return [json.loads(line)["estimates"]["aegis"]
            for line in run.stdout.splitlines()]


def physical_groups(aegis, descs, stack):
    """Design rows: the stack's indicator, then the correction's groups
    (MiB) of each description, from the C code."""
    rows = [[float(stack == s) for s in range(len(STACKS))] +
            [r["components"]["groups_mib"][g] for g in GROUPS]
            for r in run_estimate(aegis, descs)]
    return np.array(rows).reshape(len(descs), len(STACKS) + len(GROUPS))


# ---- the fit --------------------------------------------------------------

def fit(design, y, w):
    """Non-negative weighted least squares of relative error: minimises
    sum w * ((design.b - y) / y)^2. Columns whose coefficient comes out
    negative are dropped and the rest refitted; a stack absent from the
    data keeps intercept 0."""
    active = list(range(design.shape[1]))
    scale = np.sqrt(w) / y
    while True:
        a = design[:, active] * scale[:, None]
        sol, *_ = np.linalg.lstsq(a, y * scale, rcond=None)
        if (sol >= 0).all():
            break
        active.pop(int(np.argmin(sol)))
    coef = np.zeros(design.shape[1])
    coef[active] = sol
    return coef


def predict(coef, design):
    return design @ coef


def weights(n_mlp, n_cat):
    """Equal total weight for the MLP runs and the catalog workloads."""
    w_cat = n_mlp / n_cat if n_cat else 0.0
    return np.concatenate([np.ones(n_mlp), np.full(n_cat, w_cat)])


def cross_validate(x_mlp, y_mlp, x_cat, y_cat):
    """Held-out predictions: 5-fold on the MLP runs (each fold's fit also
    sees every catalog workload) and leave-one-out on the catalog ones."""
    rng = np.random.RandomState(SEED)
    fold = rng.permutation(len(y_mlp)) % FOLDS
    pred_mlp = np.zeros(len(y_mlp))
    for k in range(FOLDS):
        tr = fold != k
        coef = fit(np.vstack([x_mlp[tr], x_cat]),
                   np.concatenate([y_mlp[tr], y_cat]),
                   weights(int(tr.sum()), len(y_cat)))
        pred_mlp[~tr] = predict(coef, x_mlp[~tr])
    pred_cat = np.zeros(len(y_cat))
    for i in range(len(y_cat)):
        keep = np.arange(len(y_cat)) != i
        coef = fit(np.vstack([x_mlp, x_cat[keep]]),
                   np.concatenate([y_mlp, y_cat[keep]]),
                   weights(len(y_mlp), int(keep.sum())))
        pred_cat[i] = predict(coef, x_cat[i:i + 1])[0]
    return pred_mlp, pred_cat


def margin_log(y_mlp, pred_mlp, y_cat, pred_cat):
    q = [np.quantile(np.log(y_mlp / pred_mlp), MARGIN_QUANTILE)]
    if len(y_cat):
        q.append(np.quantile(np.log(y_cat / pred_cat), MARGIN_QUANTILE))
    return max(0.0, max(q))


def table_source(coef, margin, n_mlp, cat_names):
    lines = [
        "/* learned_params.c -- generated by tools/fit_estimator.py; do not "
        "edit.",
        " * Fitted on %d GPUMemNet MLP runs and %d catalog workloads:" % (
            n_mlp, len(cat_names))]
    lines += [" *   %s" % n for n in cat_names]
    ni = len(STACKS)
    lines += [
        " * Margin: the %.2f quantile of held-out log(actual/predicted). */"
        % MARGIN_QUANTILE,
        '#include "estimate.h"',
        "",
        "const est_learned est_learned_shipped = {",
        "    .intercept_mib = {%s}," % ", ".join("%.6g" % c for c in coef[:ni]),
        "    .coef = {%s}," % ", ".join("%.6g" % c for c in coef[ni:]),
        "    .margin_log = %.6g," % margin,
        "    .margin_quantile = %.2f," % MARGIN_QUANTILE,
        "};",
        ""]
    return "\n".join(lines)


# ---- figures --------------------------------------------------------------

def mlp_figures(y, pred, margin):
    """GPUMemNet's 1 GB-bin accuracy, the median absolute % error and the
    underestimate rates of the prediction and of the estimate (+margin)."""
    est = pred * math.exp(margin)
    return {
        "bin_accuracy": float(np.mean(np.floor(pred / 1024) ==
                                      np.floor(y / 1024))),
        "median_abs_pct_error": float(np.median(np.abs(pred - y) / y) * 100),
        "under_rate_predicted": float(np.mean(pred < y)),
        "under_rate_estimate": float(np.mean(est < y)),
        "median_ratio_estimate": float(np.median(est / y)),
    }


def fit_all(args):
    catalog = read_catalog(args.catalog)
    mlp = mlp_descriptions(args.data)
    cat = catalog_descriptions(args.models, catalog, FIT_WORKLOADS)
    x_mlp = physical_groups(args.aegis, [d for d, _ in mlp], GPUMEMNET)
    y_mlp = np.array([a for _, a in mlp])
    x_cat = physical_groups(args.aegis, [d for _, d, _ in cat], AEGIS)
    y_cat = np.array([a for _, _, a in cat])
    coef = fit(np.vstack([x_mlp, x_cat]), np.concatenate([y_mlp, y_cat]),
               weights(len(y_mlp), len(y_cat)))
    pred_mlp, pred_cat = cross_validate(x_mlp, y_mlp, x_cat, y_cat)
    margin = margin_log(y_mlp, pred_mlp, y_cat, pred_cat)
    return {"coef": coef, "margin": margin, "n_mlp": len(mlp),
            "cat_names": [n for n, _, _ in cat],
            "mlp": mlp_figures(y_mlp, pred_mlp, margin),
            "cat_loo": [(n, a, p * math.exp(margin))
                        for (n, _, a), p in zip(cat, pred_cat)]}


def print_fit(res):
    c, ni = res["coef"], len(STACKS)
    print("fit: intercepts %s; %s; margin x%.3f (q%.2f)" % (
        ", ".join("%s %.1f MiB" % (s, v) for s, v in zip(STACKS, c[:ni])),
        ", ".join("%s x%.3f" % (g, v) for g, v in zip(GROUPS, c[ni:])),
        math.exp(res["margin"]), MARGIN_QUANTILE))
    m = res["mlp"]
    print("MLP %d-fold CV (%d runs): 1 GB-bin accuracy %.1f%% (GPUMemNet "
          "97.6%%), median |error| %.2f%%, underestimates %.2f%% predicted / "
          "%.2f%% with margin, median estimate/actual %.3f" % (
              FOLDS, res["n_mlp"], 100 * m["bin_accuracy"],
              m["median_abs_pct_error"], 100 * m["under_rate_predicted"],
              100 * m["under_rate_estimate"], m["median_ratio_estimate"]))
    loo = res["cat_loo"]
    # the spread of the held-out prediction itself, before the margin
    err = [math.log(a / e) + res["margin"] for _, a, e in loo]
    print("catalog fit set, leave-one-out (%d): %d underestimates, median "
          "|log(actual/predicted)| %.3f, rms %.3f" % (
              len(loo), sum(e < a for _, a, e in loo),
              float(np.median(np.abs(err))),
              math.sqrt(sum(x * x for x in err) / len(err))))


# ---- the held-out evaluation ----------------------------------------------

def evaluation_rows(args):
    """(workload, actual, aegis, gpumemnet, faketensor, horus) for every
    held-out catalog workload with a description and every buildable
    real_models.csv row. The real models were measured by GPUMemNet, so
    they are estimated for its stack."""
    catalog = read_catalog(args.catalog)
    held = [n for n in catalog if n not in FIT_WORKLOADS]
    out = []
    for name, desc, actual in catalog_descriptions(args.models, catalog, held):
        r = catalog[name]
        est = run_estimate(args.aegis, [desc])[0]["estimate_mib"]
        out.append((name, actual, est, number(r["gpumemnet_mib"]),
                    number(r["faketensor_mib"]), number(r["horus_mib"])))
    for label, desc, actual, gmn, ft, horus in real_rows(args.data,
                                                         args.models):
        est = run_estimate(args.aegis, [desc], "gpumemnet")[0]["estimate_mib"]
        out.append(("real:" + label, actual, est, gmn, ft, horus))
    return out


def ratio_summary(rows, col):
    ratios = [r[col] / r[1] for r in rows if r[col] is not None]
    if not ratios:
        return None, 0, 0
    return (float(np.median(ratios)), sum(x < 1 for x in ratios), len(ratios))


def print_eval(rows):
    fmt = lambda v: "-" if v is None else "%.0f" % v
    print("| workload | actual MiB | aegis | GPUMemNet | FakeTensor | Horus |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| %s | %s | %s (%.2f) | %s | %s | %s |" % (
            r[0], fmt(r[1]), fmt(r[2]), r[2] / r[1], fmt(r[3]), fmt(r[4]),
            fmt(r[5])))
    for col, name in ((2, "aegis"), (3, "GPUMemNet"), (4, "FakeTensor"),
                      (5, "Horus")):
        med, under, n = ratio_summary(rows, col)
        if med is not None:
            print("%-10s median estimate/actual %.2f, underestimates %d of %d"
                  % (name, med, under, n))
    med, under, n = ratio_summary(rows, 2)
    if n:
        print("goals (no underestimate, median <= %.2f): %s" % (
            GOAL_MEDIAN_RATIO, "met" if under <= GOAL_MAX_UNDER and
            med <= GOAL_MEDIAN_RATIO else "not met"))


def main():
    p = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="With no mode it fits, prints the cross-validation figures "
               "and writes the C table.")
    p.add_argument("--aegis", metavar="AEGIS",
                   default=os.path.join(ROOT, "build", "src", "cli", "aegis"),
                   help="the built aegis binary (default: build/src/cli/aegis)")
    p.add_argument("--data", metavar="DIR",
                   default=os.path.join(ROOT, "data"),
                   help="the measurement data (default: data)")
    p.add_argument("--models", metavar="DIR",
                   default=os.path.join(ROOT, "data", "models"),
                   help="the model descriptions (default: data/models)")
    p.add_argument("--catalog", metavar="CSV",
                   default=os.path.join(ROOT, "data", "catalog.csv"),
                   help="the workload catalog (default: data/catalog.csv)")
    p.add_argument("--write", metavar="FILE",
                   default=os.path.join(ROOT, "src", "estimate",
                                        "learned_params.c"),
                   help="where the fit writes the C table "
                        "(default: src/estimate/learned_params.c)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--eval", action="store_true",
                      help="print the held-out table instead of fitting")
    mode.add_argument("--check", action="store_true",
                      help="exit 1 unless the shipped table is the fit's and "
                           "the held-out figures have not regressed")
    args = p.parse_args()
    if not os.path.exists(os.path.join(args.data, "gpumemnet")):
        p.error("no %s/gpumemnet (data/README.md says what it holds)"
                % args.data)
    if args.eval:
        print_eval(evaluation_rows(args))
        return
    res = fit_all(args)
    print_fit(res)
    source = table_source(res["coef"], res["margin"], res["n_mlp"],
                          res["cat_names"])
    if not args.check:
        with open(args.write, "w") as f:
            f.write(source)
        print("wrote %s" % args.write)
        return
    failures = []
    with open(args.write) as f:
        if f.read() != source:
            failures.append("%s is not what the fit produces (rerun "
                            "tools/fit_estimator.py)" % args.write)
    rows = evaluation_rows(args)
    print_eval(rows)
    med, under, n = ratio_summary(rows, 2)
    if n and under > CHECK_MAX_UNDER:
        failures.append("%d held-out underestimates (shipped fit: %d)" % (
            under, CHECK_MAX_UNDER))
    if n and med > CHECK_MEDIAN_RATIO:
        failures.append("held-out median ratio %.2f above %.2f" % (
            med, CHECK_MEDIAN_RATIO))
    for msg in failures:
        sys.stderr.write("FAIL: %s\n" % msg)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
