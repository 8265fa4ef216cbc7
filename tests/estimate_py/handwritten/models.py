"""Fourteen hand-written training models, none of them torchvision's, for
the estimator's goal check (check_goal.py): each kind the outside check of
issue 26 described, written here from scratch at a size a CI machine's CPU
trains in well under a second. Each model's forward computes its loss, as
a training step does, so that the logits and the loss's saved tensors are
part of what is described and measured.

KINDS lists them: name, builder, one-sample example input, training batch
size and precision.
"""

import collections
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

Kind = collections.namedtuple("Kind", "name build example batch precision")


def _ids(length, vocab, seed=1):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (1, length), generator=gen)


class Attention(nn.Module):
    """Eager multi-head attention: q, k, v projections, scores, softmax,
    dropout, context; causal and/or a padding mask (1 keep, 0 pad)."""

    def __init__(self, dim, heads, bias=True, causal=False):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(dim, 3 * dim, bias=bias)
        self.proj = nn.Linear(dim, dim, bias=bias)
        self.drop = nn.Dropout(0.1)

    def split(self, x):
        b, t, d = x.shape
        return x.view(b, t, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x, mask=None, bias=None):
        q, k, v = (self.split(p) for p in self.qkv(x).chunk(3, dim=-1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if bias is not None:
            scores = scores + bias
        if self.causal:
            t = x.shape[1]
            causal = torch.ones(t, t, dtype=torch.bool,
                                device=x.device).triu(1)
            scores = scores.masked_fill(causal, float("-inf"))
        if mask is not None:
            scores = scores.masked_fill(mask[:, None, None, :] == 0,
                                        float("-inf"))
        ctx = self.drop(scores.softmax(dim=-1)) @ v
        return self.proj(ctx.transpose(1, 2).flatten(2))


class Block(nn.Module):
    """Pre-norm transformer block with a GELU MLP."""

    def __init__(self, dim, heads, causal=False):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, causal=causal)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(),
                                 nn.Linear(4 * dim, dim), nn.Dropout(0.1))

    def forward(self, x, mask=None):
        x = x + self.attn(self.ln1(x), mask)
        return x + self.mlp(self.ln2(x))


class GPT2(nn.Module):
    """GPT-2: token and position embeddings, causal blocks, a final norm
    and an output head tied to the token embedding through F.linear."""

    def __init__(self, vocab=4096, dim=256, heads=4, layers=4, length=128,
                 ckpt=False):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(length, dim)
        self.drop = nn.Dropout(0.1)
        self.blocks = nn.ModuleList(Block(dim, heads, causal=True)
                                    for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.ckpt = ckpt

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        h = self.drop(self.wte(ids) + self.wpe(pos))
        for block in self.blocks:
            h = checkpoint(block, h) if self.ckpt else block(h)
        logits = F.linear(self.ln_f(h), self.wte.weight)
        return F.cross_entropy(logits[:, :-1].flatten(0, 1),
                               ids[:, 1:].flatten())


class BERT(nn.Module):
    """BERT for masked language modelling: embeddings with a norm,
    post-norm encoder blocks under a padding mask, and the head and loss
    on the masked positions only (hidden[labels != -100])."""

    def __init__(self, vocab=4096, dim=256, heads=4, layers=4, length=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(length, dim)
        self.norm = nn.LayerNorm(dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.GELU(),
                                  nn.LayerNorm(dim), nn.Linear(dim, vocab))

    def forward(self, ids, mask, labels):
        pos = torch.arange(ids.shape[1], device=ids.device)
        h = self.norm(self.tok(ids) + self.pos(pos))
        for block in self.blocks:
            h = block(h, mask)
        picked = labels != -100
        return F.cross_entropy(self.head(h[picked]), labels[picked])


def _bert_example(length=64, vocab=4096):
    ids = _ids(length, vocab)
    mask = torch.ones(1, length, dtype=torch.long)
    mask[:, length * 3 // 4:] = 0
    labels = torch.full((1, length), -100, dtype=torch.long)
    labels[:, ::7] = ids[:, ::7]
    return (ids, mask, labels)


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * \
            self.weight


class T5Layer(nn.Module):
    """A T5 layer: self-attention, cross-attention for a decoder, a ReLU
    feed-forward, each behind an RMS norm, no biases."""

    def __init__(self, dim, heads, decoder):
        super().__init__()
        self.n1, self.n3 = RMSNorm(dim), RMSNorm(dim)
        self.self_attn = Attention(dim, heads, bias=False, causal=decoder)
        self.cross = Attention(dim, heads, bias=False) if decoder else None
        self.n2 = RMSNorm(dim) if decoder else None
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim, bias=False),
                                nn.ReLU(), nn.Dropout(0.1),
                                nn.Linear(4 * dim, dim, bias=False))

    def forward(self, x, bias, memory=None):
        x = x + self.self_attn(self.n1(x), bias=bias)
        if self.cross is not None:
            x = x + self.cross_attend(self.n2(x), memory)
        return x + self.ff(self.n3(x))

    def cross_attend(self, x, memory):
        att = self.cross
        q = att.split(F.linear(x, att.qkv.weight[:x.shape[-1]]))
        k, v = (att.split(p) for p in F.linear(
            memory, att.qkv.weight[x.shape[-1]:]).chunk(2, dim=-1))
        probs = att.drop((q @ k.transpose(-2, -1)).softmax(dim=-1))
        return att.proj((probs @ v).transpose(1, 2).flatten(2))


class T5(nn.Module):
    """T5: a shared embedding, an encoder and a decoder with a learned
    relative-position bias table owned by the model, and an LM head."""

    def __init__(self, vocab=4096, dim=256, heads=4, layers=2, buckets=32):
        super().__init__()
        self.shared = nn.Embedding(vocab, dim)
        self.rel = nn.Parameter(torch.zeros(buckets, heads))
        self.enc = nn.ModuleList(T5Layer(dim, heads, False)
                                 for _ in range(layers))
        self.dec = nn.ModuleList(T5Layer(dim, heads, True)
                                 for _ in range(layers))
        self.enc_norm, self.dec_norm = RMSNorm(dim), RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.buckets = buckets

    def bias(self, t, device):
        pos = torch.arange(t, device=device)
        rel = (pos[None, :] - pos[:, None]).clamp(-self.buckets // 2,
                                                  self.buckets // 2 - 1)
        return self.rel[rel + self.buckets // 2].permute(2, 0, 1)[None]

    def forward(self, src, tgt):
        h = self.shared(src)
        bias = self.bias(src.shape[1], src.device)
        for layer in self.enc:
            h = layer(h, bias)
        memory = self.enc_norm(h)
        y = self.shared(tgt[:, :-1])
        bias = self.bias(y.shape[1], y.device)
        for layer in self.dec:
            y = layer(y, bias, memory)
        logits = self.lm_head(self.dec_norm(y))
        return F.cross_entropy(logits.flatten(0, 1), tgt[:, 1:].flatten())


class ViT(nn.Module):
    """ViT: patch embedding by a strided convolution, a class token and
    position table owned by the model, pre-norm blocks, a class head."""

    def __init__(self, image=64, patch=8, dim=256, heads=4, layers=4,
                 classes=100):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        count = (image // patch) ** 2
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.zeros(1, count + 1, dim))
        self.blocks = nn.Sequential(*(Block(dim, heads)
                                      for _ in range(layers)))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        h = self.patch(x).flatten(2).transpose(1, 2)
        h = torch.cat([self.cls.expand(h.shape[0], -1, -1), h], dim=1)
        h = self.blocks(h + self.pos)
        return self.head(self.norm(h[:, 0]))


class AutocastViT(ViT):
    """The ViT run under torch.autocast in bf16 on whatever device its
    input is, as a mixed-precision training script does."""

    def forward(self, x):
        with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
            return super().forward(x).float()


class LSTMLM(nn.Module):
    """An LSTM language model: embedding, two LSTM layers with dropout,
    a vocabulary head, the loss."""

    def __init__(self, vocab=4096, dim=128, hidden=256):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, 2, dropout=0.2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids):
        out, _ = self.lstm(self.embed(ids[:, :-1]))
        return F.cross_entropy(self.head(out).flatten(0, 1),
                               ids[:, 1:].flatten())


class GRUSeq2Seq(nn.Module):
    """A GRU encoder-decoder (time-major, as torch's RNNs default to):
    the decoder starts from the encoder's last state and attends to its
    outputs with dot-product attention; the head reads the time-major
    outputs transposed to batch-major (a copy, except at batch 1)."""

    def __init__(self, vocab=4096, dim=128, hidden=256):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, dim)
        self.tgt_embed = nn.Embedding(vocab, dim)
        self.encoder = nn.GRU(dim, hidden)
        self.decoder = nn.GRU(dim, hidden)
        self.out = nn.Linear(2 * hidden, vocab)

    def forward(self, src, tgt):
        enc, state = self.encoder(self.src_embed(src.t()))
        dec, _ = self.decoder(self.tgt_embed(tgt[:, :-1].t()), state)
        scores = torch.einsum("tbh,sbh->bts", dec, enc)
        context = torch.einsum("bts,sbh->tbh", scores.softmax(dim=-1), enc)
        joined = torch.tanh(torch.cat([dec, context], dim=-1))
        logits = self.out(joined.transpose(0, 1))
        return F.cross_entropy(logits.flatten(0, 1), tgt[:, 1:].flatten())


def _conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """A U-Net: three levels down by max pooling, up by transposed
    convolutions, skips joined by torch.cat, a per-pixel loss."""

    def __init__(self, widths=(32, 64, 128, 256), classes=4):
        super().__init__()
        self.down = nn.ModuleList(_conv_block(cin, cout) for cin, cout in
                                  zip((3,) + widths[:-1], widths))
        self.up = nn.ModuleList(nn.ConvTranspose2d(w, w // 2, 2, stride=2)
                                for w in reversed(widths[1:]))
        self.merge = nn.ModuleList(_conv_block(w, w // 2)
                                   for w in reversed(widths[1:]))
        self.head = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x):
        skips = []
        for i, block in enumerate(self.down):
            x = block(x if i == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        x = skips.pop()
        for up, merge in zip(self.up, self.merge):
            x = merge(torch.cat([skips.pop(), up(x)], dim=1))
        logits = self.head(x)
        return F.cross_entropy(logits, torch.zeros(
            logits.shape[0], *logits.shape[2:], dtype=torch.long,
            device=logits.device))


class DLRM(nn.Module):
    """DLRM: a bottom MLP on the dense features, one embedding table per
    sparse feature, their pairwise dot products, a top MLP, the loss."""

    def __init__(self, dense=13, tables=26, rows=20000, dim=64):
        super().__init__()
        self.bottom = nn.Sequential(nn.Linear(dense, 512), nn.ReLU(),
                                    nn.Linear(512, 256), nn.ReLU(),
                                    nn.Linear(256, dim), nn.ReLU())
        self.tables = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum")
                                    for _ in range(tables))
        pairs = (tables + 1) * tables // 2
        self.top = nn.Sequential(nn.Linear(dim + pairs, 1024), nn.ReLU(),
                                 nn.Linear(1024, 512), nn.ReLU(),
                                 nn.Linear(512, 1))

    def forward(self, dense, sparse):
        x = self.bottom(dense)
        emb = [table(sparse[:, i:i + 1]) for i, table in
               enumerate(self.tables)]
        feats = torch.stack([x] + emb, dim=1)
        dots = feats @ feats.transpose(1, 2)
        i, j = torch.tril_indices(feats.shape[1], feats.shape[1], -1,
                                  device=dense.device)
        z = torch.cat([x, dots[:, i, j]], dim=1)
        return F.binary_cross_entropy_with_logits(
            self.top(z).squeeze(1), torch.ones(dense.shape[0],
                                               device=dense.device))


def _dlrm_example():
    gen = torch.Generator().manual_seed(3)
    return (torch.rand(1, 13, generator=gen),
            torch.randint(0, 20000, (1, 26), generator=gen))


class MoE(nn.Module):
    """A transformer with a top-2 mixture-of-experts feed-forward: each
    token goes to its two best experts, gathered by index."""

    def __init__(self, vocab=4096, dim=256, heads=4, experts=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.attn = Attention(dim, heads, causal=True)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.router = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(),
                          nn.Linear(4 * dim, dim)) for _ in range(experts))
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        h = self.embed(ids)
        h = h + self.attn(self.ln1(h))
        x = self.ln2(h).flatten(0, 1)
        weight, choice = self.router(x).softmax(-1).topk(2, dim=-1)
        out = torch.zeros_like(x)
        for index, expert in enumerate(self.experts):
            token, slot = (choice == index).nonzero(as_tuple=True)
            if token.numel():
                out = out.index_add(0, token, expert(x[token]) *
                                    weight[token, slot, None])
        logits = self.head(h.flatten(0, 1) + out)
        return F.cross_entropy(logits[:-1], ids.flatten()[1:])


class C3D(nn.Module):
    """C3D for clips: 3-D convolutions and max pooling, two dropout
    fully connected layers, a class head."""

    def __init__(self, classes=101, widths=(32, 64, 128, 128), frames=16,
                 size=48):
        super().__init__()
        layers, cin = [], 3
        for i, width in enumerate(widths):
            layers += [nn.Conv3d(cin, width, 3, padding=1), nn.ReLU(),
                       nn.MaxPool3d((1, 2, 2) if i == 0 else 2)]
            cin = width
        self.features = nn.Sequential(*layers)
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(
            cin * (frames // 8) * (size // 16) ** 2, 1024),
                                nn.ReLU(), nn.Dropout(0.5),
                                nn.Linear(1024, 1024), nn.ReLU(),
                                nn.Dropout(0.5), nn.Linear(1024, classes))

    def forward(self, clip):
        return self.fc(self.features(clip))


class ALBERT(nn.Module):
    """ALBERT: a factorised embedding (small E projected to the hidden
    size) and ONE block whose weights every layer shares."""

    def __init__(self, vocab=4096, emb=128, dim=256, heads=4, layers=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, emb)
        self.project = nn.Linear(emb, dim)
        self.block = Block(dim, heads)
        self.layers = layers
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        h = self.project(self.tok(ids))
        for _ in range(self.layers):
            h = self.block(h)
        return F.cross_entropy(self.head(h).flatten(0, 1), ids.flatten())


class InplaceAttention(nn.Module):
    """A causal transformer whose attention scales, masks and drops out
    its scores in place, and whose MLP activation is in place."""

    def __init__(self, vocab=4096, dim=256, heads=4, layers=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.qkv = nn.ModuleList(nn.Linear(dim, 3 * dim)
                                 for _ in range(layers))
        self.mlp = nn.ModuleList(nn.Sequential(
            nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.ReLU(inplace=True),
            nn.Linear(4 * dim, dim)) for _ in range(layers))
        self.heads = heads
        self.head = nn.Linear(dim, vocab)

    def attend(self, qkv, x):
        b, t, d = x.shape
        q, k, v = (p.view(b, t, self.heads, -1).transpose(1, 2)
                   for p in qkv(x).chunk(3, dim=-1))
        scores = q @ k.transpose(-2, -1)
        scores.mul_(1 / math.sqrt(q.shape[-1]))
        scores.masked_fill_(torch.ones(t, t, dtype=torch.bool,
                                       device=x.device).triu(1),
                            float("-inf"))
        probs = F.dropout(scores.softmax(-1), 0.1, self.training)
        return (probs @ v).transpose(1, 2).flatten(2)

    def forward(self, ids):
        h = self.embed(ids)
        for qkv, mlp in zip(self.qkv, self.mlp):
            h = h + self.attend(qkv, h)
            h = h + mlp(h)
        return F.cross_entropy(self.head(h[:, :-1]).flatten(0, 1),
                               ids[:, 1:].flatten())


KINDS = [
    Kind("gpt2", GPT2, lambda: _ids(64, 4096), 4, "fp32"),
    Kind("bert_padding_mask", BERT, _bert_example, 4, "fp32"),
    Kind("t5", T5, lambda: (_ids(64, 4096), _ids(48, 4096, 2)), 4, "fp32"),
    Kind("vit", ViT, lambda: torch.rand(1, 3, 64, 64), 8, "fp32"),
    Kind("lstm_lm", LSTMLM, lambda: _ids(65, 4096), 4, "fp32"),
    Kind("gru_seq2seq", GRUSeq2Seq,
         lambda: (_ids(64, 4096), _ids(65, 4096, 2)), 4, "fp32"),
    Kind("unet", UNet, lambda: torch.rand(1, 3, 64, 64), 4, "fp32"),
    Kind("dlrm", DLRM, _dlrm_example, 128, "fp32"),
    Kind("moe", MoE, lambda: _ids(64, 4096), 4, "fp32"),
    Kind("gpt2_checkpointed", lambda: GPT2(ckpt=True),
         lambda: _ids(64, 4096), 4, "fp32"),
    Kind("vit_autocast_bf16", AutocastViT, lambda: torch.rand(1, 3, 64, 64),
         8, "amp_bf16"),
    Kind("c3d", C3D, lambda: torch.rand(1, 3, 16, 48, 48), 2, "fp32"),
    Kind("albert", ALBERT, lambda: _ids(64, 4096), 4, "fp32"),
    Kind("inplace_attention", InplaceAttention, lambda: _ids(64, 4096), 4,
         "fp32"),
]
