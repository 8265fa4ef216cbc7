"""The aegis_describe.py command line: a description written to a file, the
manual, the model list, and exit status 2 with a message naming the problem
for every kind of bad input."""
import common

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

import aegis_describe

TOOL = os.path.join(common.ROOT, "python", "aegis_describe.py")


def run(*args):
    """The tool as its own process: what a user runs, exit status and all."""
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True,
                          text=True, timeout=120)


def call(*args):
    """The tool's main() in this process, which has imported PyTorch once:
    a process per case imports it again (seconds each; two dozen of them
    took this test past its 300 s on a loaded machine). Same result as
    run(): returncode, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = aegis_describe.main(list(args))
        except SystemExit as stop:  # --help
            code = stop.code or 0
    return subprocess.CompletedProcess(args, code, out.getvalue(),
                                       err.getvalue())


class Cli(unittest.TestCase):
    def test_writes_a_description(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.json")
            res = run("resnet18", "--batch-size", "64", "--num-classes",
                      "100", "--input-shape", "3,32,32", "--optimizer",
                      "adamw", "-o", path)
            self.assertEqual(res.returncode, 0, res.stderr)
            with open(path, encoding="utf-8") as src:
                desc = json.load(src)
        self.assertEqual((desc["format"], desc["model"], desc["batch_size"],
                          desc["optimizer"], desc["precision"],
                          desc["input_elements"]),
                         ("aegis-model/1", "resnet18", 64, "adamw", "fp32",
                          3 * 32 * 32))
        self.assertEqual(desc["layers"][-1],
                         {"type": "Linear", "activations": 100,
                          "params": 512 * 100 + 100, "saved": 0})

    def test_text_model_to_stdout(self):
        res = call("bert_base", "--batch-size", "2", "--seq-len", "128")
        self.assertEqual(res.returncode, 0, res.stderr)
        desc = json.loads(res.stdout)
        # one line: `aegis estimate -` reads a JSON object a line
        self.assertEqual(res.stdout.count("\n"), 1)
        self.assertEqual(desc["input_elements"], 128)
        self.assertEqual(desc["layers"][0]["activations"], 128 * 768)

    def test_help_and_list(self):
        res = call("--help")
        self.assertEqual(res.returncode, 0)
        for section in ("NAME", "SYNOPSIS", "OPTIONS", "EXIT STATUS"):
            self.assertIn(section, res.stdout)
        res = call("--list")
        self.assertEqual(res.returncode, 0)
        names = [line.split()[0] for line in res.stdout.splitlines()]
        for name in ("gpt2_xl", "xception", "resnet50", "vgg16"):
            self.assertIn(name, names)
        res = call("--list", "--json")
        self.assertEqual(res.returncode, 0)
        listed = [json.loads(line) for line in res.stdout.splitlines()]
        self.assertEqual([m["name"] for m in listed], names)
        gpt2 = next(m for m in listed if m["name"] == "gpt2_xl")
        self.assertEqual((gpt2["seq_len"], gpt2["optimizer"],
                          gpt2["attention"]), (512, "adamw", "fused"))

    def test_segmentation_model_needs_no_download(self):
        # torchvision's segmentation backbones default to pretrained weights.
        res = call("lraspp_mobilenet_v3_large", "--batch-size", "4")
        self.assertEqual(res.returncode, 0, res.stderr)
        # Its forward ends with a functional upsampling to the input size.
        self.assertEqual(json.loads(res.stdout)["layers"][-1],
                         {"type": "interpolate",
                          "activations": 21 * 224 * 224, "params": 0,
                          "saved": 0})

    def test_every_torchvision_family_and_the_warnings(self):
        names = [line.split()[0] for line in call("--list").stdout.splitlines()]
        for name in ("maskrcnn_resnet50_fpn", "r3d_18", "raft_small",
                     "swin_t", "fcn_resnet50"):
            self.assertIn(name, names)
        # A clip is C,T,H,W.
        res = call("r3d_18", "--batch-size", "2", "--input-shape",
                  "3,4,32,32")
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(json.loads(res.stdout)["input_elements"],
                         3 * 4 * 32 * 32)
        res = call("r3d_18", "--batch-size", "2", "--input-shape", "3,32,32")
        self.assertEqual(res.returncode, 2)
        self.assertIn("C,T,H,W", res.stderr)
        # A detection model runs on CPU: said on stderr and in the file.
        res = call("ssdlite320_mobilenet_v3_large", "--batch-size", "2")
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("aegis_describe: warning: described by a forward pass "
                      "on the CPU", res.stderr)
        self.assertTrue(json.loads(res.stdout)["warnings"])

    def test_bad_input_exits_2_with_a_message(self):
        cases = [
            (["no_such_net", "--batch-size", "1"], "no_such_net"),
            (["resnet18"], "--batch-size"),
            (["--batch-size", "1"], "MODEL"),
            (["resnet18", "--batch-size", "0"], "batch-size"),
            (["resnet18", "--batch-size", "x"], "batch-size"),
            # out of what aegis estimate takes, refused here first; --batch
            # is argparse's abbreviation of --batch-size
            (["resnet18", "--batch", "100000000000000000000"],
             "--batch-size: 100000000000000000000 is out of range: 1 to "
             "1000000"),
            (["resnet18", "--batch-size", "1000001"], "1 to 1000000"),
            (["resnet18", "--batch-size", "1", "--optimizer", "lamb"],
             "lamb"),
            (["resnet18", "--batch-size", "1", "--input-shape", "3,32"],
             "3,32"),
            (["bert_base", "--batch-size", "1", "--input-shape", "3,32,32"],
             "--seq-len"),
            (["resnet18", "--batch-size", "1", "--seq-len", "10"],
             "--input-shape"),
            (["gpt2_large", "--batch-size", "1", "--num-classes", "3"],
             "--num-classes"),
            (["resnet18", "--batch-size", "1", "--attention", "fused"],
             "--attention"),
            (["xlnet_base", "--batch-size", "1", "--attention", "fused"],
             "eager"),
            (["bert_base", "--batch-size", "1", "--attention", "flash"],
             "flash"),
            # A forward pass that rejects the input: too small for VGG.
            (["vgg16", "--batch-size", "1", "--input-shape", "3,8,8"],
             "vgg16"),
        ]
        res = run(*cases[0][0])  # the process's own exit status
        self.assertEqual((res.returncode, res.stdout), (2, ""), res.stderr)
        for args, named in cases:
            res = call(*args)
            self.assertEqual(res.returncode, 2, (args, res.stderr))
            self.assertIn(named, res.stderr, args)
            self.assertTrue(res.stderr.startswith("aegis_describe: "), args)
            self.assertEqual(res.stdout, "", args)


if __name__ == "__main__":
    common.run_tests()
