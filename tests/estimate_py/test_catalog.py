"""tools/describe_catalog.py: the committed data/models files are what the
extractor makes today (so the set cannot silently go stale), and workload
names parse into model, data set, batch size and GPU count."""
import common

import filecmp
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(common.ROOT, "tools"))
import describe_catalog  # noqa: E402

TOOL = os.path.join(common.ROOT, "tools", "describe_catalog.py")
MODELS = os.path.join(common.ROOT, "data", "models")
REAL_CSV = os.path.join(common.DATA, "gpumemnet", "real_models.csv")

# A torchvision CNN and a transformer builder, both 1-GPU catalog jobs.
CHECKED = ["resnet18_cifar100_bs32_20e_1gpu.json",
           "gpt2_xl_wiki_bs2_1gpu.json"]


class Committed(unittest.TestCase):
    def test_files_are_reproduced_exactly(self):
        with tempfile.TemporaryDirectory() as tmp:
            args = [sys.executable, TOOL, "--out", tmp, "--real", REAL_CSV]
            names = CHECKED + ["real/vgg16_bs32.json"]
            for name in names:
                args += ["--only", name]
            res = subprocess.run(args, capture_output=True, text=True,
                                 timeout=240)
            self.assertEqual(res.returncode, 0, res.stderr)
            for name in names:
                self.assertTrue(
                    filecmp.cmp(os.path.join(tmp, name),
                                os.path.join(MODELS, name), shallow=False),
                    "%s differs from tools/describe_catalog.py's output: "
                    "rerun the tool and commit" % name)

    def test_every_buildable_workload_has_a_file(self):
        catalog = os.path.join(common.ROOT, "data", "catalog.csv")
        for workload in describe_catalog.catalog_workloads(catalog):
            model, dataset, _batch, _gpus = \
                describe_catalog.parse_workload(workload)
            present = os.path.exists(os.path.join(MODELS, workload + ".json"))
            self.assertEqual(present, model not in
                             describe_catalog.NOT_BUILDABLE, workload)


class Names(unittest.TestCase):
    def test_parse_workload(self):
        parse = describe_catalog.parse_workload
        self.assertEqual(parse("resnet18_cifar100_bs128_20e_1gpu"),
                         ("resnet18", "cifar100", 128, 1))
        self.assertEqual(parse("xlnet_large_cased_wiki_bs4_2gpu"),
                         ("xlnet_large_cased", "wiki", 4, 2))
        self.assertEqual(parse("mnist_bs32_1gpu"), ("mnist", "mnist", 32, 1))
        self.assertEqual(parse("unet_voc_1gpu"), ("unet", "voc", 8, 1))
        with self.assertRaises(describe_catalog.CatalogError):
            parse("resnet18")

    def test_unknown_model_is_an_error(self):
        with self.assertRaisesRegex(describe_catalog.CatalogError, "alexnet"):
            describe_catalog.settings_for("alexnet", "imagenet")


if __name__ == "__main__":
    common.run_tests()
