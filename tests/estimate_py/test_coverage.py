"""The extractor on models that do not fit the leaf-module picture: weights
passed to functions, unused weights, what autograd keeps inside a layer
(in-place activations, attention, recurrent state, dropout masks),
detection models' calling convention, a time-major input refused with
its remedy, data-dependent forward passes, and the CPU fallback's manners
(said out loud, module left exactly as it was, no copy of the real
weights)."""
import common

import copy
import unittest

import torch
import torchvision
from torch import nn

import aegis_describe
import aegis_zoo


def params_of(desc):
    return sum(layer["params"] for layer in desc["layers"])


def trainable(module):
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def assert_follows_autograd(case, module, example, tolerance=0.01):
    """The description's kept bytes are autograd's, on CPU, per sample."""
    desc = aegis_describe.describe(module, example, 1)
    ours = aegis_zoo.description_cpu_bytes(desc)
    actual = aegis_zoo.saved_bytes_on_cpu(module, example)
    case.assertGreater(actual, 0)
    case.assertLessEqual(abs(ours - actual), tolerance * actual,
                         "described %d bytes, autograd keeps %d"
                         % (ours, actual))
    return desc


class Parameters(unittest.TestCase):
    def test_swin_weights_passed_to_a_function_are_counted(self):
        # ShiftedWindowAttention hands self.qkv.weight to F.linear: the
        # nn.Linear itself never runs.
        with aegis_describe.meta_init():
            model = torchvision.models.swin_t()
        desc = aegis_describe.describe_builder("swin_t", 1, device="meta")
        self.assertEqual(params_of(desc), trainable(model))
        self.assertNotIn("warnings", desc)

    def test_an_unused_trainable_tensor_is_counted_and_named(self):
        class Spare(nn.Module):
            def __init__(self):
                super().__init__()
                self.used = nn.Linear(4, 4)
                self.spare = nn.Linear(4, 1000)

            def forward(self, x):
                return self.used(x)
        model = Spare()
        desc = aegis_describe.describe(model, torch.zeros(1, 4), 1)
        self.assertEqual(params_of(desc), trainable(model))
        text = " ".join(desc["warnings"])
        self.assertIn("spare.weight", text)
        self.assertIn("spare.bias", text)
        self.assertNotIn("used.weight", text)


class Activations(unittest.TestCase):
    def test_in_place_silu_keeps_its_input(self):
        model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8),
                              nn.SiLU(inplace=True), nn.Conv2d(8, 8, 3),
                              nn.Hardswish(inplace=True), nn.Conv2d(8, 4, 3))
        assert_follows_autograd(self, model, torch.rand(1, 3, 16, 16))

    def test_attention_scores_and_softmax(self):
        layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
        desc = assert_follows_autograd(self, layer, torch.rand(1, 24, 32))
        attention = [l for l in desc["layers"]
                     if l["type"] == "MultiheadAttention"]
        # heads x seq x seq probabilities (and their dropout) are kept
        self.assertGreaterEqual(attention[0]["saved"], 4 * 24 * 24)
        self.assertGreaterEqual(attention[0]["masks"], 4 * 24 * 24)

    def test_recurrent_layers_keep_every_step(self):
        for cls in (nn.LSTM, nn.GRU):
            model = cls(16, 32, num_layers=2, batch_first=True)
            desc = assert_follows_autograd(self, model, torch.rand(1, 20, 16))
            # far more than the output (20 x 32): every step's gates
            self.assertGreater(sum(l["saved"] for l in desc["layers"]),
                               4 * 20 * 32)

    def test_dropout_mask_is_counted_apart(self):
        model = nn.Sequential(nn.Linear(8, 64), nn.Dropout(0.5),
                              nn.Linear(64, 2))
        desc = assert_follows_autograd(self, model, torch.rand(1, 8))
        self.assertEqual(sum(l.get("masks", 0) for l in desc["layers"]), 64)


class CallingConventions(unittest.TestCase):
    def test_detection_model_as_it_trains(self):
        model = torchvision.models.get_model(
            "ssdlite320_mobilenet_v3_large", weights=None,
            weights_backbone=None)
        image = torch.rand(3, 320, 320)
        target = {"boxes": torch.tensor([[80.0, 80.0, 240.0, 240.0]]),
                  "labels": torch.tensor([1])}
        desc = aegis_describe.describe(model, ([image], [target]), 4)
        self.assertEqual(params_of(desc), trainable(model))
        # The meta pass cannot run it: the fallback says so and why.
        self.assertTrue(any("CPU" in w and "meta device failed" in w
                            for w in desc["warnings"]), desc["warnings"])

    def test_two_images_are_not_one_sample(self):
        model = torchvision.models.get_model(
            "ssdlite320_mobilenet_v3_large", weights=None,
            weights_backbone=None)
        image = torch.rand(3, 320, 320)
        with self.assertRaisesRegex(aegis_describe.DescribeError,
                                    "ONE sample.*2 items"):
            aegis_describe.describe(model, ([image, image], []), 1)

    def test_time_major_input_is_refused_with_the_remedy(self):
        class Tagger(nn.Module):
            """nn.LSTM's default: input (seq, batch, feature)."""

            def __init__(self, batch_first=False):
                super().__init__()
                self.batch_first = batch_first
                self.rnn = nn.LSTM(8, 16, batch_first=batch_first)
                self.head = nn.Linear(16, 4)

            def forward(self, x):
                out, _ = self.rnn(x)
                return self.head(out[:, -1] if self.batch_first else out[-1])

        class BatchFirst(nn.Module):
            """The remedy the message gives."""

            def __init__(self, model):
                super().__init__()
                self.model = model

            def forward(self, x):
                return self.model(x.transpose(0, 1))

        # One sequence of 5 steps, time-major: said what it looks like
        # and what to do, with the shape to give instead.
        with self.assertRaisesRegex(aegis_describe.DescribeError,
                                    r"ONE sample.*\(5, 1, 8\).*time-major"
                                    r".*batch_first=True.*"
                                    r"x\.transpose\(0, 1\).*\(1, 5, 8\)"):
            aegis_describe.describe(Tagger(), torch.zeros(5, 1, 8), 4)
        # Followed, it describes what the batch-first model is described as.
        for device in ("meta", "cpu"):
            wrapped = aegis_describe.describe(
                BatchFirst(Tagger()), torch.zeros(1, 5, 8), 4, device=device)
            same = aegis_describe.describe(
                Tagger(batch_first=True), torch.zeros(1, 5, 8), 4,
                device=device)
            self.assertEqual(wrapped["layers"], same["layers"], device)
        # Not every shape is time-major: a batch of two is only refused.
        with self.assertRaises(aegis_describe.DescribeError) as refused:
            aegis_describe.describe(Tagger(), torch.zeros(2, 5, 8), 4)
        self.assertNotIn("time-major", str(refused.exception))

    def test_video_and_optical_flow_builders(self):
        for name in ("r3d_18", "raft_small"):
            desc = aegis_describe.describe_builder(
                name, 2, input_shape=(3, 8, 32, 32) if name == "r3d_18"
                else (3, 64, 64))
            self.assertGreater(sum(l["saved"] for l in desc["layers"]), 0)


class Values(unittest.TestCase):
    def test_data_dependent_routing_is_warned_about(self):
        # Seeded: which tokens reach which expert is then fixed, and the
        # other input the extractor tries routes them differently.
        torch.manual_seed(1)
        model = aegis_zoo.MixtureOfExperts(dim=32, experts=4, hidden=64)
        ids = torch.arange(16)[None]
        desc = aegis_describe.describe(model, ids, 1)
        self.assertEqual(params_of(desc), trainable(model))
        self.assertTrue(any("depends on the example input's values" in w
                            for w in desc["warnings"]), desc["warnings"])

    def test_meta_pass_has_no_such_warning(self):
        desc = aegis_describe.describe(nn.Linear(4, 4), torch.zeros(1, 4), 1)
        self.assertNotIn("warnings", desc)


class Fallback(unittest.TestCase):
    def _model(self):
        """Mixed train/eval flags, and a forward that meta cannot run."""
        class Gate(nn.Module):
            def forward(self, x):
                return x[x.sum(dim=1) > -1e9]
        model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8),
                              nn.Dropout(0.5), Gate(), nn.Linear(8, 2))
        model.train()
        model[1].eval()
        model[3].eval()
        return model

    def test_module_is_left_exactly_as_it_was(self):
        model = self._model()
        flags = [m.training for m in model.modules()]
        state = copy.deepcopy(model.state_dict())
        example = torch.rand(1, 4)
        rng = torch.random.get_rng_state()
        desc = aegis_describe.describe(model, example, 1)
        self.assertTrue(any("CPU" in w for w in desc["warnings"]))
        self.assertEqual([m.training for m in model.modules()], flags)
        for name, tensor in model.state_dict().items():
            self.assertTrue(torch.equal(tensor, state[name]), name)
        self.assertTrue(torch.equal(torch.random.get_rng_state(), rng))
        self.assertTrue(all(p.grad is None for p in model.parameters()))

    def test_cpu_pass_frees_what_autograd_saved(self):
        # A saved output held with its grad_fn would keep the whole graph,
        # weights included, alive for ever: gigabytes per model in a zoo.
        import gc
        import weakref
        # (The second ReLU saves its output; the Linear before it, whose
        # node that output's grad_fn leads to, saves its weight.)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8),
                              nn.ReLU(), nn.Linear(8, 2))
        weight = weakref.ref(model[2].weight)
        aegis_describe.describe(model, torch.rand(1, 4), 1, device="cpu")
        aegis_zoo.saved_bytes_on_cpu(model, torch.rand(1, 4))
        del model
        gc.collect()
        self.assertIsNone(weight())

    def test_meta_pass_copies_no_real_weight(self):
        model = torchvision.models.resnet18()
        plain = torch.Tensor.__deepcopy__

        def refuse(tensor, memo):
            if not tensor.is_meta:
                raise AssertionError("a real tensor was deep-copied")
            return plain(tensor, memo)
        torch.Tensor.__deepcopy__ = refuse
        try:
            desc = aegis_describe.describe(model, torch.zeros(1, 3, 32, 32),
                                           1, device="meta")
        finally:
            torch.Tensor.__deepcopy__ = plain
        self.assertEqual(params_of(desc), trainable(model))


if __name__ == "__main__":
    common.run_tests()
