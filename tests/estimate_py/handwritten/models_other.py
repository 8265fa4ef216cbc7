"""Fourteen more hand-written training models, one of each kind that
models.py has, written the other way on purpose (issue 26 is re-checked
by outsiders on models of the same kinds written differently): library
blocks where models.py rolls its own (nn.MultiheadAttention,
nn.TransformerEncoderLayer), hand-rolled ones where it uses a library's,
HF-style Conv1D weights and a tanh GELU, packed sequences, a bidirectional
encoder with a GRUCell decoder loop, bilinear upsampling with GroupNorm,
a fused EmbeddingBag table with offsets, capacity-based expert dispatch
with scatter, reentrant and non-reentrant checkpointing mixed, autocast on
a ConvNeXt, BatchNorm3d, weights shared between distinct modules, and
in-place residuals and activations. check_goal.py --models other runs
them. (PyTorch 1.13 has no F.scaled_dot_product_attention: none uses it.)

KINDS lists them as models.py does; each forward computes its loss.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from torch.utils.checkpoint import checkpoint

from models import Kind, _ids

VOCAB = 4096


def _labels(length, every, seed=4):
    """Masked-LM labels: every `every`-th token labelled, the rest -100."""
    labels = torch.full((1, length), -100, dtype=torch.long)
    labels[:, ::every] = _ids(length, VOCAB, seed)[:, ::every]
    return labels


# -- GPT-2 as Hugging Face writes it ---------------------------------------

class Conv1D(nn.Module):
    """GPT-2's Conv1D: a linear layer whose weight is (in, out), run by
    torch.addmm on the flattened tokens."""

    def __init__(self, nin, nout):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nin, nout) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nout))

    def forward(self, x):
        out = torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight)
        return out.view(*x.shape[:-1], -1)


def tanh_gelu(x):
    """GPT-2's GELU, written out: every step of it is an autograd node."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                       (x + 0.044715 * torch.pow(x, 3.0))))


class HFAttention(nn.Module):
    """Causal attention with a registered lower-triangle buffer and
    torch.where against the dtype's minimum, heads merged by
    permute().contiguous()."""

    def __init__(self, dim, heads, length):
        super().__init__()
        self.heads = heads
        self.c_attn, self.c_proj = Conv1D(dim, 3 * dim), Conv1D(dim, dim)
        self.attn_drop, self.resid_drop = nn.Dropout(0.1), nn.Dropout(0.1)
        self.register_buffer("bias", torch.tril(torch.ones(
            length, length, dtype=torch.bool)).view(1, 1, length, length),
            persistent=False)

    def heads_of(self, x):
        b, t, d = x.shape
        return x.view(b, t, self.heads, d // self.heads).permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = map(self.heads_of, self.c_attn(x).split(x.shape[-1], 2))
        # (a 0-d tensor, as Hugging Face divides: under a dispatch mode
        # torch 1.13's non-reentrant checkpoint fails to re-pack a Python
        # scalar's wrapped tensor in backward)
        w = torch.matmul(q, k.transpose(-1, -2)) / torch.full(
            [], math.sqrt(v.shape[-1]), dtype=q.dtype, device=q.device)
        t = x.shape[1]
        w = torch.where(self.bias[:, :, :t, :t], w,
                        torch.tensor(torch.finfo(w.dtype).min,
                                     dtype=w.dtype, device=w.device))
        a = torch.matmul(self.attn_drop(w.softmax(-1)), v)
        a = a.permute(0, 2, 1, 3).contiguous().view(x.shape)
        return self.resid_drop(self.c_proj(a))


class HFBlock(nn.Module):
    def __init__(self, dim, heads, length):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = HFAttention(dim, heads, length)
        self.c_fc, self.c_proj = Conv1D(dim, 4 * dim), Conv1D(4 * dim, dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.drop(self.c_proj(tanh_gelu(self.c_fc(self.ln_2(x)))))


class HFGPT2(nn.Module):
    """GPT-2 with an nn.Linear head whose weight IS the token embedding's
    (tied by assignment), the loss on shifted logits made contiguous (a
    copy of the logits); ckpt checkpoints pairs of blocks, the first pair
    non-reentrant, the next reentrant, and so on."""

    def __init__(self, dim=256, heads=4, layers=4, length=128, ckpt=False):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, dim)
        self.wpe = nn.Embedding(length, dim)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList(HFBlock(dim, heads, length)
                               for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight
        self.ckpt = ckpt

    def run_blocks(self, h):
        if not self.ckpt:
            for block in self.h:
                h = block(h)
            return h
        for i in range(0, len(self.h), 2):
            pair = nn.Sequential(*self.h[i:i + 2])
            h = checkpoint(pair, h, use_reentrant=(i // 2) % 2 == 1)
        return h

    def forward(self, ids):
        pos = torch.arange(0, ids.shape[-1], dtype=torch.long,
                           device=ids.device).unsqueeze(0)
        h = self.run_blocks(self.drop(self.wte(ids) + self.wpe(pos)))
        logits = self.lm_head(self.ln_f(h))
        shift = logits[..., :-1, :].contiguous()
        return F.cross_entropy(shift.view(-1, shift.size(-1)),
                               ids[..., 1:].contiguous().view(-1))


# -- BERT on nn.TransformerEncoder ------------------------------------------

class TorchBERT(nn.Module):
    """BERT from torch's encoder layers under a boolean key padding mask
    (True = pad), token types, an MLM head tied to the word embedding
    with its own bias, the loss over all positions (ignore_index), and a
    next-sentence head on the pooled first token."""

    def __init__(self, dim=256, heads=4, layers=4, length=128):
        super().__init__()
        self.word = nn.Embedding(VOCAB, dim, padding_idx=0)
        self.position = nn.Embedding(length, dim)
        self.token_type = nn.Embedding(2, dim)
        self.emb_norm, self.emb_drop = nn.LayerNorm(dim), nn.Dropout(0.1)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(
            dim, heads, 4 * dim, 0.1, activation="gelu", batch_first=True),
            layers, enable_nested_tensor=False)
        self.transform = nn.Sequential(nn.Linear(dim, dim), nn.GELU(),
                                       nn.LayerNorm(dim))
        self.decoder_bias = nn.Parameter(torch.zeros(VOCAB))
        self.pooler = nn.Linear(dim, dim)
        self.nsp = nn.Linear(dim, 2)

    def forward(self, ids, pad, types, labels):
        pos = torch.arange(ids.shape[1], device=ids.device).expand_as(ids)
        h = self.emb_drop(self.emb_norm(self.word(ids) + self.position(pos) +
                                        self.token_type(types)))
        h = self.encoder(h, src_key_padding_mask=pad)
        logits = F.linear(self.transform(h), self.word.weight,
                          self.decoder_bias)
        mlm = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1),
                              ignore_index=-100)
        pooled = torch.tanh(self.pooler(h[:, 0]))
        return mlm + F.cross_entropy(self.nsp(pooled), types[:, -1])


def _bert_example(length=64):
    pad = torch.zeros(1, length, dtype=torch.bool)
    pad[:, length * 5 // 6:] = True
    types = torch.zeros(1, length, dtype=torch.long)
    types[:, length // 2:] = 1
    return (_ids(length, VOCAB, 7), pad, types, _labels(length, 6))


# -- T5 on nn.MultiheadAttention with a float bias mask ---------------------

def _t5_bucket(relative, bidirectional, buckets=32, max_distance=128):
    """T5's relative-position bucket: exact for near offsets, logarithmic
    for far ones, the sign in its own half where bidirectional."""
    out = torch.zeros_like(relative)
    if bidirectional:
        buckets //= 2
        out += (relative > 0).long() * buckets
        relative = relative.abs()
    else:
        relative = -relative.clamp(max=0)
    exact = buckets // 2
    far = exact + (torch.log(relative.float().clamp(min=1) / exact) /
                   math.log(max_distance / exact) *
                   (buckets - exact)).long().clamp(max=buckets - 1)
    return out + torch.where(relative < exact, relative, far)


class T5Norm(nn.Module):
    """RMS norm as F.normalize times sqrt(dim): another route to T5's."""

    def __init__(self, dim):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))
        self.root = math.sqrt(dim)

    def forward(self, x):
        return F.normalize(x, dim=-1) * self.root * self.scale


class T5MHABlock(nn.Module):
    """Self-attention (and cross-attention) through nn.MultiheadAttention
    given the position bias as a float (batch*heads, L, S) mask, then a
    gated-GELU feed-forward (T5 v1.1)."""

    def __init__(self, dim, heads, cross):
        super().__init__()
        self.n_self, self.n_ff = T5Norm(dim), T5Norm(dim)
        self.self_attn = nn.MultiheadAttention(dim, heads, dropout=0.1,
                                               bias=False, batch_first=True)
        self.n_cross = T5Norm(dim) if cross else None
        self.cross = nn.MultiheadAttention(dim, heads, dropout=0.1,
                                           bias=False, batch_first=True) \
            if cross else None
        self.wi_0 = nn.Linear(dim, 2 * dim, bias=False)
        self.wi_1 = nn.Linear(dim, 2 * dim, bias=False)
        self.wo = nn.Linear(2 * dim, dim, bias=False)
        self.drop = nn.Dropout(0.1)

    def forward(self, x, bias, memory=None):
        y = self.n_self(x)
        x = x + self.drop(self.self_attn(y, y, y, attn_mask=bias,
                                         need_weights=False)[0])
        if self.cross is not None:
            y = self.n_cross(x)
            x = x + self.drop(self.cross(y, memory, memory,
                                         need_weights=False)[0])
        y = self.n_ff(x)
        return x + self.drop(self.wo(F.gelu(self.wi_0(y)) * self.wi_1(y)))


class MHAT5(nn.Module):
    """T5 with a bias table per stack (an nn.Embedding of buckets x
    heads), a causal decoder bias, and an LM head tied to the shared
    embedding through F.linear, scaled by dim ** -0.5."""

    def __init__(self, dim=256, heads=4, layers=2):
        super().__init__()
        self.shared = nn.Embedding(VOCAB, dim)
        self.enc_rel, self.dec_rel = nn.Embedding(32, heads), \
            nn.Embedding(32, heads)
        self.enc = nn.ModuleList(T5MHABlock(dim, heads, False)
                                 for _ in range(layers))
        self.dec = nn.ModuleList(T5MHABlock(dim, heads, True)
                                 for _ in range(layers))
        self.enc_norm, self.dec_norm = T5Norm(dim), T5Norm(dim)
        self.heads, self.dim = heads, dim

    def bias(self, table, batch, t, causal, device):
        pos = torch.arange(t, device=device)
        bucket = _t5_bucket(pos[None, :] - pos[:, None], not causal)
        bias = table(bucket).permute(2, 0, 1)
        if causal:
            bias = bias.masked_fill(torch.ones(t, t, dtype=torch.bool,
                                               device=device).triu(1),
                                    float("-inf"))
        return bias.unsqueeze(0).expand(batch, -1, -1, -1).reshape(
            batch * self.heads, t, t)

    def forward(self, src, tgt):
        b = src.shape[0]
        h = self.shared(src)
        bias = self.bias(self.enc_rel, b, src.shape[1], False, src.device)
        for block in self.enc:
            h = block(h, bias)
        memory = self.enc_norm(h)
        y = self.shared(tgt[:, :-1])
        bias = self.bias(self.dec_rel, b, y.shape[1], True, y.device)
        for block in self.dec:
            y = block(y, bias, memory)
        logits = F.linear(self.dec_norm(y) * self.dim ** -0.5,
                          self.shared.weight)
        return F.cross_entropy(logits.reshape(-1, VOCAB),
                               tgt[:, 1:].reshape(-1))


# -- ViT on nn.TransformerEncoder, patches by unfold ------------------------

class UnfoldViT(nn.Module):
    """ViT whose patches are cut by Tensor.unfold and embedded by an
    nn.Linear, pre-norm torch encoder layers, mean pooling instead of a
    class token, a label-smoothed loss."""

    def __init__(self, image=64, patch=8, dim=256, heads=4, layers=4,
                 classes=100):
        super().__init__()
        self.patch = patch
        self.embed = nn.Linear(3 * patch * patch, dim)
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2, dim) *
                                0.02)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(
            dim, heads, 4 * dim, 0.1, activation="gelu", batch_first=True,
            norm_first=True), layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x, label):
        p = self.patch
        patches = x.unfold(2, p, p).unfold(3, p, p)     # b c h w p p
        patches = patches.permute(0, 2, 3, 1, 4, 5).flatten(3).flatten(1, 2)
        h = self.encoder(self.embed(patches) + self.pos)
        logits = self.head(self.norm(h.mean(dim=1)))
        return F.cross_entropy(logits, label, label_smoothing=0.1)


def _image_and_label(size=64, label=7):
    gen = torch.Generator().manual_seed(9)
    return (torch.rand(1, 3, size, size, generator=gen),
            torch.tensor([label]))


# -- an LSTM LM over packed sequences -----------------------------------------

class PackedLSTMLM(nn.Module):
    """An LSTM LM over pack_padded_sequence (lengths per sample, unsorted),
    two layers with a projection (proj_size) and inter-layer dropout, the
    padded output cut to the input's length, a head tied to the
    embedding, padded targets ignored."""

    def __init__(self, dim=128, hidden=512):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.drop = nn.Dropout(0.25)
        self.lstm = nn.LSTM(dim, hidden, num_layers=2, dropout=0.25,
                            batch_first=True, proj_size=dim)

    def forward(self, ids, lengths):
        inputs, targets = ids[:, :-1], ids[:, 1:]
        packed = pack_padded_sequence(self.drop(self.embed(inputs)),
                                      lengths.cpu(), batch_first=True,
                                      enforce_sorted=False)
        out, _ = pad_packed_sequence(self.lstm(packed)[0], batch_first=True,
                                     total_length=inputs.shape[1])
        logits = F.linear(self.drop(out), self.embed.weight)
        steps = torch.arange(inputs.shape[1], device=ids.device)
        targets = targets.masked_fill(steps[None] >= lengths[:, None], -100)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


# -- a bidirectional GRU encoder, a GRUCell decoder with additive attention -

class BahdanauSeq2Seq(nn.Module):
    """Two-layer bidirectional GRU encoder (batch first), a bridge to the
    decoder's state, and a GRUCell decoder stepped in a Python loop with
    additive (Bahdanau) attention and teacher forcing."""

    def __init__(self, dim=128, hidden=256):
        super().__init__()
        self.src_embed = nn.Embedding(VOCAB, dim)
        self.tgt_embed = nn.Embedding(VOCAB, dim)
        self.encoder = nn.GRU(dim, hidden, num_layers=2, batch_first=True,
                              bidirectional=True, dropout=0.1)
        self.bridge = nn.Linear(2 * hidden, hidden)
        self.keys = nn.Linear(2 * hidden, hidden, bias=False)
        self.query = nn.Linear(hidden, hidden, bias=False)
        self.energy = nn.Linear(hidden, 1, bias=False)
        self.cell = nn.GRUCell(dim + 2 * hidden, hidden)
        self.out = nn.Linear(hidden + 2 * hidden, VOCAB)

    def attend(self, state, enc, keys):
        scores = self.energy(torch.tanh(keys + self.query(state)[:, None]))
        weights = scores.squeeze(2).softmax(dim=1)
        return torch.bmm(weights[:, None], enc).squeeze(1)

    def forward(self, src, tgt):
        enc, _ = self.encoder(self.src_embed(src))
        keys = self.keys(enc)
        state = torch.tanh(self.bridge(enc.mean(dim=1)))
        embedded = self.tgt_embed(tgt[:, :-1])
        steps = []
        for t in range(embedded.shape[1]):
            context = self.attend(state, enc, keys)
            state = self.cell(torch.cat([embedded[:, t], context], 1), state)
            steps.append(torch.cat([state, context], 1))
        logits = self.out(torch.stack(steps, dim=1))
        return F.cross_entropy(logits.reshape(-1, VOCAB),
                               tgt[:, 1:].reshape(-1))


# -- a U-Net with strided convs down and bilinear upsampling up ---------------

class ResConv(nn.Module):
    """Two GroupNorm + SiLU convolutions with a 1x1 shortcut."""

    def __init__(self, cin, cout):
        super().__init__()
        self.body = nn.Sequential(
            nn.GroupNorm(8, cin) if cin >= 8 else nn.Identity(), nn.SiLU(),
            nn.Conv2d(cin, cout, 3, padding=1),
            nn.GroupNorm(8, cout), nn.SiLU(),
            nn.Conv2d(cout, cout, 3, padding=1))
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        return self.skip(x) + self.body(x)


class UpsampleUNet(nn.Module):
    """Down by stride-2 convolutions, up by nn.Upsample (bilinear) and a
    1x1 convolution, skips joined by torch.cat, a BCE + Dice loss on a
    float mask given as the second input."""

    def __init__(self, widths=(32, 64, 128, 256)):
        super().__init__()
        self.stem = nn.Conv2d(3, widths[0], 3, padding=1)
        self.enc = nn.ModuleList(ResConv(w, w) for w in widths[:-1])
        self.downs = nn.ModuleList(nn.Conv2d(a, b, 3, stride=2, padding=1)
                                   for a, b in zip(widths, widths[1:]))
        self.mid = ResConv(widths[-1], widths[-1])
        self.ups = nn.ModuleList(nn.Sequential(
            nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
            nn.Conv2d(b, a, 1)) for a, b in zip(widths, widths[1:]))
        self.dec = nn.ModuleList(ResConv(2 * w, w) for w in widths[:-1])
        self.head = nn.Conv2d(widths[0], 1, 1)

    def forward(self, x, mask):
        x, skips = self.stem(x), []
        for block, down in zip(self.enc, self.downs):
            x = block(x)
            skips.append(x)
            x = down(x)
        x = self.mid(x)
        for i in reversed(range(len(self.dec))):
            x = self.dec[i](torch.cat([self.ups[i](x), skips[i]], dim=1))
        logits = self.head(x)
        probs = torch.sigmoid(logits)
        dice = 1 - (2 * (probs * mask).sum() + 1) / (probs.sum() +
                                                     mask.sum() + 1)
        return F.binary_cross_entropy_with_logits(logits, mask) + dice


def _image_and_mask(size=64):
    gen = torch.Generator().manual_seed(11)
    image = torch.rand(1, 3, size, size, generator=gen)
    return (image, (image[:, :1] > 0.5).float())


# -- DLRM with one fused EmbeddingBag and offsets ------------------------------

class FusedDLRM(nn.Module):
    """DLRM whose 26 sparse features share ONE EmbeddingBag (each
    feature's rows at its offset, a registered buffer), three ids a
    feature pooled by bag offsets, log1p dense features, the upper
    triangle of the interactions by a boolean mask, a sigmoid and
    F.binary_cross_entropy on a click label."""

    def __init__(self, dense=13, tables=26, rows=20000, dim=64, hot=3):
        super().__init__()
        self.hot = hot
        self.bottom = nn.Sequential(nn.Linear(dense, 256), nn.ReLU(),
                                    nn.Linear(256, dim), nn.ReLU())
        self.table = nn.EmbeddingBag(tables * rows, dim, mode="sum")
        self.register_buffer("row_offsets", torch.arange(tables) * rows)
        pairs = (tables + 1) * tables // 2
        self.register_buffer("upper", torch.ones(
            tables + 1, tables + 1, dtype=torch.bool).triu(1))
        self.top = nn.Sequential(nn.Linear(dim + pairs, 512), nn.ReLU(),
                                 nn.Linear(512, 256), nn.ReLU(),
                                 nn.Linear(256, 1))

    def forward(self, dense, sparse, click):
        b, features = sparse.shape[:2]
        x = self.bottom(torch.log1p(dense))
        flat = (sparse + self.row_offsets[None, :, None]).reshape(-1)
        bags = torch.arange(0, flat.numel(), self.hot, device=flat.device)
        emb = self.table(flat, bags).view(b, features, -1)
        feats = torch.cat([x[:, None], emb], dim=1)
        inter = torch.bmm(feats, feats.transpose(1, 2))
        z = torch.cat([x, inter[:, self.upper]], dim=1)
        prob = torch.sigmoid(self.top(z)).squeeze(1)
        return F.binary_cross_entropy(prob, click)


def _dlrm_example():
    gen = torch.Generator().manual_seed(13)
    return (torch.rand(1, 13, generator=gen) * 100,
            torch.randint(0, 20000, (1, 26, 3), generator=gen),
            torch.ones(1))


# -- MoE with capacity-based dispatch by scatter ------------------------------

class CapacityMoE(nn.Module):
    """Top-2 experts as batched weights (E, d, h): tokens are scattered
    into per-expert slots of a fixed capacity (overflow dropped), run by
    torch.bmm, and combined back with scatter_add; a load-balancing
    auxiliary loss."""

    def __init__(self, dim, experts=4, factor=1.25):
        super().__init__()
        self.experts, self.factor = experts, factor
        self.router = nn.Linear(dim, experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(experts, dim, 4 * dim) * 0.02)
        self.w2 = nn.Parameter(torch.randn(experts, 4 * dim, dim) * 0.02)

    def forward(self, x):
        n, d = x.shape
        probs = self.router(x).softmax(dim=-1)
        weight, choice = probs.topk(2, dim=-1)
        weight = weight / weight.sum(dim=-1, keepdim=True)
        capacity = math.ceil(self.factor * 2 * n / self.experts)
        expert = choice.t().reshape(-1)              # first choices first
        onehot = F.one_hot(expert, self.experts)
        slot = ((onehot.cumsum(0) - 1) * onehot).sum(-1)
        keep = slot < capacity
        index = (expert * capacity + slot)[keep]
        token = torch.arange(n, device=x.device).repeat(2)[keep]
        slots = x.new_zeros(self.experts * capacity, d).index_copy(
            0, index, x[token])
        hidden = F.gelu(torch.bmm(slots.view(self.experts, capacity, d),
                                  self.w1))
        done = torch.bmm(hidden, self.w2).view(-1, d)[index]
        done = done * weight.t().reshape(-1)[keep, None]
        out = torch.zeros_like(x).scatter_add(0, token[:, None].expand(-1, d),
                                              done)
        balance = self.experts * (onehot[:n].float().mean(0) *
                                  probs.mean(0)).sum()
        return out, balance


class MoELM(nn.Module):
    """Two causal layers of nn.MultiheadAttention and a CapacityMoE."""

    def __init__(self, dim=256, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.attn = nn.ModuleList(nn.MultiheadAttention(
            dim, heads, dropout=0.1, batch_first=True) for _ in range(layers))
        self.moe = nn.ModuleList(CapacityMoE(dim) for _ in range(layers))
        self.norms = nn.ModuleList(nn.LayerNorm(dim)
                                   for _ in range(2 * layers))
        self.head = nn.Linear(dim, VOCAB)

    def forward(self, ids):
        t = ids.shape[1]
        causal = torch.triu(torch.full((t, t), float("-inf"),
                                       device=ids.device), 1)
        h, aux = self.embed(ids), 0.0
        for i, (attn, moe) in enumerate(zip(self.attn, self.moe)):
            y = self.norms[2 * i](h)
            h = h + attn(y, y, y, attn_mask=causal, need_weights=False)[0]
            out, balance = moe(self.norms[2 * i + 1](h).flatten(0, 1))
            h, aux = h + out.view_as(h), aux + balance
        logits = self.head(h[:, :-1])
        return F.cross_entropy(logits.flatten(0, 1),
                               ids[:, 1:].flatten()) + 0.01 * aux


# -- autocast bf16 on a ConvNeXt ----------------------------------------------

class Float32LayerNorm(nn.LayerNorm):
    """LayerNorm run in float32 and cast back, as CLIP writes it (torch
    1.13's CPU autocast cannot norm a bfloat16 input with float32
    weights)."""

    def forward(self, x):
        return super().forward(x.float()).to(x.dtype)


class ConvNeXtBlock(nn.Module):
    """Depthwise 7x7, channels-last LayerNorm, a Linear MLP, layer scale."""

    def __init__(self, dim):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = Float32LayerNorm(dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 1e-6))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.gamma * self.fc2(F.gelu(self.fc1(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


class AutocastConvNeXt(nn.Module):
    """A small ConvNeXt whose forward and loss run under
    torch.autocast("cpu", bfloat16), as a CPU training script does
    (autocast computes the loss in float32 itself)."""

    def __init__(self, widths=(64, 128, 256), depth=2, classes=100):
        super().__init__()
        stages, cin = [nn.Conv2d(3, widths[0], 4, stride=4)], widths[0]
        for i, width in enumerate(widths):
            if i:
                stages += [nn.BatchNorm2d(cin),
                           nn.Conv2d(cin, width, 2, stride=2)]
            stages += [ConvNeXtBlock(width) for _ in range(depth)]
            cin = width
        self.body = nn.Sequential(*stages)
        self.norm = Float32LayerNorm(cin)
        self.head = nn.Linear(cin, classes)

    def forward(self, x, label):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = self.head(self.norm(self.body(x).mean((2, 3))))
            return F.cross_entropy(logits, label)


# -- C3D with BatchNorm3d -----------------------------------------------------

class BNC3D(nn.Module):
    """C3D with Conv3d + BatchNorm3d + in-place ReLU, two convolutions in
    the deeper stages, ceil-mode pooling, adaptive average pooling and
    the loss in forward."""

    def __init__(self, classes=101, widths=(32, 64, 128, 192)):
        super().__init__()
        layers, cin = [], 3
        for i, width in enumerate(widths):
            for _ in range(1 if i < 2 else 2):
                layers += [nn.Conv3d(cin, width, 3, padding=1, bias=False),
                           nn.BatchNorm3d(width), nn.ReLU(inplace=True)]
                cin = width
            layers.append(nn.MaxPool3d((1, 2, 2) if i == 0 else 2,
                                       ceil_mode=True))
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Sequential(nn.Dropout(0.5), nn.Linear(cin, 512),
                                nn.ReLU(inplace=True), nn.Dropout(0.5),
                                nn.Linear(512, classes))

    def forward(self, clip, label):
        return F.cross_entropy(self.fc(self.pool(self.features(clip))
                                       .flatten(1)), label)


def _clip_and_label():
    gen = torch.Generator().manual_seed(17)
    return (torch.rand(1, 3, 16, 56, 56, generator=gen), torch.tensor([5]))


# -- ALBERT: distinct modules that share their parameters ---------------------

class PostNormLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, dropout=0.1,
                                          batch_first=True)
        self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(),
                                 nn.Linear(4 * dim, dim), nn.Dropout(0.1))

    def forward(self, x):
        x = self.n1(x + self.attn(x, x, x, need_weights=False)[0])
        return self.n2(x + self.ffn(x))


def _share_parameters(source, target):
    """Makes every parameter of target the very Parameter of source at the
    same path: distinct modules, one set of weights."""
    for name, module in target.named_modules():
        origin = source.get_submodule(name)
        for pname in list(module._parameters):
            setattr(module, pname, getattr(origin, pname))


class SharedALBERT(nn.Module):
    """ALBERT with one layer module per depth, all sharing the first's
    parameters, a factorised embedding, an MLM decoder tied to the
    embedding through F.linear, and a sentence-order head."""

    def __init__(self, emb=128, dim=256, heads=4, layers=4):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, emb)
        self.pos = nn.Parameter(torch.zeros(1, 128, emb))
        self.project = nn.Linear(emb, dim)
        self.layers = nn.ModuleList(PostNormLayer(dim, heads)
                                    for _ in range(layers))
        for layer in self.layers[1:]:
            _share_parameters(self.layers[0], layer)
        self.down = nn.Sequential(nn.Linear(dim, emb), nn.GELU(),
                                  nn.LayerNorm(emb))
        self.out_bias = nn.Parameter(torch.zeros(VOCAB))
        self.order = nn.Linear(dim, 2)

    def forward(self, ids, labels):
        h = self.project(self.tok(ids) + self.pos[:, :ids.shape[1]])
        for layer in self.layers:
            h = layer(h)
        logits = F.linear(self.down(h), self.tok.weight, self.out_bias)
        mlm = F.cross_entropy(logits.flatten(0, 1), labels.flatten())
        return mlm + F.cross_entropy(self.order(h[:, 0]),
                                     torch.zeros_like(ids[:, 0]))


# -- attention and MLP written with in-place operators -----------------------

class InplaceBlock(nn.Module):
    """Post-norm block whose scores are scaled by div_ and masked by
    masked_fill_, whose residuals are add_ onto the projection's output,
    whose MLP uses relu_ and an in-place dropout, each on a tensor that
    backward does not need."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = (nn.Linear(dim, dim) for _ in range(3))
        self.o = nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)

    def split(self, x):
        b, t, d = x.shape
        return x.reshape(b, t, self.heads, -1).transpose(1, 2)

    def forward(self, x, causal):
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), \
            self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(2, 3))
        scores.div_(math.sqrt(q.shape[-1])).masked_fill_(causal,
                                                         float("-inf"))
        ctx = torch.matmul(F.dropout(scores.softmax(-1), 0.1, self.training),
                           v).transpose(1, 2).reshape(x.shape)
        out = F.dropout(self.o(ctx), 0.1, self.training, inplace=True)
        x = self.n1(out.add_(x))
        y = self.fc2(F.relu_(self.fc1(x)))
        return self.n2(F.dropout(y, 0.1, self.training, inplace=True).add_(x))


class InplaceLM(nn.Module):
    def __init__(self, dim=256, heads=4, layers=3):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.blocks = nn.ModuleList(InplaceBlock(dim, heads)
                                    for _ in range(layers))
        self.head = nn.Linear(dim, VOCAB)

    def forward(self, ids):
        t = ids.shape[1]
        causal = torch.ones(t, t, dtype=torch.bool,
                            device=ids.device).triu_(1)
        h = self.embed(ids)
        for block in self.blocks:
            h = block(h, causal)
        logits = self.head(h)
        return F.cross_entropy(logits[:, :-1].flatten(0, 1),
                               ids[:, 1:].flatten())


KINDS = [
    Kind("gpt2", HFGPT2, lambda: _ids(64, VOCAB, 21), 4, "fp32"),
    Kind("bert_padding_mask", TorchBERT, _bert_example, 4, "fp32"),
    Kind("t5", MHAT5, lambda: (_ids(64, VOCAB, 22), _ids(40, VOCAB, 23)), 4,
         "fp32"),
    Kind("vit", UnfoldViT, _image_and_label, 8, "fp32"),
    Kind("lstm_lm", PackedLSTMLM,
         lambda: (_ids(65, VOCAB, 24), torch.tensor([56])), 4, "fp32"),
    Kind("gru_seq2seq", BahdanauSeq2Seq,
         lambda: (_ids(40, VOCAB, 25), _ids(25, VOCAB, 26)), 4, "fp32"),
    Kind("unet", UpsampleUNet, _image_and_mask, 4, "fp32"),
    Kind("dlrm", FusedDLRM, _dlrm_example, 128, "fp32"),
    Kind("moe", MoELM, lambda: _ids(64, VOCAB, 27), 4, "fp32"),
    Kind("gpt2_checkpointed", lambda: HFGPT2(ckpt=True),
         lambda: _ids(64, VOCAB, 21), 4, "fp32"),
    Kind("vit_autocast_bf16", AutocastConvNeXt,
         lambda: _image_and_label(64, 3), 8, "amp_bf16"),
    Kind("c3d", BNC3D, _clip_and_label, 2, "fp32"),
    Kind("albert", SharedALBERT,
         lambda: (_ids(64, VOCAB, 28), _labels(64, 5, 29)), 4, "fp32"),
    Kind("inplace_attention", InplaceLM, lambda: _ids(64, VOCAB, 30), 4,
         "fp32"),
]
