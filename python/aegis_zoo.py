"""The models the extractor is checked on, and the check itself.

The zoo: every non-quantized torchvision model (classification,
segmentation, detection, video, optical flow) and five hand-written kinds
of model that torchvision lacks (a transformer encoder, an LSTM language
model, a U-Net with skip connections, a language model with tied weights,
a mixture of experts with data-dependent routing).

The check, per model: the description (aegis_describe.describe, batch 1)
against what can be measured without a GPU, the bytes autograd saves for
backward in one CPU training-mode forward pass of one sample
(torch.autograd.graph.saved_tensors_hooks, each storage counted once,
parameters, buffers and the input left out, only what is still saved when
forward returns). The description's figure for the same pass is its saved
elements at 4 bytes, its fixed-size bytes and its dropout masks at 4 bytes
(the CPU keeps them as float noise; a GPU keeps a byte each, which is what
the estimator then counts). Parameters must match model.parameters()
exactly. The measurement here shares no code with the extractor's
recorder, so that a fault there shows.

Used by tests/estimate_py/test_zoo.py (a representative subset) and
bench/estimate/bench_zoo.py (the whole zoo, a table).
"""

import collections
import time

import torch
from torch import nn

import aegis_describe
import aegis_models

# Inputs small enough for a shared CPU, where the model allows one
# (transformers with fixed position tables do not: ViT, MaxViT, MViT).
_SMALL_SHAPES = {"image": (3, 64, 64), "video": (3, 8, 64, 64),
                 "flow": (3, 128, 128)}
_FULL_SIZE = ("vit_", "maxvit", "swin", "mvit", "s3d")
_MIN_SHAPES = {"inception_v3": (3, 80, 80), "googlenet": (3, 64, 64)}

ACTIVATION_BOUNDS = (0.8, 1.25)

Entry = collections.namedtuple("Entry", "name kind build example")


# ---- the hand-written kinds -------------------------------------------------

class TransformerEncoderModel(nn.Module):
    """Token embedding, nn.TransformerEncoder (post-norm, ReLU, dropout
    0.1), a classifier over the mean token."""

    def __init__(self, vocab=1000, dim=512, heads=8, layers=6, classes=10):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(dim, classes)

    def forward(self, ids):
        return self.head(self.encoder(self.embed(ids)).mean(dim=1))


class LSTMLanguageModel(nn.Module):
    """Embedding, a two-layer LSTM with dropout between layers, a
    vocabulary head."""

    def __init__(self, vocab=2000, dim=256, hidden=512, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, layers, dropout=0.2,
                            batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids):
        out, _ = self.lstm(self.embed(ids))
        return self.head(out)


def _double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class SkipUNet(nn.Module):
    """A three-level U-Net: max-pooled encoder, transposed-convolution
    decoder, each level's encoder output concatenated in (torch.cat in the
    forward, no module for it)."""

    def __init__(self, widths=(32, 64, 128), classes=3):
        super().__init__()
        self.down = nn.ModuleList()
        cin = 3
        for width in widths:
            self.down.append(_double_conv(cin, width))
            cin = width
        self.pool = nn.MaxPool2d(2)
        self.bottom = _double_conv(widths[-1], 2 * widths[-1])
        self.up = nn.ModuleList()
        self.merge = nn.ModuleList()
        cin = 2 * widths[-1]
        for width in reversed(widths):
            self.up.append(nn.ConvTranspose2d(cin, width, 2, stride=2))
            self.merge.append(_double_conv(2 * width, width))
            cin = width
        self.out = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x):
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottom(x)
        for up, merge, skip in zip(self.up, self.merge, reversed(skips)):
            x = merge(torch.cat([up(x), skip], dim=1))
        return self.out(x)


class TiedLanguageModel(nn.Module):
    """Embedding, a GELU MLP block with layer norm, and an output layer
    whose weight is the embedding's."""

    def __init__(self, vocab=5000, dim=256):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.block = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 4 * dim),
                                   nn.GELU(), nn.Linear(4 * dim, dim),
                                   nn.Dropout(0.1))
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        x = self.embed(ids)
        return self.head(x + self.block(x))


class MixtureOfExperts(nn.Module):
    """Top-1 routing of each token to one of several feed-forward experts,
    with the tokens of each expert gathered by index: which experts run,
    and on how many tokens, depends on the input's values."""

    def __init__(self, vocab=1000, dim=256, experts=4, hidden=1024):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.router = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, hidden), nn.GELU(),
                          nn.Linear(hidden, dim)) for _ in range(experts))
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        x = self.embed(ids).flatten(0, 1)
        weight, choice = torch.softmax(self.router(x), dim=-1).max(dim=-1)
        out = torch.zeros_like(x)
        for index, expert in enumerate(self.experts):
            tokens = (choice == index).nonzero().squeeze(1)
            if tokens.numel():
                out = out.index_add(0, tokens, expert(x[tokens]) *
                                    weight[tokens, None])
        return self.head(out).view(ids.shape[0], ids.shape[1], -1)


def _tokens(length, vocab):
    def example():
        gen = torch.Generator().manual_seed(7)
        return torch.randint(0, vocab, (1, length), generator=gen)
    return example


HANDWRITTEN = [
    Entry("transformer_encoder", "handwritten", TransformerEncoderModel,
          _tokens(512, 1000)),
    Entry("lstm_lm", "handwritten", LSTMLanguageModel, _tokens(128, 2000)),
    Entry("unet_skips", "handwritten", SkipUNet,
          lambda: torch.rand(1, 3, 64, 64)),
    Entry("tied_lm", "handwritten", TiedLanguageModel, _tokens(256, 5000)),
    Entry("mixture_of_experts", "handwritten", MixtureOfExperts,
          _tokens(64, 1000)),
]


# ---- torchvision ------------------------------------------------------------

def _torchvision_entry(name):
    spec = aegis_models.lookup(name)
    shape = _MIN_SHAPES.get(name)
    if shape is None and spec.input_kind in _SMALL_SHAPES and \
       not name.startswith(_FULL_SIZE):
        shape = _SMALL_SHAPES[spec.input_kind]

    def example():
        gen = torch.Generator().manual_seed(7)
        value = aegis_describe.example_input_for(spec, shape, device="cpu")
        # Random pixels: some models' work depends on them (detection).
        if spec.input_kind == "detection":
            images, targets = value
            return ([torch.rand(images[0].shape, generator=gen)], targets)
        if isinstance(value, tuple):
            return tuple(torch.rand(v.shape, generator=gen) for v in value)
        return torch.rand(value.shape, generator=gen)
    return Entry(name, spec.input_kind, lambda: spec.build(), example)


def zoo():
    """Every entry: torchvision's models by name, then the hand-written."""
    names = [s.name for s in aegis_models.all_specs() if s.torchvision]
    return [_torchvision_entry(n) for n in names] + HANDWRITTEN


def entry(name):
    for item in HANDWRITTEN:
        if item.name == name:
            return item
    return _torchvision_entry(name)


# ---- measuring --------------------------------------------------------------

def tensors_of(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors_of(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors_of(item)


def call_with(module, example):
    if isinstance(example, tuple):
        return module(*example)
    return module(example)


class _Held:
    """A saved tensor, detached: holding a saved output with its grad_fn
    would make a cycle through the graph that is never freed."""
    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor):
        # (Only a tensor with a grad_fn can close the cycle; detaching a
        # scalar autograd wrapped would fail under a dispatch mode.)
        self.tensor = tensor if tensor.grad_fn is None else tensor.detach()


def saved_bytes_on_cpu(module, example):
    """Bytes autograd keeps for backward after one training-mode forward
    pass on CPU (batch norm in eval mode, as the extractor runs it): each
    storage once, parameters, buffers and the input's storages not
    counted, nor what a dropped branch saved."""
    flags = [(m, m.training) for m in module.modules()]
    module.train()
    for mod in module.modules():
        if isinstance(mod, nn.modules.batchnorm._BatchNorm):
            mod.eval()
    try:
        return sum(s.nbytes() for s in saved_storages(module, example))
    finally:
        for mod, training in flags:
            mod.training = training


def saved_storages(module, example, mode=None):
    """The storages autograd keeps after one forward pass of example (in
    the module's train/eval state; under mode, a dispatch mode, if given),
    each once, those of parameters, buffers and the input left out."""
    import contextlib
    import weakref
    held = []

    def pack(tensor):
        holder = _Held(tensor)
        held.append(weakref.ref(holder))
        return holder

    skip = {t.data_ptr() for t in module.parameters()}
    skip |= {t.data_ptr() for t in module.buffers()}
    skip |= {t.data_ptr() for t in tensors_of(example)}
    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(
            pack, lambda holder: holder.tensor), \
            mode or contextlib.nullcontext():
        output = call_with(module, example)
    storages = []
    for ref in held:
        holder = ref()
        if holder is None:
            continue
        storage = holder.tensor.storage()
        if storage.data_ptr() not in skip:
            skip.add(storage.data_ptr())
            storages.append(storage)
    del output
    return storages


def description_cpu_bytes(desc):
    """What the description says autograd keeps on CPU for one sample."""
    return sum(4 * layer.get("saved", 0) + layer.get("saved_bytes", 0) +
               4 * layer.get("masks", 0) for layer in desc["layers"])


def check(item):
    """The row of one zoo entry: parameters (described, real), activation
    bytes per sample (described, autograd), their ratio, the warnings, the
    seconds each side took, and whether it passes."""
    torch.manual_seed(0)
    module = item.build()
    example = item.example()
    start = time.monotonic()
    desc = aegis_describe.describe(module, example, 1, model=item.name)
    described = time.monotonic() - start
    start = time.monotonic()
    actual = saved_bytes_on_cpu(module, example)
    measured = time.monotonic() - start
    params = sum(layer["params"] for layer in desc["layers"])
    real = sum(p.numel() for p in module.parameters() if p.requires_grad)
    ours = description_cpu_bytes(desc)
    ratio = ours / actual if actual else float("inf")
    low, high = ACTIVATION_BOUNDS
    return {"model": item.name, "kind": item.kind, "params": params,
            "real_params": real, "act_bytes": ours, "autograd_bytes": actual,
            "ratio": ratio, "warnings": desc.get("warnings", []),
            "describe_s": described, "autograd_s": measured,
            "ok": params == real and low <= ratio <= high}
