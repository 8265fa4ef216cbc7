"""The extractor on a representative part of the zoo (python/aegis_zoo.py):
for each model, the description's trainable parameters are exactly
model.parameters()'s and the activations it says autograd keeps per sample
are within 0.8-1.25 x what autograd keeps in a CPU forward pass of one
sample. One model of each torchvision family and of each trick the
extractor must see through (weights handed to functions, in-place
activations, concatenations, attention, recurrent layers, data-dependent
routing), the hand-written kinds at a small size; the whole zoo is
bench/estimate/bench_zoo.py's."""
import common

import unittest

import torch

import aegis_zoo

TORCHVISION = [
    "resnet18",                  # in-place ReLU, residual sums
    "efficientnet_b0",           # in-place SiLU keeps a copy, SE blocks
    "mobilenet_v3_large",        # in-place Hardswish
    "swin_t",                    # weights handed to F.linear
    "densenet121",               # concatenations
    "inception_v3",              # functional pools and concatenations
    "deeplabv3_mobilenet_v3_large",          # segmentation
    "ssdlite320_mobilenet_v3_large",         # detection, model([img], [t])
    "r3d_18",                    # video
    "raft_small",                # optical flow, recurrent refinement
]

HANDWRITTEN = [
    aegis_zoo.Entry("transformer_encoder", "handwritten",
                    lambda: aegis_zoo.TransformerEncoderModel(
                        dim=64, heads=4, layers=2),
                    aegis_zoo._tokens(64, 1000)),
    aegis_zoo.Entry("lstm_lm", "handwritten",
                    lambda: aegis_zoo.LSTMLanguageModel(dim=32, hidden=64),
                    aegis_zoo._tokens(32, 2000)),
    aegis_zoo.Entry("unet_skips", "handwritten",
                    lambda: aegis_zoo.SkipUNet(widths=(8, 16, 32)),
                    lambda: torch.rand(1, 3, 32, 32)),
    aegis_zoo.Entry("tied_lm", "handwritten",
                    lambda: aegis_zoo.TiedLanguageModel(vocab=500, dim=32),
                    aegis_zoo._tokens(32, 500)),
    aegis_zoo.Entry("mixture_of_experts", "handwritten",
                    lambda: aegis_zoo.MixtureOfExperts(dim=32, hidden=64),
                    aegis_zoo._tokens(32, 1000)),
]


class Zoo(unittest.TestCase):
    def check(self, item):
        row = aegis_zoo.check(item)
        print("%-30s params %d/%d, activations %.0f/%.0f bytes, ratio %.3f"
              % (item.name, row["params"], row["real_params"],
                 row["act_bytes"], row["autograd_bytes"], row["ratio"]))
        self.assertEqual(row["params"], row["real_params"], item.name)
        low, high = aegis_zoo.ACTIVATION_BOUNDS
        self.assertTrue(low <= row["ratio"] <= high,
                        "%s: %.3f x what autograd keeps" % (item.name,
                                                            row["ratio"]))
        return row

    def test_torchvision_families(self):
        for name in TORCHVISION:
            with self.subTest(name):
                self.check(aegis_zoo.entry(name))

    def test_handwritten_kinds(self):
        for item in HANDWRITTEN:
            with self.subTest(item.name):
                row = self.check(item)
                if item.name == "mixture_of_experts":
                    self.assertTrue(any("depends on the example input's "
                                        "values" in w
                                        for w in row["warnings"]))

    def test_zoo_lists_every_family(self):
        kinds = {item.kind for item in aegis_zoo.zoo()}
        self.assertEqual(kinds, {"image", "detection", "video", "flow",
                                 "handwritten"})
        self.assertEqual(len(aegis_zoo.zoo()), 106 + 5)


if __name__ == "__main__":
    torch.set_num_threads(1)
    common.run_tests()
