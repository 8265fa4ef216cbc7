"""The extractor on what hand-written training code does that library
models do not (issue 26, items 10-15): a tied output head through
F.linear, dropout under no_grad, torch.autocast, memory that follows the
labels, activation checkpointing, and operators that copy a batch of two
where they view a batch of one."""
import common

import unittest

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

import aegis_describe
import aegis_record
import aegis_zoo

VOCAB, TOKENS = 512, 16


def ids(length=TOKENS):
    return torch.randint(0, VOCAB, (1, length),
                         generator=torch.Generator().manual_seed(5))


def saved_of(desc):
    return sum(layer["saved"] for layer in desc["layers"])


class TiedHead(nn.Module):
    """Embedding, one MLP, logits from the embedding's weight: through
    F.linear, or through an nn.Linear whose weight is the embedding's."""

    def __init__(self, functional):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.mlp = nn.Sequential(nn.Linear(32, 32), nn.Tanh())
        self.head = None if functional else nn.Linear(32, VOCAB, bias=False)
        if self.head is not None:
            self.head.weight = self.embed.weight

    def forward(self, x):
        h = self.mlp(self.embed(x))
        if self.head is None:
            return F.linear(h, self.embed.weight)
        return self.head(h)


class TiedOutputHead(unittest.TestCase):
    def test_logits_of_f_linear_are_a_layer(self):
        # The logits are the step's largest tensor and gradient: the
        # backward workspace is sized from them.
        functional = aegis_describe.describe(TiedHead(True), ids(), 4)
        module = aegis_describe.describe(TiedHead(False), ids(), 4)
        largest = max(l["activations"] for l in functional["layers"])
        self.assertEqual(largest, TOKENS * VOCAB)
        self.assertEqual(
            sum(l["activations"] for l in functional["layers"]),
            sum(l["activations"] for l in module["layers"]))
        self.assertEqual(functional["layers"][-1]["type"], "linear")


class FreedMasks(nn.Module):
    """Dropout under no_grad (its mask freed at once), then a tensor of
    the same size that autograd keeps, four times over."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x):
        for _ in range(4):
            with torch.no_grad():
                F.dropout(x, 0.5, True)
            x = torch.tanh(x * self.scale)
        return x


class DropoutMasks(unittest.TestCase):
    def test_a_freed_mask_is_not_a_later_activation(self):
        x = torch.rand(1, 4096)
        for device in ("meta", "cpu"):
            desc = aegis_describe.describe(FreedMasks(), x, 1, device=device)
            self.assertEqual(sum(l.get("masks", 0) for l in desc["layers"]),
                             0, device)
            self.assertEqual(saved_of(desc), 4 * 4096, device)


class Autocast(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(64, 1024)
        self.down = nn.Linear(1024, 64)

    def forward(self, x):
        with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
            return self.down(torch.relu(self.up(x))).float()


class AutocastCopies(unittest.TestCase):
    def test_weight_copies_are_not_activations(self):
        desc = aegis_describe.describe(Autocast(), torch.rand(1, 8, 64), 4,
                                       precision="amp_bf16")
        # Per sample autograd keeps the input's bf16 copy (8 x 64) and
        # relu's output (8 x 1024); the weights' bf16 copies (2 x 65536)
        # are made once a step, and counted with the weights.
        self.assertEqual(saved_of(desc), 8 * 64 + 8 * 1024)


class AutocastLoss(Autocast):
    """The loss under autocast: autocast runs cross_entropy in float32
    (its float32 list), and the float32 log-probabilities are kept for
    backward."""

    def forward(self, x):
        with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
            logits = self.down(torch.relu(self.up(x)))
            return F.cross_entropy(logits.flatten(0, 1),
                                   torch.zeros(logits.shape[0] * 8,
                                               dtype=torch.long,
                                               device=x.device))


class AutocastFloat32List(unittest.TestCase):
    def test_float32_kept_by_an_autocast_kernel_is_4_bytes(self):
        # Autocast hides itself while its kernel runs: log_softmax's
        # float32 output, saved there, was counted as saved elements at
        # the job's 2 bytes (a language model's fp32 log-probabilities,
        # its largest saved tensor: activations 0.72x)
        desc = aegis_describe.describe(AutocastLoss(),
                                       torch.rand(1, 8, 64), 4,
                                       precision="amp_bf16")
        self.assertEqual(saved_of(desc), 8 * 64 + 8 * 1024)
        loss = [l for l in desc["layers"] if l["type"] == "cross_entropy"]
        # (and half the loss, a float32 scalar of the pass over two)
        self.assertEqual(loss[0]["saved_bytes"], 8 * 64 * 4 + 2)


class CpuAutocast(Autocast):
    """Autocast as a CPU training script writes it: the device type
    "cpu" named, not taken from the input (a meta input then runs under
    an autocast that casts nothing)."""

    def forward(self, x):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            return self.down(torch.relu(self.up(x))).float()


class CudaAutocastFlag(Autocast):
    """What torch.autocast("cuda") does on a machine with a GPU: CUDA's
    autocast flag on (set here directly: without a GPU, torch.autocast
    disables itself)."""

    def forward(self, x):
        was = torch.is_autocast_enabled()
        torch.set_autocast_enabled(True)
        try:
            return self.down(torch.relu(self.up(x)))
        finally:
            torch.set_autocast_enabled(was)


class NamedAutocastDevice(unittest.TestCase):
    def test_cpu_autocast_is_described_with_its_casts(self):
        # The meta pass ran the forward in float32 under an autocast that
        # casts no meta tensor, every saved float32 counted at 4 bytes as
        # one autocast keeps: 1.76x a ConvNeXt's bf16 activations.
        desc = aegis_describe.describe(CpuAutocast(), torch.rand(1, 8, 64),
                                       4, precision="amp_bf16")
        self.assertEqual(saved_of(desc), 8 * 64 + 8 * 1024)
        self.assertIn("autocast", " ".join(desc.get("warnings", [])))

    def test_cuda_autocast_casts_no_cpu_or_meta_tensor(self):
        # torch.autocast("cuda") on a machine with a GPU sets this flag
        # (without one it disables itself); CPU and meta tensors stay
        # float32 under it, and were counted at 4 bytes each as tensors
        # autocast keeps in float32: twice the job's bf16.
        for device in ("meta", "cpu"):
            desc = aegis_describe.describe(CudaAutocastFlag(),
                                           torch.rand(1, 8, 64), 4,
                                           precision="amp_bf16",
                                           device=device)
            # relu's output; nothing cast, the input saved is the example
            self.assertEqual(saved_of(desc), 8 * 1024, device)
            self.assertNotIn("saved_bytes", str(desc["layers"]), device)

    def test_meta_only_refuses_it(self):
        with self.assertRaisesRegex(aegis_describe.DescribeError,
                                    "autocast"):
            aegis_describe.describe(CpuAutocast(), torch.rand(1, 8, 64), 4,
                                    precision="amp_bf16", device="meta")


class MaskedLM(nn.Module):
    """The loss on the labelled tokens only: hidden[labels != -100]."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.head = nn.Linear(32, VOCAB)

    def forward(self, x, labels):
        picked = labels != -100
        return F.cross_entropy(self.head(self.embed(x)[picked]),
                               labels[picked])


class ValueDependence(unittest.TestCase):
    def test_memory_that_follows_the_labels_is_flagged(self):
        labels = torch.full((1, TOKENS), -100)
        labels[0, :3] = 7
        desc = aegis_describe.describe(MaskedLM(), (ids(), labels), 4)
        self.assertIn("depends on the example input's values",
                      " ".join(desc["warnings"]))

    def test_the_examples_labels_are_described(self):
        # 3 tokens of 16 labelled, as masked language modelling labels a
        # few: the head's logits are kept for those 3, not for all 16 as
        # labels drawn at random would have them (what was described)
        def labelled(count):
            labels = torch.full((1, TOKENS), -100)
            labels[0, :count] = 7
            return aegis_describe.describe(MaskedLM(), (ids(), labels), 4,
                                           device="cpu")
        few, every = labelled(3), labelled(TOKENS)
        self.assertLess(saved_of(few), saved_of(every))
        self.assertIn("the example's pass is described",
                      " ".join(few["warnings"]))

    def test_the_larger_pass_is_described(self):
        # tokens kept where their norm passes 1: none of an all-zeros
        # example (the docs' style), all of other values; the zeros' pass
        # (nothing saved) was described, and the job scheduled on it
        class KeepLarge(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(32, 32)

            def forward(self, h):
                return self.lin(h[h.norm(dim=-1) > 1]).sum()

        desc = aegis_describe.describe(KeepLarge(), torch.zeros(1, 16, 32),
                                       4, device="cpu")
        self.assertGreater(saved_of(desc), 0)
        self.assertIn("the larger of the two passes is described",
                      " ".join(desc["warnings"]))
        # no labels or masks to tell apart: no third pass
        self.assertIn("2 passes", " ".join(desc["warnings"]))


class CountFeatures(nn.Module):
    """Counts (>= 0) through log1p, checked as a data pipeline's model
    checks its input: other values drawn from a normal distribution are
    refused. The head's time-major copy makes a batch of two keep more a
    sample than a batch of one."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 64)
        self.head = nn.Linear(64, 32)

    def forward(self, counts):
        if bool((counts < 0).any()):
            raise ValueError("counts must be >= 0")
        out, _ = self.gru(torch.log1p(counts).transpose(0, 1))
        return self.head(torch.tanh(out).transpose(0, 1))


class OtherValuesRefused(unittest.TestCase):
    def test_the_examples_pass_over_two_is_described(self):
        # The pass on other values failed, and with it the pass over two:
        # "described from one sample: the pass over two failed (... on
        # the example input ...)", which the example had not, and a
        # batch of one described (its view, not the copy of two).
        model, x = CountFeatures(), torch.rand(1, 12, 16)
        desc = aegis_describe.describe(model, x, 8)
        said = " ".join(desc["warnings"])
        self.assertNotIn("described from one sample", said)
        self.assertIn("with batch 2", said)
        self.assertIn("counts must be >= 0", said)
        per_sample = aegis_zoo.saved_bytes_on_cpu(
            model, torch.cat([x, x])) / 2
        self.assertAlmostEqual(
            aegis_zoo.description_cpu_bytes(desc) / per_sample, 1, 2)


class Checkpointed(nn.Module):
    def __init__(self, reentrant, on=True):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64))
            for _ in range(3))
        self.reentrant, self.on = reentrant, on

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=self.reentrant) \
                if self.on else block(x)
        return x


class ActivationCheckpointing(unittest.TestCase):
    def test_recomputation_is_counted_and_said(self):
        x = torch.rand(1, 8, 64)
        # What one block keeps beside its input: GELU's input and output.
        one_block = 2 * 8 * 256
        for reentrant in (True, False):
            desc = aegis_describe.describe(Checkpointed(reentrant), x, 4)
            extra = [l for l in desc["layers"]
                     if l["type"] == aegis_record.CHECKPOINT_RECOMPUTE]
            self.assertEqual(len(extra), 1, reentrant)
            self.assertEqual(extra[0]["saved"], one_block, reentrant)
            self.assertIn("activation checkpointing",
                          " ".join(desc["warnings"]))


class TimeMajorHead(nn.Module):
    """A GRU's time-major output, kept by tanh, then read batch-major by
    the head: a copy for two samples, a view of one."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 64)
        self.head = nn.Linear(64, 32)

    def forward(self, x):
        out, _ = self.gru(x.transpose(0, 1))
        return self.head(torch.tanh(out).transpose(0, 1))


class BatchOfTwo(unittest.TestCase):
    def test_copies_of_a_larger_batch_are_counted(self):
        model, x = TimeMajorHead(), torch.rand(1, 12, 16)
        desc = aegis_describe.describe(model, x, 8, device="cpu")
        per_sample = aegis_zoo.saved_bytes_on_cpu(
            model, torch.cat([x, x])) / 2
        self.assertAlmostEqual(
            aegis_zoo.description_cpu_bytes(desc) / per_sample, 1, 2)
        one = aegis_describe.describe(model, x, 1, device="cpu")
        self.assertLess(aegis_zoo.description_cpu_bytes(one), per_sample)


class WeightNorm(unittest.TestCase):
    def test_weight_norm_model_is_described(self):
        # its weights are no graph leaves: the copy for the meta pass
        # raised a bare RuntimeError; the CPU pass describes it
        model = nn.Sequential(nn.utils.weight_norm(nn.Conv1d(8, 16, 3)),
                              nn.ReLU(),
                              nn.utils.weight_norm(nn.Conv1d(16, 8, 3)))
        desc = aegis_describe.describe(model, torch.zeros(1, 8, 64), 4)
        self.assertEqual(sum(l["params"] for l in desc["layers"]),
                         sum(p.numel() for p in model.parameters()))
        self.assertTrue(any("meta device failed" in w
                            for w in desc.get("warnings", [])), desc)


if __name__ == "__main__":
    common.run_tests()
