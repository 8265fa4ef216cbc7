#!/usr/bin/python3
"""Write the model descriptions (aegis-model/1 JSON) of the catalog's jobs.

data/models/<workload>.json for every measured workload of data/catalog.csv
whose model can be built here (a row derived from another, derived_from, runs
that row's model on more GPUs and has its description), and data/models/real/<model>_bs<B>.json for the rows of
GPUMemNet's real_models.csv. A workload name encodes the model, the data set
(which fixes the input: CIFAR-100 3x32x32, ImageNet 3x224x224 or 3x299x299 for
Inception, VOC 3x512x512, MNIST 1x28x28, WikiText 512 tokens), the batch size
and the GPU count; the table below adds what the name does not say (the
classifier width and the optimizer the AEGIS training script uses).

The files are the project's own output and are committed; a test regenerates
two of them and compares bytes, so run this again after changing the
extractor or a builder:
    /usr/bin/python3 tools/describe_catalog.py
"""

import argparse
import csv
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import aegis_describe  # noqa: E402  (needs the path above)

# Input of one sample per data set: image shape or token count.
DATASET_INPUT = {
    "cifar100": {"input_shape": (3, 32, 32)},
    "imagenet": {"input_shape": (3, 224, 224)},
    "voc": {"input_shape": (3, 512, 512)},
    "mnist": {"input_shape": (1, 28, 28)},
    "wiki": {"seq_len": 512},
}

# (catalog model, data set) -> extractor model and the settings of the AEGIS
# training script (evaluation/workloads/training/scripts/clean/*.py).
CATALOG_MODELS = {
    ("bert_base", "wiki"): {"name": "bert_base"},
    ("bert_large", "wiki"): {"name": "bert_large"},
    ("gpt2_large", "wiki"): {"name": "gpt2_large"},
    ("gpt2_xl", "wiki"): {"name": "gpt2_xl"},
    ("xlnet_base_cased", "wiki"): {"name": "xlnet_base"},
    ("xlnet_large_cased", "wiki"): {"name": "xlnet_large"},
    ("llama3_width_8layer", "wiki"): {"name": "llama3_width_8layer"},
    # CIFAR-100 jobs: timm models with 100 classes, AdamW.
    ("resnet18", "cifar100"): {"name": "resnet18", "num_classes": 100,
                               "optimizer": "adamw"},
    ("resnet34", "cifar100"): {"name": "resnet34", "num_classes": 100,
                               "optimizer": "adamw"},
    ("efficientnet", "cifar100"): {"name": "efficientnet_b0",
                                   "num_classes": 100, "optimizer": "adamw"},
    # timm's mobilenetv3_small_100, approximated by torchvision's.
    ("mobilenet", "cifar100"): {"name": "mobilenet_v3_small",
                                "num_classes": 100, "optimizer": "adamw"},
    # ImageNet jobs: torchvision (Xception: timm) models, Adam.
    ("resnet50", "imagenet"): {"name": "resnet50"},
    ("vgg16", "imagenet"): {"name": "vgg16"},
    ("efficientnet", "imagenet"): {"name": "efficientnet_b0"},
    ("mobilenet", "imagenet"): {"name": "mobilenet_v2"},
    ("inception", "imagenet"): {"name": "inception_v3",
                                "input_shape": (3, 299, 299)},
    ("xception", "imagenet"): {"name": "xception"},
    ("unet", "voc"): {"name": "unet_resnet34"},
    ("mnist", "mnist"): {"name": "mnist_cnn"},
}

# Workloads with no description, and why (also in data/models/README.md).
NOT_BUILDABLE = {
    "dlrm": "DLRM's embedding tables are sized by the Criteo Terabyte "
            "category counts of the preprocessed data, which are not "
            "public here",
    "maskrcnn": "Mask R-CNN's activations depend on the image sizes and on "
                "the proposals of each COCO image (data-dependent shapes); "
                "one fixed-size pass would describe no real step",
}

# The one workload whose batch size is not in its name: the U-Net script's
# default, which the catalog spec also passes (--bs 8).
DEFAULT_BATCH = {"unet_voc_1gpu": 8}

# GPUMemNet real_models.csv model names -> catalog (model, data set).
REAL_MODELS = {
    "vgg16": ("vgg16", "imagenet"),
    "resnet50": ("resnet50", "imagenet"),
    "Xception": ("xception", "imagenet"),
    "mobilenetV2": ("mobilenet", "imagenet"),
    "efficientnet": ("efficientnet", "imagenet"),
    "inception": ("inception", "imagenet"),
    "BERT_base": ("bert_base", "wiki"),
    "BERT_large": ("bert_large", "wiki"),
    "xlnet_base": ("xlnet_base_cased", "wiki"),
    "xlnet_large": ("xlnet_large_cased", "wiki"),
    "gpt2_large": ("gpt2_large", "wiki"),
    "gpt2_xl": ("gpt2_xl", "wiki"),
}

WORKLOAD = re.compile(
    r"^(?P<model>.+?)(?:_(?P<dataset>cifar100|imagenet|wiki|criteo|coco|voc))?"
    r"(?:_bs(?P<batch>\d+))?(?:_\d+e)?_(?P<gpus>\d+)gpu$")


class CatalogError(Exception):
    """A catalog row this tool cannot read; the message names it."""


def parse_workload(name):
    """(model, data set, batch size or None, GPU count) from a name."""
    match = WORKLOAD.match(name)
    if not match:
        raise CatalogError("workload %r does not read as "
                           "MODEL_DATASET_bsB[_Ne]_Ggpu" % name)
    dataset = match.group("dataset") or match.group("model")
    batch = match.group("batch")
    batch = int(batch) if batch else DEFAULT_BATCH.get(name)
    return match.group("model"), dataset, batch, int(match.group("gpus"))


def settings_for(model, dataset):
    """Extractor arguments for a catalog model, or None if not buildable."""
    if model in NOT_BUILDABLE:
        return None
    try:
        entry = CATALOG_MODELS[(model, dataset)]
    except KeyError:
        raise CatalogError("no extractor model for %s on %s: add it to "
                           "CATALOG_MODELS" % (model, dataset))
    args = dict(DATASET_INPUT[dataset])
    args.update(entry)
    return args


class Describer:
    """Describes each distinct model once; descriptions that differ only in
    batch size share the forward pass."""

    def __init__(self):
        self._done = {}

    def describe(self, args, batch_size):
        key = repr(sorted(args.items()))
        if key not in self._done:
            self._done[key] = aegis_describe.describe_builder(
                args["name"], 1, args.get("optimizer"), args.get("precision"),
                args.get("input_shape"), args.get("seq_len"),
                args.get("num_classes"))
        desc = dict(self._done[key])
        desc["batch_size"] = batch_size
        return desc


def _write(path, desc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        out.write(aegis_describe.to_json(desc))


def catalog_workloads(path):
    """The catalog's measured workloads: not the rows derived from them."""
    with open(path, newline="", encoding="utf-8") as src:
        rows = [line for line in src if not line.startswith("#")]
    return [row["name"] for row in csv.DictReader(rows)
            if not row.get("derived_from")]


def real_rows(path):
    """(model, batch size) per row; a blank model repeats the one above."""
    out = []
    model = None
    with open(path, newline="", encoding="utf-8") as src:
        for lineno, row in enumerate(csv.reader(src), start=1):
            if lineno == 1:
                continue
            model = row[0].strip() or model
            try:
                out.append((model, int(row[1])))
            except (IndexError, ValueError):
                raise CatalogError("%s:%d: batch_size %r is not an integer"
                                   % (path, lineno, row[1:2]))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Write the model descriptions (aegis-model/1 JSON) of "
                    "the catalog's jobs: OUT/<workload>.json per catalog "
                    "workload, OUT/real/<model>_bs<B>.json per row of "
                    "GPUMemNet's real_models.csv.")
    parser.add_argument("--catalog", metavar="CSV",
                        default=os.path.join(ROOT, "data", "catalog.csv"),
                        help="the workload catalog whose jobs are described "
                             "(default: data/catalog.csv)")
    parser.add_argument("--real", metavar="CSV", default=os.path.join(
        ROOT, "data", "gpumemnet", "real_models.csv"),
        help="GPUMemNet's real_models.csv, skipped if missing "
             "(default: data/gpumemnet/real_models.csv)")
    parser.add_argument("--out", metavar="DIR",
                        default=os.path.join(ROOT, "data", "models"),
                        help="output folder (default: data/models)")
    parser.add_argument("--only", action="append", default=[],
                        metavar="FILE",
                        help="write only this file name (repeatable), "
                             "e.g. resnet50_imagenet_bs32_1gpu.json or "
                             "real/vgg16_bs32.json")
    args = parser.parse_args(argv)
    describer = Describer()
    wanted = set(args.only)
    written = 0
    try:
        jobs = []
        for workload in catalog_workloads(args.catalog):
            model, dataset, batch, _gpus = parse_workload(workload)
            settings = settings_for(model, dataset)
            if settings is None:
                sys.stderr.write("skipped %s: %s\n"
                                 % (workload, NOT_BUILDABLE[model]))
                continue
            jobs.append((workload + ".json", settings, batch))
        if os.path.exists(args.real):
            for model, batch in real_rows(args.real):
                if model not in REAL_MODELS:
                    raise CatalogError("real_models.csv: unknown model %r"
                                       % model)
                jobs.append(("real/%s_bs%d.json" % (model, batch),
                             settings_for(*REAL_MODELS[model]), batch))
        for name, settings, batch in jobs:
            if wanted and name not in wanted:
                continue
            _write(os.path.join(args.out, name),
                   describer.describe(settings, batch))
            written += 1
    except (CatalogError, aegis_describe.DescribeError, OSError) as err:
        sys.stderr.write("describe_catalog: %s\n" % err)
        return 2
    if wanted and written != len(wanted):
        sys.stderr.write("describe_catalog: --only names no known file\n")
        return 2
    print("wrote %d descriptions under %s" % (written, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
