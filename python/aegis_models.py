"""Builders, from torch.nn alone, for the aegis catalog models torchvision lacks.

The catalog's jobs (data/catalog.csv) train BERT, GPT-2, XLNet and a
Llama-3-width model with Hugging Face transformers, Xception with timm, a U-Net
with segmentation_models_pytorch and a small MNIST CNN. None of those libraries
is available here, so each model is rebuilt from torch.nn at the catalog's
sizes, with the same parameter tensors and the same per-layer outputs. The
steps of attention are modules (nn.Softmax over attention scores, a MatMul
module for scores and context), so that the description lists them as
layers; eager attention keeps them all, the fused kind (ScaledDotProduct,
one GPU kernel) only its inputs, output and a log-sum-exp per row.

Each model is a Spec: how to build it, what one sample is, and the training
settings the catalog job uses (read from the AEGIS training scripts; see the
README section "Describing a model for the estimator"). Torchvision model
names are specs too, each family with its documented input (an image, a
clip, two frames, or for detection an image and its target), adam/fp32.
"""

import math
from collections import namedtuple

import torch
from torch import nn

# build(num_classes=None, attention=None) makes the module; attention is
# the default attention kind of a transformer (None for other models).
# input_kind: "tokens", "image" (input_shape C,H,W), "video" (C,T,H,W),
# "flow" (two frames of C,H,W) or "detection" (a list of one C,H,W image
# and a list of its one target).
Spec = namedtuple("Spec", "name build input_kind input_shape seq_len "
                          "optimizer precision attention description "
                          "torchvision")


class ModelError(Exception):
    """A model name or option the registry cannot honour; the message says
    which."""


class UnknownModel(ModelError):
    """No builder and no torchvision model has this name."""


# --- transformer parts ------------------------------------------------------

class MatMul(nn.Module):
    """a @ b (b transposed if asked, then scaled) as a module, so that the
    attention scores and context a training step keeps are layers."""

    def __init__(self, transpose_b=False, scale=None):
        super().__init__()
        self.transpose_b = transpose_b
        self.scale = scale

    def forward(self, a, b):
        if self.transpose_b:
            b = b.transpose(-2, -1)
        out = torch.matmul(a, b)
        return out if self.scale is None else out * self.scale


class Add(nn.Module):
    """The sum of its inputs (a residual connection, summed embeddings) as a
    module: the sum is a new tensor, and the norm after it keeps it for
    backward."""

    def forward(self, *terms):
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total


class Concat(nn.Module):
    """Channel concatenation (a U-Net skip) as a module: the concatenated
    tensor is new, and the convolution after it keeps it for backward."""

    def forward(self, *parts):
        return torch.cat(parts, dim=1)


class Mul(nn.Module):
    """Elementwise a * b (the gate of a gated feed-forward) as a module."""

    def forward(self, a, b):
        return a * b


class RMSNorm(nn.Module):
    """Root-mean-square layer norm with a learned scale (Llama)."""

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        scale = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * scale * self.weight


class Rotary(nn.Module):
    """Rotary position embedding applied to queries and keys (Llama). It has
    no parameters; its outputs are the rotated q and k a step keeps."""

    def __init__(self, head_dim, base=500000.0):
        super().__init__()
        self.head_dim = head_dim
        self.base = base

    @staticmethod
    def _rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def forward(self, q, k):
        length = q.shape[-2]
        steps = torch.arange(0, self.head_dim, 2, device=q.device).float()
        inv_freq = 1.0 / (self.base ** (steps / self.head_dim))
        angles = torch.outer(torch.arange(length, device=q.device).float(),
                             inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        cos, sin = angles.cos().to(q.dtype), angles.sin().to(q.dtype)
        return (q * cos + self._rotate_half(q) * sin,
                k * cos + self._rotate_half(k) * sin)


def _dropout(p):
    return nn.Dropout(p) if p > 0 else nn.Identity()


ATTENTION_KINDS = ("eager", "fused")


def _mask_future(scores):
    """Causal mask: a token attends to itself and the tokens before it."""
    length = scores.shape[-1]
    future = torch.ones(length, length, dtype=torch.bool,
                        device=scores.device).triu(1)
    return scores.masked_fill(future, float("-inf"))


class EagerAttention(nn.Module):
    """softmax(q k^T / sqrt(d)) v step by step, as transformers' "eager"
    attention runs it: scores, probabilities and their dropout are tensors a
    training step keeps, so each is a layer."""

    def __init__(self, head_dim, causal, dropout):
        super().__init__()
        self.causal = causal
        self.scores = MatMul(transpose_b=True, scale=1.0 / math.sqrt(head_dim))
        self.softmax = nn.Softmax(dim=-1)
        self.dropout = _dropout(dropout)
        self.context = MatMul()

    def forward(self, q, k, v):
        scores = self.scores(q, k)
        if self.causal:
            scores = _mask_future(scores)
        return self.context(self.dropout(self.softmax(scores)), v)


class ScaledDotProduct(nn.Module):
    """The same attention as one fused kernel computes it (PyTorch's
    scaled_dot_product_attention, transformers' default "sdpa" attention for
    BERT, GPT-2 and Llama): scores and probabilities never leave the kernel,
    so the context is the layer's only activation. Its inputs are the
    already projected q, k and v (layers of their own), which is why it is
    not named like nn.MultiheadAttention, whose projections are inside."""

    # For aegis_record: a GPU keeps q, k, v, the context and a log-sum-exp
    # per row, not the scores this forward computes step by step.
    fused_kernel = True

    def __init__(self, head_dim, causal, dropout):
        super().__init__()
        self.scale = 1.0 / math.sqrt(head_dim)
        self.causal = causal
        self.dropout = dropout

    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        if self.causal:
            scores = _mask_future(scores)
        probs = nn.functional.dropout(torch.softmax(scores, dim=-1),
                                      self.dropout, self.training)
        return torch.matmul(probs, v)


class SelfAttention(nn.Module):
    """Multi-head self-attention with separate q/k/v projections, optional
    grouped key/value heads, causal mask and rotary positions; the attention
    proper is eager or fused (ATTENTION_KINDS)."""

    def __init__(self, dim, heads, kv_heads=None, bias=True, dropout=0.0,
                 causal=False, rotary=False, attention="eager"):
        super().__init__()
        self.heads = heads
        self.kv_heads = kv_heads or heads
        self.head_dim = dim // heads
        kv_dim = self.kv_heads * self.head_dim
        self.query = nn.Linear(dim, dim, bias=bias)
        self.key = nn.Linear(dim, kv_dim, bias=bias)
        self.value = nn.Linear(dim, kv_dim, bias=bias)
        self.rotary = Rotary(self.head_dim) if rotary else None
        kind = {"eager": EagerAttention,
                "fused": ScaledDotProduct}[attention]
        self.attend = kind(self.head_dim, causal, dropout)
        self.out = nn.Linear(dim, dim, bias=bias)
        self.out_dropout = _dropout(dropout)

    def _split(self, x, heads):
        batch, length, _ = x.shape
        return x.view(batch, length, heads, self.head_dim).transpose(1, 2)

    def _share_kv(self, x):
        """Repeat each key/value head for the query heads that share it."""
        batch, kv_heads, length, head_dim = x.shape
        group = self.heads // kv_heads
        x = x[:, :, None].expand(batch, kv_heads, group, length, head_dim)
        return x.reshape(batch, self.heads, length, head_dim)

    def forward(self, x):
        batch, length, dim = x.shape
        q = self._split(self.query(x), self.heads)
        k = self._split(self.key(x), self.kv_heads)
        v = self._split(self.value(x), self.kv_heads)
        if self.rotary is not None:
            q, k = self.rotary(q, k)
        if self.kv_heads != self.heads:
            k = self._share_kv(k)
            v = self._share_kv(v)
        context = self.attend(q, k, v).transpose(1, 2)
        return self.out_dropout(self.out(context.reshape(batch, length,
                                                         dim)))


class FeedForward(nn.Module):
    """Linear, activation, linear, dropout (BERT, GPT-2, XLNet)."""

    def __init__(self, dim, hidden, activation, dropout):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.act = activation
        self.down = nn.Linear(hidden, dim)
        self.dropout = _dropout(dropout)

    def forward(self, x):
        return self.dropout(self.down(self.act(self.up(x))))


class GatedFeedForward(nn.Module):
    """SiLU-gated feed-forward without biases (Llama)."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.act = nn.SiLU()
        self.mul = Mul()
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down(self.mul(self.act(self.gate(x)), self.up(x)))


class Block(nn.Module):
    """A transformer layer: attention and feed-forward, each with a residual
    connection, normalised after (BERT) or before (GPT-2, Llama) the sum."""

    def __init__(self, attention, feed_forward, norm1, norm2, pre_norm):
        super().__init__()
        self.norm1 = norm1
        self.attention = attention
        self.residual1 = Add()
        self.norm2 = norm2
        self.feed_forward = feed_forward
        self.residual2 = Add()
        self.pre_norm = pre_norm

    def forward(self, x):
        if self.pre_norm:
            x = self.residual1(x, self.attention(self.norm1(x)))
            return self.residual2(x, self.feed_forward(self.norm2(x)))
        x = self.norm1(self.residual1(x, self.attention(x)))
        return self.norm2(self.residual2(x, self.feed_forward(x)))


def _positions(ids):
    return torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)


class BertMaskedLM(nn.Module):
    """BERT with its masked-language-model head (BertForMaskedLM): the
    decoder shares the word-embedding matrix and has its own bias. Like the
    other language models here it ends with the log-softmax over the
    vocabulary that its cross-entropy loss computes and keeps for backward,
    for every position (the loss ignores unmasked ones only afterwards)."""

    def __init__(self, vocab, dim, layers, heads, hidden, max_positions,
                 dropout=0.1, attention="eager"):
        super().__init__()
        self.word = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(max_positions, dim)
        self.token_type = nn.Embedding(2, dim)
        self.embed_sum = Add()
        self.embed_norm = nn.LayerNorm(dim, eps=1e-12)
        self.embed_dropout = _dropout(dropout)
        self.blocks = nn.Sequential(*[
            Block(SelfAttention(dim, heads, dropout=dropout,
                                attention=attention),
                  FeedForward(dim, hidden, nn.GELU(), dropout),
                  nn.LayerNorm(dim, eps=1e-12), nn.LayerNorm(dim, eps=1e-12),
                  pre_norm=False)
            for _ in range(layers)])
        self.head_dense = nn.Linear(dim, dim)
        self.head_act = nn.GELU()
        self.head_norm = nn.LayerNorm(dim, eps=1e-12)
        self.decoder = nn.Linear(dim, vocab)
        self.decoder.weight = self.word.weight
        self.loss_log_probs = nn.LogSoftmax(dim=-1)

    def forward(self, ids):
        x = self.embed_sum(self.word(ids), self.position(_positions(ids)),
                           self.token_type(torch.zeros_like(ids)))
        x = self.blocks(self.embed_dropout(self.embed_norm(x)))
        x = self.head_norm(self.head_act(self.head_dense(x)))
        return self.loss_log_probs(self.decoder(x))


class GPT2LM(nn.Module):
    """GPT-2 with its language-model head (GPT2LMHeadModel): pre-norm blocks,
    tanh-approximated GELU, head tied to the token embedding, no bias."""

    def __init__(self, vocab, dim, layers, heads, max_positions=1024,
                 dropout=0.1, attention="eager"):
        super().__init__()
        self.token = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(max_positions, dim)
        self.embed_sum = Add()
        self.embed_dropout = _dropout(dropout)
        self.blocks = nn.Sequential(*[
            Block(SelfAttention(dim, heads, dropout=dropout, causal=True,
                                attention=attention),
                  FeedForward(dim, 4 * dim, nn.GELU(approximate="tanh"),
                              dropout),
                  nn.LayerNorm(dim), nn.LayerNorm(dim), pre_norm=True)
            for _ in range(layers)])
        self.final_norm = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.token.weight
        self.loss_log_probs = nn.LogSoftmax(dim=-1)

    def forward(self, ids):
        x = self.embed_sum(self.token(ids), self.position(_positions(ids)))
        x = self.blocks(self.embed_dropout(x))
        return self.loss_log_probs(self.lm_head(self.final_norm(x)))


class LlamaLM(nn.Module):
    """A Llama-style causal LM (LlamaForCausalLM): RMSNorm pre-norm blocks,
    grouped-query attention with rotary positions, SiLU-gated feed-forward,
    untied LM head, no biases and no dropout."""

    def __init__(self, vocab, dim, layers, heads, kv_heads, hidden,
                 attention="eager"):
        super().__init__()
        self.token = nn.Embedding(vocab, dim)
        self.blocks = nn.Sequential(*[
            Block(SelfAttention(dim, heads, kv_heads=kv_heads, bias=False,
                                causal=True, rotary=True,
                                attention=attention),
                  GatedFeedForward(dim, hidden), RMSNorm(dim), RMSNorm(dim),
                  pre_norm=True)
            for _ in range(layers)])
        self.final_norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.loss_log_probs = nn.LogSoftmax(dim=-1)

    def forward(self, ids):
        x = self.final_norm(self.blocks(self.token(ids)))
        return self.loss_log_probs(self.lm_head(x))


class BiasedScores(nn.Module):
    """(q + bias) @ k^T for one of XLNet's attention terms; the bias is a
    learned per-head vector (r_w_bias for content, r_r_bias for position)."""

    def __init__(self, heads, head_dim):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(heads, head_dim))

    def forward(self, q, k):
        return torch.matmul(q + self.bias[None, :, None, :],
                            k.transpose(-2, -1))


class SegmentScores(nn.Module):
    """XLNet's segment term: whether two tokens share a segment, scored per
    head from (q + r_s_bias) against two learned segment embeddings."""

    def __init__(self, heads, head_dim):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(heads, head_dim))
        self.embed = nn.Parameter(torch.zeros(2, heads, head_dim))

    def forward(self, q, other_segment):
        per_segment = torch.einsum("bhid,shd->bhis",
                                   q + self.bias[None, :, None, :],
                                   self.embed)
        return torch.where(other_segment[:, None], per_segment[..., 1:2],
                           per_segment[..., 0:1])


def _relative_shift(scores, klen):
    """Turn scores against 2L relative positions into L x L scores."""
    batch, heads, qlen, rlen = scores.shape
    shifted = scores.reshape(batch, heads, rlen, qlen)[:, :, 1:, :]
    return shifted.reshape(batch, heads, qlen, rlen - 1)[..., :klen]


class RelativeAttention(nn.Module):
    """XLNet's relative multi-head attention, content stream only (what
    sequence classification runs), with bias-free projections."""

    def __init__(self, dim, heads, dropout):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.query = nn.Linear(dim, dim, bias=False)
        self.key = nn.Linear(dim, dim, bias=False)
        self.value = nn.Linear(dim, dim, bias=False)
        self.position = nn.Linear(dim, dim, bias=False)
        self.content_scores = BiasedScores(heads, self.head_dim)
        self.position_scores = BiasedScores(heads, self.head_dim)
        self.segment_scores = SegmentScores(heads, self.head_dim)
        self.softmax = nn.Softmax(dim=-1)
        self.attn_dropout = _dropout(dropout)
        self.context = MatMul()
        self.out = nn.Linear(dim, dim, bias=False)
        self.out_dropout = _dropout(dropout)

    def _split(self, x):
        return x.view(x.shape[0], x.shape[1], self.heads,
                      self.head_dim).transpose(1, 2)

    def forward(self, x, pos_emb, other_segment):
        batch, length, dim = x.shape
        q = self._split(self.query(x))
        k = self._split(self.key(x))
        v = self._split(self.value(x))
        k_pos = self.position(pos_emb).view(-1, self.heads,
                                            self.head_dim).transpose(0, 1)
        # Summed in place: the sum of the three terms is a transient that
        # only the softmax reads, and the softmax keeps its own output.
        scores = self.content_scores(q, k)
        scores += _relative_shift(self.position_scores(q, k_pos), length)
        scores += self.segment_scores(q, other_segment)
        scores /= math.sqrt(self.head_dim)
        probs = self.attn_dropout(self.softmax(scores))
        context = self.context(probs, v).transpose(1, 2)
        return self.out_dropout(self.out(context.reshape(batch, length,
                                                         dim)))


class XLNetLayer(nn.Module):
    """Relative attention and feed-forward, each followed by residual sum
    and layer norm."""

    def __init__(self, dim, heads, hidden, dropout):
        super().__init__()
        self.attention = RelativeAttention(dim, heads, dropout)
        self.residual1 = Add()
        self.norm1 = nn.LayerNorm(dim, eps=1e-12)
        self.feed_forward = FeedForward(dim, hidden, nn.GELU(), dropout)
        self.residual2 = Add()
        self.norm2 = nn.LayerNorm(dim, eps=1e-12)

    def forward(self, x, pos_emb, other_segment):
        x = self.norm1(self.residual1(
            x, self.attention(x, pos_emb, other_segment)))
        return self.norm2(self.residual2(x, self.feed_forward(x)))


class XLNetClassifier(nn.Module):
    """XLNet for sequence classification (XLNetForSequenceClassification):
    relative-position layers, a summary of the last token, a label head."""

    def __init__(self, vocab, dim, layers, heads, hidden, labels=2,
                 dropout=0.1):
        super().__init__()
        self.dim = dim
        self.word = nn.Embedding(vocab, dim)
        self.embed_dropout = _dropout(dropout)
        self.layers = nn.ModuleList(XLNetLayer(dim, heads, hidden, dropout)
                                    for _ in range(layers))
        self.summary = nn.Linear(dim, dim)
        self.summary_act = nn.Tanh()
        self.summary_dropout = _dropout(dropout)
        self.classifier = nn.Linear(dim, labels)

    def _position_embedding(self, length, device):
        """Sinusoids for relative distances length .. -length+1."""
        steps = torch.arange(0, self.dim, 2.0, device=device)
        inv_freq = 1.0 / (10000 ** (steps / self.dim))
        distances = torch.arange(length, -length, -1.0, device=device)
        angles = torch.outer(distances, inv_freq)
        return torch.cat((angles.sin(), angles.cos()), dim=-1)

    def forward(self, ids):
        length = ids.shape[1]
        pos_emb = self._position_embedding(length, ids.device)
        segments = torch.zeros_like(ids)
        other_segment = segments[:, :, None] != segments[:, None, :]
        x = self.embed_dropout(self.word(ids))
        for layer in self.layers:
            x = layer(x, pos_emb, other_segment)
        x = self.summary_dropout(self.summary_act(self.summary(x[:, -1])))
        return self.classifier(x)


# --- convolutional models ---------------------------------------------------

class SeparableConv2d(nn.Module):
    """Depthwise then pointwise convolution, both without bias."""

    def __init__(self, cin, cout, kernel=3, padding=1):
        super().__init__()
        self.depthwise = nn.Conv2d(cin, cin, kernel, padding=padding,
                                   groups=cin, bias=False)
        self.pointwise = nn.Conv2d(cin, cout, 1, bias=False)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


class XceptionBlock(nn.Module):
    """reps x (ReLU, separable conv, BN), an optional strided max-pool, and
    a 1x1 strided projection on the skip path when the shape changes."""

    def __init__(self, cin, cout, reps, stride, start_with_relu=True,
                 grow_first=True):
        super().__init__()
        if cout != cin or stride != 1:
            self.skip = nn.Conv2d(cin, cout, 1, stride=stride, bias=False)
            self.skip_bn = nn.BatchNorm2d(cout)
        else:
            self.skip = None
        widths = ([cin] + [cout] * reps if grow_first
                  else [cin] * reps + [cout])
        layers = []
        for i in range(reps):
            if i > 0 or start_with_relu:
                layers.append(nn.ReLU())
            layers += [SeparableConv2d(widths[i], widths[i + 1]),
                       nn.BatchNorm2d(widths[i + 1])]
        if stride != 1:
            layers.append(nn.MaxPool2d(3, stride, 1))
        self.rep = nn.Sequential(*layers)
        self.residual = Add()

    def forward(self, x):
        skip = x if self.skip is None else self.skip_bn(self.skip(x))
        return self.residual(self.rep(x), skip)


class Xception(nn.Module):
    """Xception (Chollet 2017) as timm's "xception" builds it."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, bias=False), nn.BatchNorm2d(32),
            nn.ReLU(), nn.Conv2d(32, 64, 3, bias=False), nn.BatchNorm2d(64),
            nn.ReLU())
        middle = [XceptionBlock(728, 728, 3, 1) for _ in range(8)]
        self.blocks = nn.Sequential(
            XceptionBlock(64, 128, 2, 2, start_with_relu=False),
            XceptionBlock(128, 256, 2, 2),
            XceptionBlock(256, 728, 2, 2),
            *middle,
            XceptionBlock(728, 1024, 2, 2, grow_first=False))
        self.exit = nn.Sequential(
            SeparableConv2d(1024, 1536), nn.BatchNorm2d(1536), nn.ReLU(),
            SeparableConv2d(1536, 2048), nn.BatchNorm2d(2048), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(2048, num_classes)

    def forward(self, x):
        return self.fc(self.exit(self.blocks(self.stem(x))))


def _conv_bn_relu(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU())


class UNetDecoderBlock(nn.Module):
    """Upsample x2, concatenate the encoder's skip, two conv-BN-ReLU."""

    def __init__(self, cin, cskip, cout):
        super().__init__()
        self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.concat = Concat()
        self.conv1 = _conv_bn_relu(cin + cskip, cout)
        self.conv2 = _conv_bn_relu(cout, cout)

    def forward(self, x, skip=None):
        x = self.upsample(x)
        if skip is not None:
            x = self.concat(x, skip)
        return self.conv2(self.conv1(x))


class UNetResNet34(nn.Module):
    """U-Net with a ResNet-34 encoder, as segmentation_models_pytorch's
    Unet(encoder_name="resnet34") builds it: decoder widths 256..16, a 3x3
    segmentation head, no final activation."""

    def __init__(self, num_classes=21):
        super().__init__()
        import torchvision
        encoder = torchvision.models.resnet34()
        self.stem = nn.Sequential(encoder.conv1, encoder.bn1, encoder.relu)
        self.pool = encoder.maxpool
        self.stages = nn.ModuleList([encoder.layer1, encoder.layer2,
                                     encoder.layer3, encoder.layer4])
        widths = [512, 256, 128, 64, 32, 16]
        skips = [256, 128, 64, 64, 0]
        self.decoder = nn.ModuleList(
            UNetDecoderBlock(widths[i], skips[i], widths[i + 1])
            for i in range(5))
        self.head = nn.Conv2d(16, num_classes, 3, padding=1)

    def forward(self, x):
        features = [self.stem(x)]
        x = self.pool(features[0])
        for stage in self.stages:
            x = stage(x)
            features.append(x)
        skips = features[-2::-1] + [None]
        x = features[-1]
        for block, skip in zip(self.decoder, skips):
            x = block(x, skip)
        return self.head(x)


class MnistCNN(nn.Module):
    """The two-convolution MNIST network of the PyTorch examples, which the
    catalog's mnist job trains; functional steps written as modules."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(),
            nn.MaxPool2d(2), nn.Dropout(0.25), nn.Flatten())
        self.classifier = nn.Sequential(
            nn.Linear(9216, 128), nn.ReLU(), nn.Dropout(0.5),
            nn.Linear(128, num_classes), nn.LogSoftmax(dim=1))

    def forward(self, x):
        return self.classifier(self.features(x))


# --- the registry -----------------------------------------------------------

def _refuse(option, value, what):
    if value is not None:
        raise ModelError("%s does not apply to %s" % (option, what))


def _classifier(cls, default_classes):
    """build() of an image model: any number of classes, no attention."""
    def build(num_classes=None, attention=None):
        _refuse("--attention", attention, cls.__name__)
        return cls(num_classes=num_classes or default_classes)
    return build


def _xlnet(**sizes):
    """build() of XLNet: any number of labels; its relative attention has no
    fused form in transformers, so it is always eager."""
    def build(num_classes=None, attention=None):
        if attention not in (None, "eager"):
            raise ModelError("XLNet's relative attention has only the eager "
                             "form: --attention %s does not apply" % attention)
        if num_classes is None:
            return XLNetClassifier(**sizes)
        return XLNetClassifier(labels=num_classes, **sizes)
    return build


def _lm(cls, default_attention, **sizes):
    """build() of a language model: no classes, eager or fused attention."""
    def build(num_classes=None, attention=None):
        _refuse("--num-classes", num_classes,
                "%s, a language model" % cls.__name__)
        attention = attention or default_attention
        if attention not in ATTENTION_KINDS:
            raise ModelError("--attention %r is not one of: %s"
                             % (attention, ", ".join(ATTENTION_KINDS)))
        return cls(attention=attention, **sizes)
    return build


IMAGE = (3, 224, 224)
SEQ = 512  # every text job of the catalog pads or truncates to 512 tokens

# The catalog's transformers library (recent enough for Trainer's
# processing_class argument) runs BERT, GPT-2 and Llama with PyTorch's fused
# scaled_dot_product_attention by default; XLNet has only eager attention.
_BUILDERS = [
    Spec("bert_base", _lm(BertMaskedLM, "fused", vocab=28996, dim=768,
                          layers=12, heads=12, hidden=3072,
                          max_positions=SEQ),
         "tokens", None, SEQ, "adamw", "fp32", "fused",
         "BERT-base MLM, bert-base-cased vocabulary", False),
    Spec("bert_large", _lm(BertMaskedLM, "fused", vocab=28996, dim=1024,
                           layers=24, heads=16, hidden=4096,
                           max_positions=SEQ),
         "tokens", None, SEQ, "adamw", "fp32", "fused",
         "BERT-large MLM, bert-large-cased vocabulary", False),
    Spec("gpt2_large", _lm(GPT2LM, "fused", vocab=50257, dim=1280,
                           layers=36, heads=20),
         "tokens", None, SEQ, "adamw", "fp32", "fused",
         "GPT-2 large causal LM", False),
    Spec("gpt2_xl", _lm(GPT2LM, "fused", vocab=50257, dim=1600, layers=48,
                        heads=25),
         "tokens", None, SEQ, "adamw", "fp32", "fused",
         "GPT-2 XL causal LM", False),
    Spec("xlnet_base", _xlnet(vocab=32000, dim=768, layers=12, heads=12,
                              hidden=3072),
         "tokens", None, SEQ, "adamw", "fp32", "eager",
         "XLNet-base-cased sequence classifier (2 labels)", False),
    Spec("xlnet_large", _xlnet(vocab=32000, dim=1024, layers=24, heads=16,
                               hidden=4096),
         "tokens", None, SEQ, "adamw", "fp32", "eager",
         "XLNet-large-cased sequence classifier (2 labels)", False),
    Spec("llama3_width_8layer", _lm(LlamaLM, "fused", vocab=128256,
                                    dim=4096, layers=8, heads=32,
                                    kv_heads=8, hidden=14336),
         "tokens", None, SEQ, "adamw", "bf16", "fused",
         "Llama-3-8B width, 8 layers, weights in bf16", False),
    Spec("xception", _classifier(Xception, 1000), "image", IMAGE, None,
         "adam", "fp32", None, "Xception (timm layout)", False),
    Spec("unet_resnet34", _classifier(UNetResNet34, 21), "image",
         (3, 512, 512), None, "adamw", "fp32", None,
         "U-Net, ResNet-34 encoder, 21 VOC classes", False),
    Spec("mnist_cnn", _classifier(MnistCNN, 10), "image", (1, 28, 28),
         None, "adam", "fp32", None, "PyTorch-examples MNIST CNN", False),
]

# Torchvision models whose auxiliary classifiers the catalog turns off; the
# weight initialisers are skipped too (their values do not matter here).
_TORCHVISION_KWARGS = {
    "inception_v3": {"aux_logits": False, "init_weights": False},
    "googlenet": {"aux_logits": False, "init_weights": False},
}

# One sample of each torchvision family, as its documentation calls the
# model in training: an image (C, H, W); a clip (C, T, H, W) for video; a
# pair of frames for optical flow; for detection an image that the model's
# own transform resizes (800 pixels for the R-CNNs, RetinaNet and FCOS),
# passed as model([image], [target]).
_TORCHVISION_SHAPES = {
    "inception_v3": (3, 299, 299),
    "ssd300_vgg16": (3, 300, 300),
    "ssdlite320_mobilenet_v3_large": (3, 320, 320),
    "fasterrcnn_mobilenet_v3_large_320_fpn": (3, 320, 320),
    "s3d": (3, 16, 224, 224), "mvit_v1_b": (3, 16, 224, 224),
    "mvit_v2_s": (3, 16, 224, 224),
}
_FAMILY_SHAPES = {"image": IMAGE, "detection": (3, 800, 800),
                  "video": (3, 16, 112, 112), "flow": (3, 368, 496)}


def _family_names():
    """torchvision model name -> input kind, quantized models left out
    (they train through a different path and run on CPU only)."""
    import torchvision.models as tvm
    kinds = {}
    for module, kind in ((tvm, "image"), (tvm.segmentation, "image"),
                         (tvm.detection, "detection"), (tvm.video, "video"),
                         (tvm.optical_flow, "flow")):
        for name in tvm.list_models(module):
            kinds.setdefault(name, kind)
    return kinds


def _torchvision_names():
    return sorted(_family_names())


def _segmentation_names():
    import torchvision
    return set(torchvision.models.list_models(
        torchvision.models.segmentation))


def detection_target(name, shape):
    """What a detection model's training step is given for one image of
    shape (C, H, W): one box in its middle, labelled 1; a mask for Mask
    R-CNN, 17 visible keypoints for Keypoint R-CNN."""
    _, height, width = shape
    box = torch.tensor([[width / 4, height / 4, 3 * width / 4,
                         3 * height / 4]])
    target = {"boxes": box, "labels": torch.ones(1, dtype=torch.long)}
    if "maskrcnn" in name:
        mask = torch.zeros(1, height, width, dtype=torch.uint8)
        mask[:, height // 4:3 * height // 4, width // 4:3 * width // 4] = 1
        target["masks"] = mask
    if "keypointrcnn" in name:
        points = torch.linspace(0.3, 0.7, 17)
        target["keypoints"] = torch.stack(
            [points * width, points * height, torch.ones(17)], dim=1)[None]
    return target


def _torchvision_spec(name):
    import torchvision
    kind = _family_names()[name]

    def build(num_classes=None, attention=None):
        _refuse("--attention", attention, name)
        kwargs = dict(_TORCHVISION_KWARGS.get(name, {}))
        if kind == "detection" or name in _segmentation_names():
            # Their backbones default to pretrained weights, which would
            # be downloaded; the values do not matter here.
            kwargs["weights_backbone"] = None
        if num_classes is not None:
            kwargs["num_classes"] = num_classes
        return torchvision.models.get_model(name, weights=None, **kwargs)
    shape = _TORCHVISION_SHAPES.get(name, _FAMILY_SHAPES[kind])
    return Spec(name, build, kind, shape, None, "adam", "fp32", None,
                "torchvision " + name, True)


def lookup(name):
    """The Spec for a builder or torchvision model name; UnknownModel if
    neither has it."""
    for spec in _BUILDERS:
        if spec.name == name:
            return spec
    if name in _family_names():
        return _torchvision_spec(name)
    raise UnknownModel("unknown model %r (aegis_describe.py --list shows "
                       "the known ones)" % name)


def all_specs():
    """Every known model: the builders, then torchvision's."""
    return _BUILDERS + [_torchvision_spec(n) for n in _torchvision_names()]
