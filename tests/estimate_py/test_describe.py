"""The extractor's module API: exact per-layer figures on a hand-made module,
parameter totals on resnet18 and the catalog builders, and agreement of the
meta-device and CPU passes."""
import common

import copy
import unittest

import torch
import torchvision
from torch import nn

import aegis_describe
import aegis_models


class Tiny(nn.Module):
    """Every case the recorder distinguishes, on a 3-token input: a weight
    tied to a later layer, a layer called twice, a frozen parameter, an
    identity, a parameter and a buffer owned by the container itself, and
    functional steps in the container's forward: recorded (mul, cat), in
    place (relu) or not recorded at all (a view, a slice)."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))
        self.register_buffer("offset", torch.zeros(3))
        self.embed = nn.Embedding(10, 4)
        self.up = nn.Linear(4, 6)
        self.act = nn.ReLU()
        self.down = nn.Linear(6, 4)
        self.norm = nn.LayerNorm(4)
        self.frozen = nn.Linear(4, 4)
        self.frozen.weight.requires_grad_(False)
        self.skip = nn.Identity()
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        x = self.embed(ids) * self.scale
        x = self.act(self.up(x))
        x = self.act(self.down(x))
        x = self.skip(self.frozen(self.norm(x)))
        x = torch.cat([x, x], dim=1).view(-1, 6, 4)[:, :3]
        x = nn.functional.relu(x, inplace=True)
        return self.head(x)


# "saved": what autograd keeps, attributed to the layer whose output it
# is: the Embedding's output (mul keeps it, as scale needs a gradient), the
# product (the Linear after it keeps its input), each ReLU's own output,
# the layer norm's mean and 1/std per token (its output goes to a Linear
# with a frozen weight, which needs no input), the whole concatenation (of
# which the head's input is a slice; the in-place relu keeps it too), and
# the head's copy of that slice: at batch 4 (described from a pass over
# two samples) the slice is not contiguous and the head copies it; at
# batch 1 it would be a view.
TINY_LAYERS = [
    {"type": "Tiny", "activations": 0, "params": 1, "buffers": 3,
     "saved": 0},
    {"type": "Embedding", "activations": 12, "params": 40, "saved": 12},
    {"type": "mul", "activations": 12, "params": 0, "saved": 12},
    {"type": "Linear", "activations": 18, "params": 30, "saved": 0},
    {"type": "ReLU", "activations": 18, "params": 0, "saved": 18},
    {"type": "Linear", "activations": 12, "params": 28, "saved": 0},
    {"type": "ReLU", "activations": 12, "params": 0, "saved": 12},
    {"type": "LayerNorm", "activations": 12, "params": 8, "saved": 6},
    {"type": "Linear", "activations": 12, "params": 4, "buffers": 16,
     "saved": 0},
    {"type": "Identity", "activations": 0, "params": 0, "saved": 0},
    {"type": "cat", "activations": 24, "params": 0, "saved": 24},
    {"type": "relu", "activations": 0, "params": 0, "saved": 0},
    {"type": "Linear", "activations": 30, "params": 0, "saved": 12},
]

TOKENS = torch.zeros((1, 3), dtype=torch.long)


def assert_same_layers(case, meta, cpu, msg=None):
    """The meta and CPU passes list the same layers with the same sizes;
    what they keep differs only by batch norm's mean and 1/std per channel
    (saved on meta, not by the CPU's eval-mode kernel), fewer elements
    than its buffers."""
    strip = [{k: v for k, v in l.items() if k != "saved"}
             for l in meta["layers"]]
    case.assertEqual(strip, [{k: v for k, v in l.items() if k != "saved"}
                             for l in cpu["layers"]], msg)
    kept = [sum(l["saved"] for l in d["layers"]) for d in (meta, cpu)]
    case.assertLessEqual(abs(kept[0] - kept[1]),
                         sum(l.get("buffers", 0) for l in meta["layers"]),
                         msg)


def totals(desc):
    params = sum(layer["params"] for layer in desc["layers"])
    buffers = sum(layer.get("buffers", 0) for layer in desc["layers"])
    return params, buffers


class TinyModule(unittest.TestCase):
    def test_layers_are_exact_on_both_devices(self):
        for device in ("meta", "cpu"):
            desc = aegis_describe.describe(Tiny(), TOKENS, batch_size=4,
                                           optimizer="sgd", device=device)
            self.assertEqual(desc["layers"], TINY_LAYERS, device)

    def test_header(self):
        desc = aegis_describe.describe(Tiny(), TOKENS, batch_size=4,
                                       optimizer="sgd_momentum",
                                       precision="amp_bf16", model="tiny",
                                       source="unit test")
        self.assertEqual(list(desc), ["format", "model", "batch_size",
                                      "optimizer", "precision",
                                      "input_elements", "source", "layers"])
        self.assertEqual(desc["format"], "aegis-model/1")
        self.assertEqual(desc["model"], "tiny")
        self.assertEqual(desc["batch_size"], 4)
        self.assertEqual(desc["optimizer"], "sgd_momentum")
        self.assertEqual(desc["precision"], "amp_bf16")
        self.assertEqual(desc["input_elements"], 3)

    def test_module_is_left_on_cpu_and_unchanged(self):
        model = Tiny()
        before = copy.deepcopy(model.state_dict())
        aegis_describe.describe(model, TOKENS, batch_size=1, device="meta")
        self.assertTrue(all(not t.is_meta for t in model.state_dict().values()))
        for name, tensor in model.state_dict().items():
            self.assertTrue(torch.equal(tensor, before[name]), name)
        self.assertIs(model.head.weight, model.embed.weight)

    def test_bad_arguments(self):
        bad = [dict(batch_size=0), dict(batch_size=2.5),
               dict(batch_size=1, optimizer="lamb"),
               dict(batch_size=1, precision="int8"),
               dict(batch_size=1, device="gpu")]
        for kwargs in bad:
            with self.assertRaises(aegis_describe.DescribeError, msg=kwargs):
                aegis_describe.describe(Tiny(), TOKENS, **kwargs)

    def test_batch_size_is_checked_where_it_is_given(self):
        # What aegis estimate would refuse later is refused here, as
        # Python's own checks do: a bool (True passed as 1) or another type
        # is a TypeError, a size out of 1..1000000 (aegis estimate's
        # limit) a ValueError; each names batch_size and the range.
        largest = aegis_describe.MAX_BATCH_SIZE
        self.assertEqual(largest, 1000000)
        bad = [(True, TypeError), (False, TypeError), (2.0, TypeError),
               ("8", TypeError), (None, TypeError), (0, ValueError),
               (-3, ValueError), (largest + 1, ValueError),
               (10 ** 20, ValueError)]
        for batch_size, error in bad:
            for call in (
                    lambda: aegis_describe.describe(Tiny(), TOKENS,
                                                    batch_size),
                    lambda: aegis_describe.describe_builder("gpt2_xl",
                                                            batch_size)):
                with self.assertRaisesRegex(error, "batch_size.*1 to 1000000",
                                            msg=batch_size) as caught:
                    call()
                self.assertIsInstance(caught.exception,
                                      aegis_describe.DescribeError)
        desc = aegis_describe.describe(Tiny(), TOKENS, largest)
        self.assertEqual(desc["batch_size"], largest)

    def test_input_elements_is_checked_where_it_is_given(self):
        # -5 was taken into the description, 3.7 cut to 3, "abc" a bare
        # ValueError from int().
        bad = [(-5, ValueError), (2 ** 40 + 1, ValueError),
               (3.7, TypeError), ("abc", TypeError), (True, TypeError)]
        for value, error in bad:
            with self.assertRaisesRegex(error, "input_elements",
                                        msg=value) as caught:
                aegis_describe.describe(Tiny(), TOKENS, 1,
                                        input_elements=value)
            self.assertIsInstance(caught.exception,
                                  aegis_describe.DescribeError)
        desc = aegis_describe.describe(Tiny(), TOKENS, 1, input_elements=7)
        self.assertEqual(desc["input_elements"], 7)

    def test_builder_sizes_are_checked_where_given(self):
        # were a raw RuntimeError from inside torch (the command line
        # checked them; the Python API did not)
        bad = [(dict(input_shape=(3, -4, 32)), ValueError),
               (dict(input_shape=(3, 0, 32)), ValueError),
               (dict(input_shape="3,32,32"), TypeError),
               (dict(num_classes=-1), ValueError),
               (dict(num_classes=2.5), TypeError)]
        for kwargs, error in bad:
            with self.assertRaisesRegex(error, next(iter(kwargs)),
                                        msg=kwargs) as caught:
                aegis_describe.describe_builder("resnet18", 1, **kwargs)
            self.assertIsInstance(caught.exception,
                                  aegis_describe.DescribeError)
        with self.assertRaisesRegex(TypeError, "not a description"):
            aegis_describe.to_json({})

    def test_module_must_be_a_module(self):
        # A function, a name or None was an AttributeError from inside
        # ('str' object has no attribute 'parameters').
        for module in ("resnet18", lambda x: x, None):
            with self.assertRaisesRegex(TypeError, "module must be a "
                                        "torch.nn.Module, got") as caught:
                aegis_describe.describe(module, TOKENS, 1)
            self.assertIsInstance(caught.exception,
                                  aegis_describe.DescribeError)

    def test_failing_forward_names_its_layer(self):
        # A forward pass that fails on the CPU (an input of the wrong
        # shape, a forward that raises) was its bare error, with no word
        # of the model or the layer; the meta pass's named no layer.
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(4, 3), nn.ReLU(),
                                          nn.Linear(5, 2))

            def forward(self, x):
                return self.body(x)
        for device in ("auto", "cpu", "meta"):
            with self.assertRaisesRegex(
                    aegis_describe.DescribeError,
                    r"forward pass .*, in its layer body\.2 \(Linear\): "
                    r".*mat1 and mat2 shapes", msg=device):
                aegis_describe.describe(Net(), torch.zeros(1, 4), 2,
                                        device=device)

        class Raises(nn.Module):
            def forward(self, x):
                raise ValueError("no labels given")
        with self.assertRaisesRegex(
                aegis_describe.DescribeError, "^Raises's forward pass failed "
                "on the example input on the CPU: ValueError: no labels "
                "given$"):
            aegis_describe.describe(Raises(), torch.zeros(1, 4), 2)

    def test_example_must_be_one_sample(self):
        with self.assertRaisesRegex(aegis_describe.DescribeError, "ONE"):
            aegis_describe.describe(Tiny(), torch.zeros((2, 3),
                                                        dtype=torch.long), 1)

    def test_multihead_attention_is_one_layer(self):
        attention = nn.MultiheadAttention(8, 2, batch_first=True)
        x = torch.zeros(1, 3, 8)
        desc = aegis_describe.describe(attention, (x, x, x), batch_size=1)
        # Output (1,3,8) plus head-averaged weights (1,3,3); 4 projections.
        layer, = desc["layers"]
        self.assertEqual((layer["type"], layer["activations"],
                          layer["params"]),
                         ("MultiheadAttention", 24 + 9, 4 * 8 * 8 + 4 * 8))
        # Inside it autograd keeps the projections and the probabilities
        # of 2 heads x 3 x 3, which no leaf module shows.
        self.assertGreater(layer["saved"], 3 * 24 + 2 * 3 * 3)


class TorchvisionModels(unittest.TestCase):
    def test_resnet18_counts_every_parameter_once(self):
        model = torchvision.models.resnet18()
        desc = aegis_describe.describe(model, torch.zeros(1, 3, 224, 224), 32)
        self.assertEqual(totals(desc),
                         (sum(p.numel() for p in model.parameters()),
                          sum(b.numel() for b in model.buffers())))
        first = desc["layers"][0]
        # Its output is kept, for the batch norm's backward.
        self.assertEqual(first, {"type": "Conv2d", "activations": 64 * 112 * 112,
                                 "params": 64 * 3 * 7 * 7,
                                 "saved": 64 * 112 * 112})
        # torchvision's ReLUs are in place: they add no new tensor.
        relus = [l for l in desc["layers"] if l["type"] == "ReLU"]
        self.assertTrue(relus and all(l["activations"] == 0 for l in relus))
        self.assertEqual(desc["layers"][-1]["activations"], 1000)

    def test_meta_and_cpu_agree(self):
        for name in ("resnet18", "mobilenet_v3_small", "efficientnet_b0",
                     "inception_v3"):
            kwargs = {"aux_logits": False, "init_weights": False} \
                if name == "inception_v3" else {}
            model = torchvision.models.get_model(name, num_classes=100,
                                                 **kwargs)
            # Inception's smallest input is 75x75.
            side = 80 if name == "inception_v3" else 32
            example = torch.zeros(1, 3, side, side)
            meta = aegis_describe.describe(model, example, 8, device="meta")
            cpu = aegis_describe.describe(model, example, 8, device="cpu")
            assert_same_layers(self, meta, cpu, name)

    def test_functional_steps_of_inception(self):
        model = torchvision.models.inception_v3(aux_logits=False,
                                                init_weights=False)
        desc = aegis_describe.describe(model, torch.zeros(1, 3, 299, 299), 1)
        kinds = [l["type"] for l in desc["layers"]]
        # 11 Inception blocks concatenate their branches (InceptionE twice
        # more inside its branches), 9 have an average-pooled branch.
        self.assertEqual(kinds.count("cat"), 11 + 2 * 2)
        self.assertEqual(kinds.count("avg_pool2d"), 9)
        # The ReLUs are F.relu(inplace=True): listed, but no new tensor.
        relus = [l for l in desc["layers"] if l["type"] == "relu"]
        self.assertTrue(relus and all(l["activations"] == 0 for l in relus))
        # The last block's concatenation is 2048 channels of 8x8.
        last_cat = [l for l in desc["layers"] if l["type"] == "cat"][-1]
        self.assertEqual(last_cat["activations"], 2048 * 8 * 8)


SMALL_BUILDERS = {
    "bert": lambda: aegis_models.BertMaskedLM(vocab=50, dim=16, layers=2,
                                              heads=2, hidden=32,
                                              max_positions=8),
    "gpt2": lambda: aegis_models.GPT2LM(vocab=50, dim=16, layers=2, heads=2,
                                        max_positions=8),
    "xlnet": lambda: aegis_models.XLNetClassifier(vocab=50, dim=16, layers=2,
                                                  heads=2, hidden=32),
    "llama": lambda: aegis_models.LlamaLM(vocab=50, dim=16, layers=2,
                                          heads=4, kv_heads=2, hidden=24),
}


class Builders(unittest.TestCase):
    def test_small_transformers_meta_and_cpu_agree(self):
        ids = torch.zeros((1, 8), dtype=torch.long)
        for name, build in SMALL_BUILDERS.items():
            model = build()
            meta = aegis_describe.describe(model, ids, 1, device="meta")
            cpu = aegis_describe.describe(model, ids, 1, device="cpu")
            assert_same_layers(self, meta, cpu, name)
            self.assertEqual(totals(meta)[0],
                             sum(p.numel() for p in model.parameters()), name)

    def test_attention_probabilities_are_layers(self):
        model = SMALL_BUILDERS["gpt2"]()
        desc = aegis_describe.describe(model, torch.zeros((1, 8),
                                                          dtype=torch.long), 1)
        softmax = [l for l in desc["layers"] if l["type"] == "Softmax"]
        # One per layer: heads x tokens x tokens.
        self.assertEqual([l["activations"] for l in softmax], [2 * 8 * 8] * 2)

    def test_fused_attention_keeps_only_the_context(self):
        ids = torch.zeros((1, 8), dtype=torch.long)
        for build in (aegis_models.GPT2LM, aegis_models.BertMaskedLM):
            sizes = dict(vocab=50, dim=16, layers=2, heads=2)
            if build is aegis_models.BertMaskedLM:
                sizes.update(hidden=32, max_positions=8)
            eager = aegis_describe.describe(build(**sizes), ids, 1)
            model = build(attention="fused", **sizes)
            fused = aegis_describe.describe(model, ids, 1, device="meta")
            assert_same_layers(self, fused, aegis_describe.describe(
                model, ids, 1, device="cpu"))
            kinds = [l["type"] for l in fused["layers"]]
            self.assertNotIn("Softmax", kinds)
            attention = [l for l in fused["layers"]
                         if l["type"] == "ScaledDotProduct"]
            # Context only: tokens x width, per layer.
            self.assertEqual([l["activations"] for l in attention],
                             [8 * 16] * 2)
            self.assertEqual(totals(fused), totals(eager))
            # Eager keeps scores, probabilities and dropout, 3 x 2x8x8 more,
            # and its context MatMul in place of the fused layer. (GPT-2's
            # causal mask, 8x8, which masked_fill keeps, is a layer of its
            # own in eager only: fused makes it inside its one layer.)
            def acts(desc):
                return sum(l["activations"] for l in desc["layers"]
                           if l["type"] != "triu")
            self.assertEqual(acts(eager) - acts(fused), 2 * 3 * (2 * 8 * 8))

    def test_catalog_sizes(self):
        # Parameter totals of the public checkpoints these builders mirror
        # (XLNet: less its mask_emb, unused by sequence classification).
        expected = {"bert_base": 108340804, "gpt2_large": 774030080,
                    "gpt2_xl": 1557611200, "xlnet_base": 117309698,
                    "xception": 22855952, "mnist_cnn": 1199882}
        for name, params in expected.items():
            desc = aegis_describe.describe_builder(name, 1, device="meta")
            self.assertEqual(totals(desc)[0], params, name)

    def test_builder_defaults_are_the_catalog_settings(self):
        desc = aegis_describe.describe_builder("llama3_width_8layer", 1,
                                               device="meta")
        self.assertEqual((desc["optimizer"], desc["precision"],
                          desc["input_elements"]), ("adamw", "bf16", 512))
        kinds = {l["type"] for l in desc["layers"]}
        self.assertIn("ScaledDotProduct", kinds)
        desc = aegis_describe.describe_builder("xlnet_base", 1, device="meta")
        self.assertIn("Softmax", {l["type"] for l in desc["layers"]})
        desc = aegis_describe.describe_builder("inception_v3", 1,
                                               device="meta")
        self.assertEqual(desc["input_elements"], 3 * 299 * 299)
        self.assertEqual(desc["optimizer"], "adam")


if __name__ == "__main__":
    common.run_tests()
