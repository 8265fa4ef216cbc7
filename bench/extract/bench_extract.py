#!/usr/bin/python3
"""bench_extract.py -- how long the model-description extractor takes.

For a handful of catalog models, in one run: the extractor's time per model
(aegis_describe.describe_builder, meta-device pass, build included) against
two references measured in the same run on the same machine:
  build      constructing the model on CPU the ordinary way (real weights,
             default initialisation): what any other use of the model costs
             before its first step
  cpu pass   the extractor's CPU fallback (real weights, batch-1 forward)
Each figure is the median of --repeat runs, except the CPU pass, timed once:
it is orders of magnitude slower (a minute for BERT at 512 tokens on one
thread), so its noise does not matter. Models above the extractor's CPU
fallback limit (GPT-2 XL, Llama-3 width) are timed on meta only: building
them on CPU would take 6-11 GB of RAM.

  /usr/bin/python3 bench/extract/bench_extract.py [--repeat 3] [--models ...]
  (cmake target bench-extract runs it)
"""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

DEFAULT_MODELS = ["resnet50", "vgg16", "inception_v3", "efficientnet_b0",
                  "xception", "unet_resnet34", "bert_base", "xlnet_base",
                  "gpt2_xl", "llama3_width_8layer"]


def median_seconds(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per timing, of which the median is kept "
                             "(the CPU pass runs once; default: %(default)s)")
    parser.add_argument("--models", nargs="+", default=DEFAULT_MODELS,
                        metavar="NAME",
                        help="catalog models to time (python/aegis_models.py"
                             " names; default: %(default)s)")
    args = parser.parse_args()
    # Imported after the arguments: loading torch takes seconds, and --help
    # needs none of it.
    import torch
    import aegis_describe
    import aegis_models
    torch.set_num_threads(1)  # the build machine's cores are shared
    print("%-20s %14s %7s %10s %10s %10s %9s %9s" % (
        "model", "params", "layers", "meta_ms", "build_ms", "cpu_ms",
        "build/meta", "cpu/meta"))
    ratios_build, ratios_cpu = [], []
    for name in args.models:
        spec = aegis_models.lookup(name)
        meta = median_seconds(lambda: aegis_describe.describe_builder(
            name, 1, device="meta"), args.repeat)
        desc = aegis_describe.describe_builder(name, 1, device="meta")
        params = sum(layer["params"] for layer in desc["layers"])
        build = cpu = None
        if params <= aegis_describe.CPU_FALLBACK_MAX_ELEMENTS:
            build = median_seconds(spec.build, args.repeat)
            cpu = median_seconds(lambda: aegis_describe.describe_builder(
                name, 1, device="cpu"), 1)
            ratios_build.append(build / meta)
            ratios_cpu.append(cpu / meta)

        def cell(value, scale=1000.0, fmt="%10.1f"):
            return fmt % (value * scale) if value is not None else \
                "%10s" % "-"
        print("%-20s %14d %7d %s %s %s %9s %9s" % (
            name, params, len(desc["layers"]), cell(meta), cell(build),
            cell(cpu),
            "%.1fx" % (build / meta) if build else "-",
            "%.1fx" % (cpu / meta) if cpu else "-"), flush=True)
    if ratios_build:
        print("geometric mean: extractor is %.1fx faster than building the "
              "model on CPU, %.1fx faster than its own CPU pass"
              % (statistics.geometric_mean(ratios_build),
                 statistics.geometric_mean(ratios_cpu)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
