"""Training input: a trigger's training set of a random 10% of a
1M-sample dataset (160-byte binary records, in the page cache), read
through aegis_pipeline by a DataLoader-only loop (2 workers, no compute),
against the same samples stored contiguously in one file and read by a
plain map-style DataLoader with shuffling. Prints samples/s of both, the
ratio and the goal (>= 0.9; Modyn reports 80-100%).

usage: bench_input.py --aegis AEGIS [--samples N] [--ratio R]
       [--workers W] [--batch B] [--rounds K]   (PYTHONPATH names python/)
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np
import torch.utils.data

# The source tree's python/ unless PYTHONPATH names another aegis_pipeline.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "..", "python"))
import aegis_pipeline  # noqa: E402

LABEL = 4


def parse(mv):
    """The user's bytes_parser of both loaders: the float32 features."""
    return np.frombuffer(mv, "<f4", offset=LABEL)


class Contiguous(torch.utils.data.Dataset):
    """The baseline: records one after another in one file, mapped."""

    def __init__(self, path, record, labels):
        with open(path, "rb") as f:
            import mmap
            self.mv = memoryview(mmap.mmap(f.fileno(), 0,
                                           access=mmap.ACCESS_COPY))
        self.record, self.labels = record, labels.tolist()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        at = i * self.record
        return parse(self.mv[at:at + self.record]), self.labels[i]


def write_trainset(path, keys, seed=1, trigger=0):
    """A training set as src/pipeline/trainset.h lays it out."""
    items = np.zeros(len(keys), [("key", "<u8"), ("weight", "<f4"),
                                 ("reserved", "<u4")])
    items["key"], items["weight"] = keys, 1.0
    body = struct.pack("<8sQQII", b"AEGTSET1", len(keys), seed, trigger, 0) \
        + items.tobytes()
    with open(path, "wb") as f:
        f.write(body + struct.pack("<I", zlib.crc32(body)))


def make_dataset(tmp, aegis, samples):
    env = dict(os.environ, AEGIS_STATE_HOME=os.path.join(tmp, "state"))
    data = os.path.join(tmp, "data")
    run = lambda *a: subprocess.run([aegis, "dataset", *a], check=True,
                                    env=env, stdout=subprocess.DEVNULL)
    run("gen", "tabular", "--out", data, "--samples", str(samples),
        "--files", "10", "--dim", "39")
    with open(os.path.join(data, "drift.json")) as f:
        run("add", "b", "--dir", data, *json.load(f)["dataset_add"].split())
    run("watch", "b", "--once", "--quiet")
    return aegis_pipeline.Dataset(os.path.join(tmp, "state", "datasets", "b"))


def write_contiguous(ds, keys, path):
    """The selected samples' records, in key order, in one file."""
    parts = [np.fromfile(ds.file_path(i), np.uint8)
             for i in range(len(ds.files))]
    whole = np.concatenate(parts).reshape(len(ds), -1)
    whole[np.sort(keys)].tofile(path)
    return whole.shape[1], ds.samples["label"][np.sort(keys)]


def epoch_rate(loader):
    """Samples per second of one epoch of a loop that does nothing."""
    n, t0 = 0, time.perf_counter()
    for batch in loader:
        n += len(batch[1])
    return n / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser(description=(
        "Reads a trigger's training set through aegis_pipeline and the "
        "same samples from one contiguous file with a plain DataLoader, "
        "and prints the ratio of their samples/s against the goal."))
    ap.add_argument("--aegis", required=True,
                    help="the aegis command (it generates and registers "
                         "the dataset)")
    ap.add_argument("--samples", type=int, default=1_000_000,
                    help="samples in the dataset (default 1,000,000)")
    ap.add_argument("--ratio", type=float, default=0.1,
                    help="share of them in the training set (default 0.1)")
    ap.add_argument("--workers", type=int, default=2,
                    help="DataLoader workers of both loaders (default 2)")
    ap.add_argument("--batch", type=int, default=256,
                    help="batch size (default 256)")
    ap.add_argument("--rounds", type=int, default=9,
                    help="epochs measured after one to warm up; the best "
                         "counts (default 9)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ds = make_dataset(tmp, args.aegis, args.samples)
        keys = np.random.default_rng(1).choice(
            len(ds), int(len(ds) * args.ratio), replace=False)
        tset, flat = os.path.join(tmp, "t.tset"), os.path.join(tmp, "c.bin")
        write_trainset(tset, keys)
        record, labels = write_contiguous(ds, keys, flat)
        ours = aegis_pipeline.TrainingSet(tset, ds, bytes_parser=parse,
                                          weights=False)
        plain = Contiguous(flat, record, labels)
        # Persistent workers: an epoch measures reading, not the start of
        # the workers (the same for both, and noisy on a loaded machine).
        common = dict(batch_size=args.batch, num_workers=args.workers,
                      persistent_workers=args.workers > 0)
        loaders = {
            "aegis_pipeline": torch.utils.data.DataLoader(ours, **common),
            "contiguous": torch.utils.data.DataLoader(plain, shuffle=True,
                                                      **common)}
        best = dict.fromkeys(loaders, 0.0)
        for r in range(args.rounds + 1):   # the first round warms up
            for name, loader in loaders.items():
                rate = epoch_rate(loader)
                best[name] = max(best[name], rate) if r else 0.0
    ratio = best["aegis_pipeline"] / best["contiguous"]
    print(f"training input: {len(keys)} samples ({args.ratio:.0%} of "
          f"{args.samples}), {args.workers} workers, batch {args.batch}, "
          f"best of {args.rounds} epochs, "
          f"interleaved, persistent workers")
    for name, rate in best.items():
        print(f"  {name:15s} {rate:12.0f} samples/s")
    print(f"  ratio           {ratio:12.2f}   goal >= 0.90: "
          f"{'met' if ratio >= 0.9 else 'NOT met'} (Modyn: 0.80-1.00)")


if __name__ == "__main__":
    main()
