"""tiny_train.py -- the training command of bench_pipeline_e2e.sh: Modyn's
smallest integration test's model ("Dummy": one linear layer, 10 classes,
on the CPU) trained on a trigger's training set, as a pipeline's training
job runs it ($AEGIS_TRAINSET, $AEGIS_MODEL_OUT, $AEGIS_PREV_MODEL,
$AEGIS_EPOCHS_PER_TRIGGER, $AEGIS_BATCH_SIZE; docs/pipelines.md).

The samples are those of Modyn's tiny dataset: sample n has the features
(n, n + 1) and the label n % 2, so they follow from the keys alone.
"""
import os

import numpy as np
import torch

HEADER = 32  # trainset.h: magic, count, seed, trigger, reserved
ITEM = np.dtype([("key", "<u8"), ("weight", "<f4"), ("reserved", "<u4")])


def read_keys(path):
    raw = open(path, "rb").read()
    count = int(np.frombuffer(raw, "<u8", 1, 8)[0])
    return np.frombuffer(raw, ITEM, count, HEADER)["key"].astype(np.float32)


def main():
    keys = torch.from_numpy(read_keys(os.environ["AEGIS_TRAINSET"]))
    x = torch.stack([keys, keys + 1], 1)
    y = (keys.long() % 2)
    model = torch.nn.Linear(2, 10)
    prev = os.environ.get("AEGIS_PREV_MODEL")
    if prev:
        model.load_state_dict(torch.load(prev))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batch = int(os.environ.get("AEGIS_BATCH_SIZE") or 2) or 2
    for _ in range(int(os.environ.get("AEGIS_EPOCHS_PER_TRIGGER") or 1)):
        for i in range(0, len(keys), batch):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x[i:i + batch]),
                                                     y[i:i + batch])
            loss.backward()
            opt.step()
    out = os.environ["AEGIS_MODEL_OUT"]
    torch.save(model.state_dict(), out + ".tmp")
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
