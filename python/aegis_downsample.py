"""aegis_downsample -- learned selection inside a pipeline's training job:
Modyn's downsampling (a CoresetStrategy's downsampling_config).

Presampling (docs/pipelines.md, "Selection") chooses a trigger's training
set before training, from what aegis knows of the samples. Downsampling
chooses again during training, from what only the training job knows: the
model's outputs on each sample. The supervisor gives the job the config
in force for its trigger as $AEGIS_DOWNSAMPLING (Modyn's keys, JSON;
absent when there is none), with $AEGIS_SEED and $AEGIS_TRIGGER, and
from_env() makes its downsampler:

    ds = aegis_downsample.from_env()      # None: train on everything

A downsampler is shown samples with the model's outputs on them
(inform_samples), scores each, and keeps ratio / ratio_max of them
(select_points), each with a weight for the loss (weighted_loss):

    Loss         drawn in proportion to their loss; importance weights
    GradNorm     drawn in proportion to the norm of the loss's gradient
                 at the last layer; importance weights
    Uncertainty  the most uncertain (score_metric LeastConfidence,
                 Entropy or Margin); weight 1
    RHOLoss      the largest loss minus irreducible loss (the irreducible
                 losses are yours to give: see RHOLoss); weight 1
    RS2          a random subset each epoch, without a forward pass;
                 weight 1

The config's sample_then_batch picks one of two ways to train.

Batch then sample (the default): each batch the loader gives is scored by
a forward pass without gradients, ratio of it kept, and the kept samples
regrouped into full batches to train on:

    train = TrainingSet(keys=True, bytes_parser=parse)
    loader = DataLoader(train, batch_size=B)
    bts = BatchThenSample(ds, batch_size=B)
    for epoch in range(epochs):
        train.set_epoch(epoch)
        bts.set_epoch(epoch)
        for x, y, w, key in bts.batches(loader, model):
            loss = weighted_loss(F.cross_entropy(model(x), y,
                                                 reduction="none"), w)
            ...

Sample then batch: every `period` epochs one scoring pass over the whole
training set chooses the samples of the epochs up to the next one; the
choice is written once, as a training set next to $AEGIS_TRAINSET, and
trained on as any training set:

    for epoch in range(epochs):
        chosen = sample_then_batch(ds, model, epoch, batch_size=B,
                                   bytes_parser=parse)
        chosen.set_epoch(epoch)
        for x, y, w in DataLoader(chosen, batch_size=B):
            ...                           # weighted_loss as above

Random choices are seeded by the seed, the trigger and the epoch, and a
retried job reads the choices it wrote rather than scoring again, so a
trigger trains on the same samples however often its job runs.

Where aegis departs from Modyn, the code says so and why.
"""
import bisect
import json
import math
import os
import struct
import zlib

import numpy as np
import torch
import torch.nn.functional as F
import torch.utils.data

import aegis_checks
import aegis_pipeline

__all__ = ["from_env", "make", "config_in_force", "Downsampler", "Loss",
           "GradNorm", "Uncertainty", "RHOLoss", "RS2", "BatchThenSample",
           "BatchAccumulator", "sample_then_batch", "selection_path",
           "weighted_loss", "per_sample_loss", "gradnorm_scores",
           "uncertainty_scores", "irreducible_losses"]


# ---------------------------------------------------------------------------
# The config: Modyn's keys (modyn/config/schema/pipeline/sampling/
# downsampling_config.py), checked here as the training job's own guard
# (the supervisor checks them too, but a job can be run by hand).

_REQUIRED = object()
_COMMON = {"strategy": _REQUIRED, "ratio": _REQUIRED, "ratio_max": 100,
           "sample_then_batch": False, "period": 1}
_OWN = {
    "No": {},
    "Loss": {},
    "GradNorm": {},
    "Uncertainty": {"score_metric": _REQUIRED, "balance": False},
    # Modyn requires the holdout keys to train its IL model; aegis leaves
    # that model to the user (see RHOLoss), so they are checked, not
    # required.
    "RHOLoss": {"holdout_set_ratio": None, "holdout_set_ratio_max": 100,
                "holdout_set_strategy": None, "il_training_config": None},
    "RS2": {"with_replacement": _REQUIRED},
}
_MODYN_ONLY = ("Craig", "GradMatch", "Submodular", "KcenterGreedy",
               "TokenUncertainty")
SCORE_METRICS = ("LeastConfidence", "Entropy", "Margin")


def _fail(where, key, what):
    return ValueError(f"{where}.{key}: {what}")


def _int(conf, where, key, lo, hi=None):
    """conf[key] as an int, or ValueError naming `where`.key, as _fail."""
    return aegis_checks.check_whole(f"{where}.{key}", conf[key], lo, hi)


def _bool(conf, where, key):
    if not isinstance(conf[key], bool):
        raise _fail(where, key, f"{conf[key]!r} is not true or false")
    return conf[key]


def _strategy(config, where):
    name = config.get("strategy", _REQUIRED)
    if name is _REQUIRED:
        raise _fail(where, "strategy", "missing")
    if name not in _OWN:
        known = ", ".join(_OWN)
        what = "is Modyn's, not supported by aegis" \
            if name in _MODYN_ONLY else "is unknown"
        raise _fail(where, "strategy", f"{name!r} {what} ({known})")
    return name


def _checked(config, where="downsampling_config"):
    """config with Modyn's defaults filled in, or ValueError naming the
    key at fault (`where`.key)."""
    if not isinstance(config, dict):
        raise ValueError(f"{where}: expected a mapping, got {config!r}")
    name = _strategy(config, where)
    keys = dict(_COMMON, **_OWN[name])
    if name == "No":
        keys["ratio"] = 100
    if name == "RS2":            # Modyn's RS2 only selects before batching
        keys["sample_then_batch"] = True
    for key in config:
        if key not in keys:
            raise _fail(where, key, f"unknown key for strategy {name} "
                        f"(known: {', '.join(keys)})")
    conf = dict(keys, **config)
    for key, value in conf.items():
        if value is _REQUIRED:
            raise _fail(where, key, f"missing (strategy {name} needs it)")
    _check_common(conf, where, name)
    _check_own(conf, where, name)
    return conf


def _check_common(conf, where, name):
    ratio_max = _int(conf, where, "ratio_max", 1)
    _int(conf, where, "ratio", 0, ratio_max)
    _int(conf, where, "period", 0)
    _bool(conf, where, "sample_then_batch")
    if name == "No" and conf["ratio"] != 100:
        raise _fail(where, "ratio", "strategy No keeps everything (ratio "
                    "100, as Modyn's)")
    if name == "RS2" and not conf["sample_then_batch"]:
        raise _fail(where, "sample_then_batch", "RS2 selects before "
                    "batching (it needs no forward pass), as Modyn's")
    if name == "RS2" and conf["period"] != 1:
        raise _fail(where, "period", "RS2 selects every epoch (1), as "
                    "Modyn's")


def _check_own(conf, where, name):
    if name == "Uncertainty":
        if conf["score_metric"] not in SCORE_METRICS:
            raise _fail(where, "score_metric", f"{conf['score_metric']!r} "
                        f"is not one of {', '.join(SCORE_METRICS)}")
        if _bool(conf, where, "balance") and not conf["sample_then_batch"]:
            raise _fail(where, "balance", "balanced selection needs "
                        "sample_then_batch (a batch is too small to "
                        "balance), as Modyn's")
    elif name == "RHOLoss":
        _check_holdout(conf, where)
    elif name == "RS2":
        _bool(conf, where, "with_replacement")


def _check_holdout(conf, where):
    top = _int(conf, where, "holdout_set_ratio_max", 1)
    if conf["holdout_set_ratio"] is not None:
        _int(conf, where, "holdout_set_ratio", 0, top)
    strategy = conf["holdout_set_strategy"]
    if strategy not in (None, "Simple", "Twin"):
        raise _fail(where, "holdout_set_strategy",
                    f"{strategy!r} is not Simple or Twin")
    if strategy == "Twin" and conf["holdout_set_ratio"] not in (None,
                                                                top // 2):
        raise _fail(where, "holdout_set_ratio", "Twin splits the set in "
                    "halves (half of holdout_set_ratio_max), as Modyn's")
    if conf["il_training_config"] is not None and \
            not isinstance(conf["il_training_config"], dict):
        raise _fail(where, "il_training_config", "expected a mapping")


def make(config, seed=0, trigger=0, *, loss=None, irreducible_loss=None,
         where="downsampling_config"):
    """The downsampler of one downsampling config (a dict of Modyn's keys),
    or None for strategy No. seed and trigger seed its random choices;
    loss(output, target) -> per-sample losses replaces the default
    (per_sample_loss); RHOLoss needs irreducible_loss (see RHOLoss).
    A bad config raises ValueError naming the key (`where`.key)."""
    conf = _checked(config, where)
    name = conf["strategy"]
    if name == "No":
        return None
    common = dict(ratio=conf["ratio"], ratio_max=conf["ratio_max"],
                  seed=seed, trigger=trigger,
                  sample_then_batch=conf["sample_then_batch"],
                  period=conf["period"], loss=loss)
    if name == "Loss":
        return Loss(**common)
    if name == "GradNorm":
        return GradNorm(**common)
    if name == "Uncertainty":
        return Uncertainty(conf["score_metric"], balance=conf["balance"],
                           **common)
    if name == "RHOLoss":
        if irreducible_loss is None:
            raise _fail(where, "strategy", "RHOLoss needs the irreducible "
                        "losses: pass irreducible_loss= (a function or a "
                        "per-key array; aegis does not train the IL model)")
        return RHOLoss(irreducible_loss, **common)
    return RS2(with_replacement=conf["with_replacement"], **common)


def from_env(environ=None, **options):
    """The downsampler of this training job ($AEGIS_DOWNSAMPLING, seeded
    by $AEGIS_SEED and $AEGIS_TRIGGER), or None when it has none. options
    go to make (loss=, irreducible_loss=)."""
    env = os.environ if environ is None else environ
    text = env.get("AEGIS_DOWNSAMPLING", "").strip()
    if not text:
        return None
    try:
        config = json.loads(text)
    except ValueError as e:
        raise ValueError(f"AEGIS_DOWNSAMPLING: not JSON ({e})") from None
    seed, trigger = (_env_int(env, k) for k in ("AEGIS_SEED",
                                                 "AEGIS_TRIGGER"))
    losses = env.get("AEGIS_IL_LOSSES")
    if losses and "irreducible_loss" not in options:
        options["irreducible_loss"] = irreducible_losses(losses)
    return make(config, seed, trigger, where="AEGIS_DOWNSAMPLING", **options)


def irreducible_losses(path):
    """The irreducible losses the supervisor's IL models gave (a training
    set's file, each key's weight its loss: src/pipeline/sup_rho.c), as an
    array indexed by key (NaN for keys it has none of)."""
    keys, losses, _, _ = aegis_pipeline.read_trainset(path)
    by_key = np.full(int(keys.max()) + 1 if len(keys) else 0, np.nan,
                     dtype=np.float32)
    by_key[keys.astype(np.int64)] = losses
    return by_key


def _env_int(env, name):
    try:
        return int(env.get(name, "0"))
    except ValueError:
        raise ValueError(f"{name}: {env[name]!r} is not a whole "
                         f"number") from None


def config_in_force(downsampling_config, trigger, warmup_triggers=0):
    """The config that trains trigger `trigger` (numbered from 0), or None:
    during warm-up, without a config, or when it is strategy No.

    downsampling_config is one config or Modyn's MultiDownsamplingConfig
    {downsampling_list, downsampling_thresholds}. As Modyn's selector
    (DownsamplingScheduler with the CoresetStrategy's warmup_triggers W):
    triggers 0..W-1 are not downsampled, and the thresholds count triggers
    from the end of warm-up: list [A, B, C] with thresholds [5, 10] runs
    A for triggers W..W+4, B for W+5..W+9 and C from W+10 on."""
    if downsampling_config is None or trigger < warmup_triggers:
        return None
    where = "downsampling_config"
    configs, thresholds = _schedule(downsampling_config, where)
    conf = configs[bisect.bisect_right(thresholds, trigger - warmup_triggers)]
    return None if conf.get("strategy") == "No" else conf


def _schedule(config, where):
    """The configs of a single or multi downsampling_config, checked, and
    the thresholds between them."""
    if not isinstance(config, dict) or "downsampling_list" not in config:
        _checked(config, where)
        return [config], []
    for key in config:
        if key not in ("downsampling_list", "downsampling_thresholds"):
            raise _fail(where, key, "unknown key next to downsampling_list")
    configs = config["downsampling_list"]
    thresholds = config.get("downsampling_thresholds", [])
    if not isinstance(configs, list) or not configs:
        raise _fail(where, "downsampling_list", "expected a list of configs")
    if not isinstance(thresholds, list) or \
            len(thresholds) != len(configs) - 1:
        raise _fail(where, "downsampling_thresholds", "must hold one "
                    "threshold fewer than downsampling_list")
    for i, conf in enumerate(configs):
        _checked(conf, f"{where}.downsampling_list[{i}]")
    whole = [aegis_checks.whole(t) for t in thresholds]
    if None in whole or any(a >= b for a, b in zip(whole, whole[1:])):
        raise _fail(where, "downsampling_thresholds", f"{thresholds!r}: "
                    "must be rising whole numbers, as Modyn's")
    return configs, whole


# ---------------------------------------------------------------------------
# Scores: one number a sample from the model's outputs.

def per_sample_loss(output, target):
    """Cross-entropy of each sample: output (N, C) logits with targets
    class numbers (N,) or probabilities (N, C); output (N,) or (N, 1) one
    logit of a binary classifier, with 0/1 targets (binary cross-entropy
    on logits, Modyn's binary case)."""
    if output.dim() == 1 or output.shape[1] == 1:
        return F.binary_cross_entropy_with_logits(
            output.reshape(-1), target.reshape(-1).to(output.dtype),
            reduction="none")
    return F.cross_entropy(output, target, reduction="none")


def _logit_gradient(output, target):
    """d(per_sample_loss)/d(output), per sample, in closed form (no
    autograd): softmax(z) - onehot(y) for cross-entropy, sigmoid(z) - y
    for one binary logit. (N, C) or (N, 1)."""
    if output.dim() == 1 or output.shape[1] == 1:
        z = output.reshape(-1, 1)
        return torch.sigmoid(z) - target.reshape(-1, 1).to(z.dtype)
    probs = torch.softmax(output, dim=1)
    if target.dim() == 2:                    # class probabilities
        return probs - target.to(probs.dtype)
    return probs - F.one_hot(target.long(), output.shape[1]).to(probs.dtype)


def gradnorm_scores(output, target, embedding=None, bias=True, loss=None):
    """The norm of each sample's loss gradient at the last layer.

    Without an embedding, as Modyn's GradNorm: the gradient with respect
    to the logits z, ||softmax(z) - onehot(y)|| for cross-entropy (closed
    form; loss= another per-sample loss: by autograd on the outputs, as
    Modyn does). With the embedding e that the last linear layer
    z = W e + b maps: the norm of that layer's gradient, dL/dW = g e^T
    and dL/db = g, which is ||g|| * sqrt(||e||^2 + 1) (bias=False:
    ||g|| * ||e||). Modyn's GradNorm takes no embedding; its
    LastLayerWithEmbedding approximation (for Craig and GradMatch)
    concatenates the same two gradients, whose norm this is."""
    if loss is None:
        g = _logit_gradient(output.detach(), target)
    else:
        z = output.detach().requires_grad_(True)
        with torch.enable_grad():
            g, = torch.autograd.grad(loss(z, target).sum(), z)
        g = g.reshape(len(g), -1)
    norm = torch.linalg.vector_norm(g, dim=1)
    if embedding is None:
        return norm
    e2 = embedding.detach().reshape(len(embedding), -1).pow(2).sum(1)
    return norm * torch.sqrt(e2 + 1 if bias else e2)


def uncertainty_scores(output, metric):
    """Modyn's uncertainty scores from logits (N, C), or one binary logit
    (N,) / (N, 1): the smaller, the more uncertain, and the smallest are
    kept.

    LeastConfidence: the highest class probability. (Modyn takes the
      highest logit of a multi-class model, which its own comment calls
      the highest probability; logits rank differently from probabilities
      (logits [5, 5, 0] and [1, 0, 0]), so aegis takes the probability.
      One binary logit: max(p, 1-p), which ranks as Modyn's |z|.)
    Entropy: the negative entropy, sum of p log p (Modyn adds 1e-6 inside
      the log; aegis uses the exact log-softmax).
    Margin: the highest class probability minus the second highest."""
    z = output.detach()
    if z.dim() == 1 or z.shape[1] == 1:
        p1 = torch.sigmoid(z.reshape(-1, 1).float())
        logp = torch.cat([F.logsigmoid(-z.reshape(-1, 1).float()),
                          F.logsigmoid(z.reshape(-1, 1).float())], dim=1)
        probs = torch.cat([1 - p1, p1], dim=1)
    else:
        logp = torch.log_softmax(z.float(), dim=1)
        probs = logp.exp()
    if metric == "LeastConfidence":
        return probs.max(dim=1).values
    if metric == "Entropy":
        return (probs * logp).sum(dim=1)
    if metric == "Margin":
        top2 = probs.topk(2, dim=1).values
        return top2[:, 0] - top2[:, 1]
    raise ValueError(f"score_metric: {metric!r} is not one of "
                     f"{', '.join(SCORE_METRICS)}")


# ---------------------------------------------------------------------------
# Downsamplers.

def _epoch_seed(seed, trigger, epoch):
    """One 63-bit seed of (seed, trigger, epoch), through numpy's
    SeedSequence rather than their sum, so that trigger 1's epoch 0 does
    not draw what trigger 0's epoch 1 drew."""
    state = np.random.SeedSequence([seed, trigger, epoch]).generate_state(
        2, np.uint32)
    return (int(state[0]) << 31) ^ int(state[1])


def _ids_array(ids):
    """Sample keys (a tensor, array or list) as a uint64 numpy array."""
    if isinstance(ids, torch.Tensor):
        ids = ids.detach().cpu().numpy()
    return np.asarray(ids).astype(np.uint64, copy=False).reshape(-1)


def _count(ids):
    """How many sample keys ids (a tensor, array or list) holds."""
    return ids.numel() if isinstance(ids, torch.Tensor) else int(np.size(ids))


def _tensor(x, dtype=None):
    if isinstance(x, torch.Tensor):
        return x if dtype is None else x.to(dtype)
    return torch.as_tensor(np.asarray(x), dtype=dtype)


class Downsampler:
    """What every strategy shares, as Modyn's remote downsamplers:
    inform_samples accumulates scores, select_points chooses and starts
    afresh.

    ratio / ratio_max: the share kept, at least one sample of any set
    shown (Modyn's max(int(ratio * n / ratio_max), 1), in integers);
    whole numbers, 0 <= ratio <= ratio_max, else a ValueError naming
    the one at fault, as a config's.
    seed, trigger: with the epoch (set_epoch), seed the random choices.
    sample_then_batch, period: the mode the config asked for, for the
    training script to follow. loss(output, target): per-sample losses
    (default per_sample_loss)."""

    requires_forward = True   # RS2 chooses without the model's outputs
    supports_bts = True       # RS2 chooses before batching only
    needs_targets = False     # a balanced choice splits by label

    def __init__(self, ratio, ratio_max=100, *, seed=0, trigger=0,
                 sample_then_batch=False, period=1, loss=None):
        # whole numbers, as a config's: a fraction made target_size a
        # float, which torch.topk refused at the first choice
        where = type(self).__name__
        ratio_max = aegis_checks.check_whole(f"{where}.ratio_max",
                                             ratio_max, 1)
        ratio = aegis_checks.check_whole(f"{where}.ratio", ratio, 0,
                                         ratio_max)
        self.ratio, self.ratio_max = ratio, ratio_max
        self.seed, self.trigger = seed, trigger
        self.sample_then_batch, self.period = sample_then_batch, period
        self.loss = loss or per_sample_loss
        self._reset()
        self.set_epoch(0)

    def __repr__(self):
        return (f"{type(self).__name__}(ratio={self.ratio}/"
                f"{self.ratio_max}, sample_then_batch="
                f"{self.sample_then_batch}, period={self.period})")

    def set_epoch(self, epoch):
        """Seeds the choices of `epoch` from (seed, trigger, epoch)."""
        epoch = aegis_checks.check_whole("set_epoch.epoch", epoch, 0)
        self.epoch = epoch
        self._gen = torch.Generator().manual_seed(
            _epoch_seed(self.seed, self.trigger, epoch))

    def target_size(self, n):
        """How many of n samples are kept."""
        return max(self.ratio * n // self.ratio_max, 1) if n else 0

    def _reset(self):
        self._ids, self._scores, self._targets = [], [], []

    def inform_samples(self, sample_ids, forward_output, target,
                       embedding=None, forward_input=None):
        """Scores a batch: its keys (as many as it has samples, else a
        ValueError), the model's outputs on it, its targets; embedding,
        the last layer's inputs (GradNorm); forward_input, the batch
        itself (RHOLoss's function). Tensors or numpy arrays."""
        target = _tensor(target)
        scores = self._score(sample_ids, _tensor(forward_output), target,
                             embedding if embedding is None
                             else _tensor(embedding), forward_input)
        # The choice is made on the CPU, where the seeded generator draws:
        # one small copy a batch, and the same draws whatever the device.
        scores = scores.detach().float().cpu().reshape(-1)
        # The keys are matched to the scores by position over all batches
        # informed: one batch's count off would shift every later key.
        if len(scores) != _count(sample_ids):
            raise ValueError(f"inform_samples: {_count(sample_ids)} "
                             f"sample_ids but {len(scores)} scores (one "
                             f"row of forward_output per sample)")
        self._ids.append(sample_ids)
        self._scores.append(scores)
        if self.needs_targets:
            self._targets.append(target.detach().cpu().reshape(-1))

    def _score(self, sample_ids, output, target, embedding, forward_input):
        raise NotImplementedError

    def select_positions(self):
        """The choice among the samples informed since the last one: their
        positions in the order informed (a rising int64 tensor) and their
        weights (float32 tensor); starts afresh. What batch-then-sample
        uses, without keys.

        Modyn returns some strategies' choices in draw order or shuffled;
        aegis keeps the order informed, which is reproducible and costs
        nothing: a batch's order does not change its gradient, and
        sample-then-batch writes its keys in key order for TrainingSet to
        shuffle by epoch."""
        scores = torch.cat(self._scores) if self._scores else torch.empty(0)
        targets = torch.cat(self._targets) if self._targets else None
        self._reset()
        positions, weights = self._choose(scores, targets)
        positions, order = torch.sort(positions)
        return positions, weights[order].float()

    def select_points(self):
        """The keys chosen among the samples informed since the last
        choice, in the order informed (uint64 array), and their weights
        (float32 array); starts afresh."""
        ids = self._ids
        positions, weights = self.select_positions()
        keys = np.concatenate([_ids_array(i) for i in ids]) if ids \
            else np.empty(0, np.uint64)
        return keys[positions.numpy()], weights.numpy()

    def _choose(self, scores, targets):
        raise NotImplementedError


def _proportional(scores, k, gen, all_positive):
    """k positions drawn without replacement, each draw in proportion to
    the scores not yet drawn: in distribution Modyn's
    torch.multinomial(p, k, replacement=False), in one vectorised pass
    instead of k draws (Efraimidis and Spirakis: the k smallest E_i / s_i,
    E_i exponential). Zero scores are drawn last, uniformly, only when
    fewer than k scores are positive (torch.multinomial fails there)."""
    e = torch.empty(len(scores), dtype=scores.dtype).exponential_(
        generator=gen)
    keys = e / scores                          # a zero score: infinity
    if not all_positive:
        positive = scores > 0
        npos = int(positive.sum())
        if npos < k:
            top = float(keys[positive].max()) if npos else 0.0
            keys = torch.where(positive, keys, top + 1 + e)
    return torch.topk(keys, k, largest=False).indices


class _ImportanceSampling(Downsampler):
    """Loss and GradNorm: k samples drawn in proportion to their scores s,
    p_i = s_i / sum(s), and weighted as Modyn's, 1 / (n * p_i), so that the
    weighted mean of the kept losses estimates the mean over all n."""

    def _choose(self, scores, targets):
        n = len(scores)
        k = self.target_size(n)
        if k == 0:
            return torch.empty(0, dtype=torch.long), torch.empty(0)
        lo, hi = (float(v) for v in torch.aminmax(scores))
        if not (lo >= 0 and math.isfinite(hi)):   # NaN fails both
            raise ValueError(f"{type(self).__name__}: scores must be finite "
                             f"and >= 0 to draw in proportion to them (got "
                             f"{lo} to {hi})")
        total = float(scores.sum(dtype=torch.float64))
        if total == 0:
            # Nothing to prefer (all losses zero): uniform, weight 1, as
            # Modyn's guarded version does.
            return torch.randperm(n, generator=self._gen)[:k], torch.ones(k)
        chosen = _proportional(scores, k, self._gen, lo > 0)
        s = scores[chosen].double()
        weights = total / (n * s)
        if lo == 0:
            # A zero score drawn to make up k (see _proportional) has
            # weight 0: its loss is 0, so leaving it out keeps the estimate
            # unbiased where Modyn's 1 / (n * 0) is infinite.
            weights = torch.where(s > 0, weights, torch.zeros_like(s))
        return chosen, weights


class Loss(_ImportanceSampling):
    """Modyn's RemoteLossDownsampling (Katharopoulos and Fleuret, "Not All
    Samples Are Created Equal"): the score is the sample's loss."""

    def _score(self, sample_ids, output, target, embedding, forward_input):
        with torch.no_grad():
            return self.loss(output.detach(), target)


class GradNorm(_ImportanceSampling):
    """Modyn's RemoteGradNormDownsampling: the score is the norm of the
    loss gradient at the last layer (gradnorm_scores; with an embedding,
    that of the last linear layer's weights and bias, bias=False when it
    has none). A custom loss= is differentiated by autograd on the
    outputs alone, so the scoring forward pass needs no gradients."""

    def __init__(self, ratio, ratio_max=100, *, bias=True, **kw):
        self.bias = bias
        super().__init__(ratio, ratio_max, **kw)

    def _score(self, sample_ids, output, target, embedding, forward_input):
        custom = None if self.loss is per_sample_loss else self.loss
        return gradnorm_scores(output, target, embedding, self.bias, custom)


class Uncertainty(Downsampler):
    """Modyn's RemoteUncertaintyDownsamplingStrategy (Coleman et al.,
    "Selection via Proxy"): keeps the k most uncertain samples by
    score_metric (uncertainty_scores: the smallest scores), weight 1. Ties
    go to the sample informed first (a stable sort; Modyn's np.argsort is
    not stable). balance=True keeps ratio of each label separately
    (sample-then-batch only, as Modyn), at least one of each."""

    def __init__(self, score_metric, ratio, ratio_max=100, *, balance=False,
                 **kw):
        if score_metric not in SCORE_METRICS:
            raise ValueError(f"score_metric: {score_metric!r} is not one of "
                             f"{', '.join(SCORE_METRICS)}")
        self.score_metric, self.balance = score_metric, balance
        self.needs_targets = balance
        super().__init__(ratio, ratio_max, **kw)

    def _score(self, sample_ids, output, target, embedding, forward_input):
        return uncertainty_scores(output, self.score_metric)

    def _smallest(self, scores, positions):
        k = self.target_size(len(positions))
        order = torch.sort(scores[positions], stable=True).indices
        return positions[order[:k]]

    def _choose(self, scores, targets):
        everyone = torch.arange(len(scores))
        if not self.balance:
            chosen = self._smallest(scores, everyone)
        else:
            chosen = torch.cat([self._smallest(scores, everyone[targets == y])
                                for y in torch.unique(targets)]) \
                if len(scores) else everyone
        return chosen, torch.ones(len(chosen))


class RHOLoss(Downsampler):
    """Modyn's RemoteRHOLossDownsampling (Mindermann et al., "Prioritized
    Training on Points that are Learnable, Worth Learning, and Not Yet
    Learnt"): keeps the k samples with the largest reducible loss, the
    training loss minus the irreducible loss, weight 1.

    The irreducible loss of a sample is the loss of an IL model trained
    on held-out data. Modyn trains that model itself: an auxiliary
    pipeline on a holdout of holdout_set_ratio of each trigger's training
    set (Simple), or two models on the halves of it, each scoring the half
    it did not see (Twin), configured by il_training_config. aegis leaves
    the IL model to the user and takes its losses as irreducible_loss:
    a function (sample_ids, forward_input, target) -> per-sample losses,
    or an array of them indexed by sample key (computed once, e.g. by an
    embedding job); the holdout keys are checked and otherwise unused.
    A key shown without an irreducible loss (NaN, or past the array) is
    a ValueError naming it."""

    def __init__(self, irreducible_loss, ratio, ratio_max=100, **kw):
        if not callable(irreducible_loss):
            irreducible_loss = np.asarray(irreducible_loss, dtype=np.float32)
            if irreducible_loss.ndim != 1:
                raise ValueError("irreducible_loss: expected a function or "
                                 "a 1-D array indexed by sample key")
        self.irreducible_loss = irreducible_loss
        super().__init__(ratio, ratio_max, **kw)

    def _irreducible(self, sample_ids, forward_input, target):
        il = self.irreducible_loss
        if callable(il):
            losses = _tensor(il(sample_ids, forward_input, target)).float()
            if losses.numel() != _count(sample_ids):
                raise ValueError(f"irreducible_loss: returned "
                                 f"{losses.numel()} losses for "
                                 f"{_count(sample_ids)} samples")
        else:
            keys = _ids_array(sample_ids)
            if len(keys) and int(keys.max()) >= len(il):
                raise ValueError(f"irreducible_loss: no loss for key "
                                 f"{int(keys.max())} (array of {len(il)})")
            losses = torch.from_numpy(il[keys.astype(np.int64)])
        # NaN (irreducible_losses' mark of a key the IL models did not
        # score) sorts above every reducible loss: those keys were kept
        # first, silently.
        unscored = torch.isnan(losses.reshape(-1)).nonzero()
        if len(unscored):
            key = int(_ids_array(sample_ids)[int(unscored[0])])
            raise ValueError(f"irreducible_loss: no loss for key {key} "
                             f"(NaN): its IL model did not score it")
        return losses

    def _score(self, sample_ids, output, target, embedding, forward_input):
        with torch.no_grad():
            training = self.loss(output.detach(), target).float().cpu()
        il = self._irreducible(sample_ids, forward_input, target)
        return training.reshape(-1) - il.cpu().reshape(-1)

    def _choose(self, scores, targets):
        k = self.target_size(len(scores))
        chosen = torch.sort(scores, descending=True, stable=True).indices[:k]
        return chosen, torch.ones(len(chosen))


class RS2(Downsampler):
    """Modyn's RemoteRS2Downsampling (Okanovic et al., "Repeated Random
    Sampling for Minimizing the Time-to-Accuracy of Learning"): a uniform
    random subset each epoch, weight 1, chosen before batching, without a
    forward pass (inform_samples needs only the keys).

    with_replacement=True: each epoch's subset drawn afresh from all
    samples. False: the samples shuffled once and cut into n // k subsets
    of k, one an epoch, so that n // k epochs see each sample once (the
    n % k left over wait for the next shuffle), then shuffled again, as
    Modyn's. Modyn keeps the shuffled list between epochs; aegis derives
    epoch e's subset from (seed, trigger, e // (n // k)) and the keys in
    key order, so a restarted job chooses the same without that state."""

    requires_forward = False
    supports_bts = False

    def __init__(self, ratio, ratio_max=100, *, with_replacement=False,
                 **kw):
        self.with_replacement = with_replacement
        super().__init__(ratio, ratio_max, **kw)

    def inform_samples(self, sample_ids, forward_output=None, target=None,
                       embedding=None, forward_input=None):
        self._ids.append(sample_ids)

    def select_points(self):
        keys = np.sort(np.concatenate([_ids_array(i) for i in self._ids])) \
            if self._ids else np.empty(0, np.uint64)
        self._reset()
        chosen = np.sort(keys[self._subset(len(keys)).numpy()])
        return chosen, np.ones(len(chosen), np.float32)

    def select_positions(self):
        raise ValueError("RS2 chooses before batching (sample_then_batch), "
                         "as Modyn's: it has no batch-then-sample mode")

    def _subset(self, n):
        k = self.target_size(n)
        if k == 0:
            return torch.empty(0, dtype=torch.long)
        if self.with_replacement:
            return torch.randperm(n, generator=self._gen)[:k]
        per_shuffle = n // k
        shuffle, part = divmod(self.epoch, per_shuffle)
        gen = torch.Generator().manual_seed(
            _epoch_seed(self.seed, self.trigger, shuffle))
        return torch.randperm(n, generator=gen)[part * k:(part + 1) * k]


# ---------------------------------------------------------------------------
# Batch then sample.

def _take(x, positions):
    """The rows of a batch at positions: a tensor, a numpy array, a dict or
    tuple of them, or a list of per-sample items."""
    if isinstance(x, torch.Tensor):
        return x.index_select(0, positions.to(x.device))
    if isinstance(x, np.ndarray):
        return x[positions.numpy()]
    if isinstance(x, dict):
        return {k: _take(v, positions) for k, v in x.items()}
    if isinstance(x, (tuple, list)) and x and \
            isinstance(x[0], (torch.Tensor, np.ndarray)):
        return type(x)(_take(v, positions) for v in x)
    return [x[i] for i in positions.tolist()]


def _cat(parts):
    first = parts[0]
    if len(parts) == 1:
        return first
    if isinstance(first, torch.Tensor):
        return torch.cat(parts)
    if isinstance(first, np.ndarray):
        return np.concatenate(parts)
    if isinstance(first, dict):
        return {k: _cat([p[k] for p in parts]) for k in first}
    if isinstance(first, (tuple, list)) and first and \
            isinstance(first[0], (torch.Tensor, np.ndarray)):
        return type(first)(_cat(list(f)) for f in zip(*parts))
    return [item for p in parts for item in p]


def _slice(x, start, end):
    if isinstance(x, dict):
        return {k: _slice(v, start, end) for k, v in x.items()}
    if isinstance(x, (tuple, list)) and x and \
            isinstance(x[0], (torch.Tensor, np.ndarray)):
        return type(x)(_slice(v, start, end) for v in x)
    return x[start:end]


def _to(x, device):
    if device is None:
        return x
    if isinstance(x, torch.Tensor):
        return x.to(device, non_blocking=True)
    if isinstance(x, dict):
        return {k: _to(v, device) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return type(x)(_to(v, device) for v in x)
    return x


class BatchAccumulator:
    """Rebuilds full batches of batch_size from the parts of batches that
    selection kept, in order; flush() gives the last, partial one at the
    end of an epoch.

    Modyn's accumulator joins a fixed number of kept parts, so it needs
    batch_size to be a multiple of the kept part's size and fails on an
    epoch's short last batch; this one cuts the joined parts at exactly
    batch_size and carries the rest over, so any ratio works, and it
    leaves the tensors on their device (Modyn moves them to the CPU and
    back). A part is (inputs, targets, weights, ids); one torch.cat a full
    batch, no per-sample work."""

    def __init__(self, batch_size):
        if batch_size < 1:
            raise ValueError(f"batch_size: {batch_size} is not >= 1")
        self.batch_size = batch_size
        self._parts, self._count = [], 0

    def __len__(self):
        return self._count

    def add(self, inputs, targets, weights, ids):
        """Adds a kept part; returns the full batches it completes (a list,
        usually of none or one)."""
        n = len(ids)
        if n == 0:
            return []
        self._parts.append((inputs, targets, weights, ids))
        self._count += n
        if self._count < self.batch_size:
            return []
        whole = tuple(_cat(list(f)) for f in zip(*self._parts))
        full = self._count - self._count % self.batch_size
        out = [tuple(_slice(f, a, a + self.batch_size) for f in whole)
               for a in range(0, full, self.batch_size)]
        rest = self._count - full
        self._parts = [tuple(_slice(f, full, self._count) for f in whole)] \
            if rest else []
        self._count = rest
        return out

    def flush(self):
        """The partial batch left (inputs, targets, weights, ids), or None."""
        if not self._count:
            return None
        whole = tuple(_cat(list(f)) for f in zip(*self._parts))
        self._parts, self._count = [], 0
        return whole


def _scoring_pass(forward, inputs):
    """forward(inputs) -> (output, embedding or None) without gradients;
    a torch.nn.Module in eval mode for it and back (as Modyn: dropout
    does not blur the scores, batch-norm statistics do not move)."""
    module = forward if isinstance(forward, torch.nn.Module) else None
    was_training = module is not None and module.training
    if was_training:
        module.eval()
    try:
        with torch.no_grad():
            out = forward(inputs)
    finally:
        if was_training:
            module.train()
    if isinstance(out, (tuple, list)):
        return out[0], out[1]
    return out, None


def _unpack(batch):
    """A loader batch of TrainingSet(keys=True): (inputs, targets, weights,
    ids), or (inputs, targets, ids) with weights=False."""
    if len(batch) == 4:
        return tuple(batch)
    if len(batch) == 3:
        return batch[0], batch[1], None, batch[2]
    raise ValueError(f"batch-then-sample: expected batches of (sample, "
                     f"label, weight, key) or (sample, label, key), got "
                     f"{len(batch)} items (TrainingSet(keys=True))")


class BatchThenSample:
    """Batch-then-sample training with a downsampler: select() keeps ratio
    of a scored batch, batches() runs a whole epoch's loader through
    scoring, selection and a BatchAccumulator.

    batch_size: of the batches trained on (default the loader's); device:
    where batches go before scoring (default where they are)."""

    def __init__(self, downsampler, batch_size=None, device=None):
        if not downsampler.supports_bts:
            raise ValueError(f"{type(downsampler).__name__} chooses before "
                             f"batching (sample_then_batch), as Modyn's: it "
                             f"has no batch-then-sample mode")
        self.downsampler = downsampler
        self.batch_size = batch_size
        self.device = device

    def set_epoch(self, epoch):
        self.downsampler.set_epoch(epoch)

    def select(self, inputs, targets, ids, forward_output, embedding=None,
               weights=None):
        """The kept part of one scored batch: (inputs, targets, weights,
        ids). weights (the batch's own, e.g. the training set's) multiply
        the downsampler's; Modyn replaces them, which is the same while
        aegis's are 1."""
        d = self.downsampler
        d.inform_samples(ids, forward_output, targets, embedding,
                         forward_input=inputs)
        positions, kept = d.select_positions()
        if weights is not None:
            kept = kept * _take(_tensor(weights), positions).cpu().float()
        device = targets.device if isinstance(targets, torch.Tensor) \
            else None
        return (_take(inputs, positions), _take(targets, positions),
                kept.to(device) if device is not None else kept,
                _take(ids, positions))

    def batches(self, loader, forward):
        """The full batches (inputs, targets, weights, ids) of one epoch:
        each loader batch scored by forward(inputs) (its output, or
        (output, embedding) for GradNorm with an embedding), ratio of it
        kept, the kept parts joined, the last partial batch at the end."""
        size = self.batch_size or getattr(loader, "batch_size", None)
        if not size:
            raise ValueError("batch-then-sample: give batch_size (the "
                             "loader has none)")
        acc = BatchAccumulator(size)
        for batch in loader:
            inputs, targets, weights, ids = _unpack(batch)
            inputs, targets = _to(inputs, self.device), _to(targets,
                                                            self.device)
            output, embedding = _scoring_pass(forward, inputs)
            yield from acc.add(*self.select(inputs, targets, ids, output,
                                            embedding, weights))
        rest = acc.flush()
        if rest is not None:
            yield rest


def weighted_loss(per_sample, weights):
    """Modyn's weighted loss: dot(loss, w / sum(w)), a weight per loss
    (else a ValueError naming both sizes: it was torch.dot's RuntimeError,
    naming neither argument). All-zero weights give 0 (Modyn's would be
    NaN), without a device sync to find out."""
    w = torch.as_tensor(weights, dtype=per_sample.dtype,
                        device=per_sample.device)
    if w.numel() != per_sample.numel():
        raise ValueError(f"weighted_loss: per_sample holds "
                         f"{per_sample.numel()} losses but weights holds "
                         f"{w.numel()}; give one weight a loss")
    total = w.sum()
    total = torch.where(total > 0, total, torch.ones_like(total))
    return torch.dot(per_sample.reshape(-1), w.reshape(-1) / total)


# ---------------------------------------------------------------------------
# Sample then batch.

_TRAINSET_HEADER = struct.Struct("<8sQQII")   # src/pipeline/trainset.h
_ITEM = np.dtype([("key", "<u8"), ("weight", "<f4"), ("reserved", "<u4")])


def _chosen_at(epoch, period):
    """The epoch whose choice trains `epoch`: the last that started a
    period (period 0: epoch 0 chooses once for all, as Modyn's)."""
    return 0 if period == 0 else epoch - epoch % period


def selection_path(trainset, epoch, period):
    """Where the choice that trains `epoch` lives: next to the training
    set, named by the epoch that chose it."""
    return f"{trainset}.sel{_chosen_at(epoch, period)}"


def _write_trainset(path, keys, weights, seed, trigger):
    """keys and weights as a training set (src/pipeline/trainset.h):
    through a temporary name, synced, renamed, so that a reader sees the
    whole set or none; the temporary name is the process's own, so two
    attempts of a job cannot mix their writes."""
    items = np.zeros(len(keys), _ITEM)
    items["key"], items["weight"] = keys, weights
    body = _TRAINSET_HEADER.pack(b"AEGTSET1", len(keys), seed, trigger, 0) \
        + items.tobytes()
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(body + struct.pack("<I", zlib.crc32(body)))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_READER_OPTIONS = ("bytes_parser", "transform", "label_transform")


def sample_then_batch(downsampler, forward, epoch, batch_size=256,
                      trainset=None, dataset=None, num_workers=0,
                      device=None, **options):
    """The training set that trains `epoch` (an aegis_pipeline.TrainingSet
    over the samples chosen for it).

    When epoch starts a period (every `period` epochs, only epoch 0 for
    period 0) and its choice is not on disk yet, one scoring pass without
    gradients runs forward over the whole training set (trainset, default
    $AEGIS_TRAINSET; batches of batch_size from num_workers DataLoader
    workers, moved to device), the downsampler chooses, and the choice is
    written as a training set (keys in key order, weight the training
    set's times the downsampler's) at selection_path. Otherwise the
    choice on disk is read: a retried job trains on what its first
    attempt chose, without scoring again. RS2 chooses from the keys
    alone, without a pass.

    options go to TrainingSet: bytes_parser, transform, label_transform
    (for the pass too), and seed, shuffle, weights, keys for the result.
    forward returns the outputs, or (outputs, embedding) for GradNorm."""
    trainset = trainset or os.environ["AEGIS_TRAINSET"]
    dataset = dataset if isinstance(dataset, aegis_pipeline.Dataset) \
        else aegis_pipeline.Dataset(dataset)
    path = selection_path(trainset, epoch, downsampler.period)
    if not os.path.exists(path):
        keys, weights, seed, trigger = aegis_pipeline.read_trainset(trainset)
        downsampler.set_epoch(_chosen_at(epoch, downsampler.period))
        if downsampler.requires_forward:
            reader = {k: v for k, v in options.items()
                      if k in _READER_OPTIONS}
            _score_all(downsampler, forward, trainset, dataset, batch_size,
                       num_workers, device, reader)
        else:
            downsampler.inform_samples(keys)
        chosen, factor = downsampler.select_points()
        order = np.argsort(chosen, kind="stable")
        chosen, factor = chosen[order], factor[order]
        where = np.argsort(keys, kind="stable")
        own = weights[where[np.searchsorted(keys[where], chosen)]] \
            if len(chosen) else np.empty(0, np.float32)
        _write_trainset(path, chosen, own * factor, seed, trigger)
    return aegis_pipeline.TrainingSet(path, dataset, **options)


def _score_all(downsampler, forward, trainset, dataset, batch_size,
               num_workers, device, reader):
    """One scoring pass over the whole training set, into downsampler."""
    samples = aegis_pipeline.TrainingSet(trainset, dataset, shuffle=False,
                                         weights=False, keys=True, **reader)
    loader = torch.utils.data.DataLoader(samples, batch_size=batch_size,
                                         num_workers=num_workers)
    for inputs, targets, ids in loader:
        inputs, targets = _to(inputs, device), _to(targets, device)
        output, embedding = _scoring_pass(forward, inputs)
        downsampler.inform_samples(ids, output, targets, embedding,
                                   forward_input=inputs)
