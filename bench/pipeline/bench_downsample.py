"""Batch-then-sample selection's own cost: Loss downsampling at 50% while
training a small MLP on synthetic data, on the CPU, through
aegis_downsample.BatchThenSample.batches (a scoring forward pass a loader
batch, the choice, batches rebuilt to full size).

An epoch's time is split into the forward passes that score the batches,
the training steps (forward, loss, backward, optimiser step) on the
rebuilt batches, and the rest: selection, bookkeeping and loading, the
overhead. Prints the overhead's share of the epoch (goal < 15%) and, as
a reference measured in the same run, the full-data epoch's time and the
ratio of the downsampled epoch's time to it.

usage: bench_downsample.py [--samples N] [--batch B] [--dim D]
       [--hidden H] [--epochs E] [--ratio R]   (PYTHONPATH names python/)
"""
import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

# The source tree's python/ unless PYTHONPATH names another aegis_downsample.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "..", "python"))
import aegis_downsample  # noqa: E402

CLASSES = 10


class Clock:
    """Seconds spent in named parts (CPU tensors: no device to wait for,
    so the wall clock around a call is its cost)."""

    def __init__(self):
        self.spent = {}

    def timed(self, name, fn):
        def run(*args):
            start = time.perf_counter()
            try:
                return fn(*args)
            finally:
                self.spent[name] = self.spent.get(name, 0.0) + \
                    time.perf_counter() - start
        return run

    def __getitem__(self, name):
        return self.spent.get(name, 0.0)


def synthetic(n, dim, seed=0):
    """Gaussian features labelled by a random linear teacher: a task the
    MLP can learn, so that losses differ between samples."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, dim, generator=gen)
    teacher = torch.randn(dim, CLASSES, generator=gen)
    return x, (x @ teacher).argmax(dim=1)


def loader(x, y, batch, epoch, clock):
    """What a DataLoader over TrainingSet(keys=True) gives, from memory:
    (samples, labels, weights, keys), shuffled by epoch; its time is the
    'loading' part."""
    def batches():
        order = torch.randperm(len(x), generator=torch.Generator()
                               .manual_seed(epoch))
        for start in range(0, len(x), batch):
            ids = order[start:start + batch]
            ones = torch.ones(len(ids), dtype=torch.float64)
            yield x[ids], y[ids], ones, ids
    it = batches()
    step = clock.timed("loading", lambda: next(it, None))
    while True:
        b = step()
        if b is None:
            return
        yield b


def mlp(dim, hidden):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(dim, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, hidden),
                               torch.nn.ReLU(),
                               torch.nn.Linear(hidden, CLASSES))


def full_epoch(model, opt, x, y, args, epoch):
    clock = Clock()

    def step(inputs, labels):
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(inputs), labels).backward()
        opt.step()
    step = clock.timed("training", step)
    start = time.perf_counter()
    for inputs, labels, _, _ in loader(x, y, args.batch, epoch, clock):
        step(inputs, labels)
    return time.perf_counter() - start, clock, len(x)


def downsampled_epoch(model, opt, x, y, args, epoch):
    clock = Clock()
    bts = aegis_downsample.BatchThenSample(
        aegis_downsample.make({"strategy": "Loss", "ratio": args.ratio},
                              seed=1), batch_size=args.batch)
    bts.set_epoch(epoch)
    score = clock.timed("scoring", model)

    def step(inputs, labels, weights):
        opt.zero_grad(set_to_none=True)
        per_sample = F.cross_entropy(model(inputs), labels, reduction="none")
        aegis_downsample.weighted_loss(per_sample, weights).backward()
        opt.step()
    step = clock.timed("training", step)
    trained = 0
    start = time.perf_counter()
    for inputs, labels, weights, ids in bts.batches(
            loader(x, y, args.batch, epoch, clock), score):
        step(inputs, labels, weights)
        trained += len(ids)
    return time.perf_counter() - start, clock, trained


def measure(kind, args, x, y):
    """Epoch 0 warms up (allocator, threads); the median of the others."""
    model = mlp(args.dim, args.hidden)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    run = full_epoch if kind == "full" else downsampled_epoch
    rows = [run(model, opt, x, y, args, e) for e in range(args.epochs + 1)]
    return sorted(rows[1:], key=lambda row: row[0])[len(rows[1:]) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=16384)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--ratio", type=int, default=50)
    args = ap.parse_args()
    x, y = synthetic(args.samples, args.dim)
    print(f"bench_downsample: {args.samples} samples of {args.dim} "
          f"features, MLP {args.dim}-{args.hidden}-{args.hidden}-{CLASSES}, "
          f"batch {args.batch}, Loss at {args.ratio}%, "
          f"{torch.get_num_threads()} threads, median of {args.epochs} "
          f"epochs")

    full, fclock, _ = measure("full", args, x, y)
    down, clock, trained = measure("down", args, x, y)
    overhead = down - clock["scoring"] - clock["training"]
    share = overhead / down
    print(f"full epoch:        {full * 1e3:8.1f} ms (training steps "
          f"{fclock['training'] * 1e3:.1f}, loading "
          f"{fclock['loading'] * 1e3:.1f})")
    print(f"downsampled epoch: {down * 1e3:8.1f} ms, {trained} of "
          f"{args.samples} samples trained on")
    print(f"  scoring forward passes {clock['scoring'] * 1e3:8.1f} ms")
    print(f"  training steps         {clock['training'] * 1e3:8.1f} ms")
    print(f"  overhead               {overhead * 1e3:8.1f} ms (of which "
          f"loading {clock['loading'] * 1e3:.1f})")
    print(f"overhead share {share * 100:.1f}% (goal < 15%): "
          f"{'ok' if share < 0.15 else 'MISSED'}")
    print(f"downsampled / full epoch time: {down / full:.2f}")
    return 0 if share < 0.15 else 1


if __name__ == "__main__":
    sys.exit(main())
