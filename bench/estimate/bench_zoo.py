#!/usr/bin/python3
"""bench_zoo.py -- the extractor on every model of the zoo, as a table.

For each torchvision model (classification, segmentation, detection, video,
optical flow; quantized ones left out) and each hand-written kind of
python/aegis_zoo.py: the trainable parameters the description counts
against model.parameters(), and the activation bytes per sample it says
autograd keeps against what autograd keeps in a CPU forward pass of one
sample (saved_tensors_hooks), their ratio, whether the model passes
(parameters exact, ratio within 0.8-1.25), the seconds the extractor and
the measurement took, and the description's warnings. Inputs are small
where the model allows it (aegis_zoo.py says which), batch 1, one thread.

  /usr/bin/python3 bench/estimate/bench_zoo.py [--models NAME...] [--json]
  (cmake --build build --target bench-estimate-zoo runs it; about 40
  minutes on one core, most of it the CPU measurement of the largest ViTs
  and RegNets and of the detection models)
Exit status 1 if any model fails.
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))


def print_row(row):
    mib = 1024.0 * 1024.0
    note = "; ".join(w.split(":")[0][:60] for w in row["warnings"])
    print("| %s | %s | %d | %s | %.2f | %.2f | %.3f | %s | %.1f | %.1f | %s |"
          % (row["model"], row["kind"], row["params"],
             "=" if row["params"] == row["real_params"]
             else "%d" % row["real_params"],
             row["act_bytes"] / mib, row["autograd_bytes"] / mib,
             row["ratio"], "ok" if row["ok"] else "FAIL",
             row["describe_s"], row["autograd_s"], note or "-"), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", metavar="NAME",
                        help="only these zoo entries (default: all)")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object per model instead of a table")
    args = parser.parse_args()
    # Imported after the arguments: loading torch takes seconds, and --help
    # needs none of it.
    import torch
    import aegis_zoo
    torch.set_num_threads(1)  # the build machine's cores are shared
    items = ([aegis_zoo.entry(n) for n in args.models] if args.models
             else aegis_zoo.zoo())
    if not args.json:
        print("| model | kind | params | model.parameters() | described "
              "MiB/sample | autograd MiB/sample | ratio | | describe s | "
              "autograd s | warnings |")
        print("|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|")
    failed = []
    for item in items:
        try:
            row = aegis_zoo.check(item)
        except Exception as err:  # a model that cannot run: a failure
            row = {"model": item.name, "kind": item.kind, "params": 0,
                   "real_params": -1, "act_bytes": 0, "autograd_bytes": 0,
                   "ratio": 0.0, "warnings": ["error: %s" % err],
                   "describe_s": 0.0, "autograd_s": 0.0, "ok": False}
        if not row["ok"]:
            failed.append(item.name)
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print_row(row)
    print("%d models, %d fail%s" % (len(items), len(failed),
                                     ": " + ", ".join(failed) if failed
                                     else ""), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
