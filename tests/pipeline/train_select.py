"""train_select.py -- a training command for pipeline_e2e_compare and
bench-pipeline-goals: a classifier (linear, or an MLP with $E2E_HIDDEN
units) of a generated tabular stream's features, trained on the CPU on
its trigger's training set, from the previous trigger's model, with
learned selection whenever the pipeline's downsampling_config gives one
($AEGIS_DOWNSAMPLING, through aegis_downsample): batch then sample, or
sample then batch, as the config says. With $E2E_TIMES set it appends
{"pipeline", "trigger", "loop_s"} (the training loop's own seconds, with
the scoring passes, without Python's and PyTorch's start) to that file,
one JSON line a run.
"""
import json
import os
import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from aegis_downsample import BatchThenSample, from_env, sample_then_batch
from aegis_downsample import weighted_loss
from aegis_pipeline import TrainingSet

BATCH = 64


def build(dim):
    """The model: linear, or one hidden layer of $E2E_HIDDEN units."""
    classes = int(os.environ.get("E2E_CLASSES", "4"))
    hidden = int(os.environ.get("E2E_HIDDEN", "0"))
    if hidden == 0:
        return torch.nn.Linear(dim, classes)
    return torch.nn.Sequential(torch.nn.Linear(dim, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, classes))


def epoch_batches(train, ds, model, epoch):
    """This epoch's batches (x, y, w, ...): all of them, or the kept ones."""
    def forward(x):
        return model(x.float())
    if ds is None:
        return DataLoader(train, batch_size=BATCH)
    ds.set_epoch(epoch)
    if ds.sample_then_batch:
        chosen = sample_then_batch(ds, forward, epoch, batch_size=256)
        chosen.set_epoch(epoch)
        return DataLoader(chosen, batch_size=BATCH)
    bts = BatchThenSample(ds, batch_size=BATCH)
    return bts.batches(DataLoader(train, batch_size=BATCH), forward)


def main():
    seed = int(os.environ.get("AEGIS_SEED") or 0)
    torch.manual_seed(seed)
    train = TrainingSet(keys=True, seed=seed)
    first = train.dataset.bytes(int(train.keys[0]))
    model = build(len(train.dataset.default_parser()(first)))
    prev = os.environ.get("AEGIS_PREV_MODEL")
    if prev:
        model.load_state_dict(torch.load(prev))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    ds = from_env()
    began = time.perf_counter()
    for epoch in range(int(os.environ.get("AEGIS_EPOCHS_PER_TRIGGER") or 1)):
        train.set_epoch(epoch)
        for batch in epoch_batches(train, ds, model, epoch):
            x, y, w = batch[0], batch[1], batch[2]
            per_sample = F.cross_entropy(model(x.float()), y.long(),
                                         reduction="none")
            opt.zero_grad()
            weighted_loss(per_sample, w).backward()
            opt.step()
    note_time(time.perf_counter() - began)
    out = os.environ["AEGIS_MODEL_OUT"]
    torch.save(model.state_dict(), out + ".tmp")
    os.replace(out + ".tmp", out)


def note_time(seconds):
    """The training loop's seconds, for bench-pipeline-goals."""
    path = os.environ.get("E2E_TIMES")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"pipeline": os.environ["AEGIS_PIPELINE"],
                                "trigger": int(os.environ["AEGIS_TRIGGER"]),
                                "loop_s": seconds}) + "\n")


if __name__ == "__main__":
    main()
