"""train_drift.py -- the training command of e2e_pipeline.sh's done_when
case: a linear classifier on a generated tabular stream's features
(aegis dataset gen tabular), trained on the CPU on its trigger's training
set through aegis_pipeline, starting from the previous trigger's model.

Before training it scores the model it starts from on the new training
set, after training the trained one, and appends both to the file named
by $E2E_ACCURACY ({"trigger", "before", "after"}, one JSON line a run): a
model retrained after a drift point recovers its accuracy there.
"""
import json
import os

import torch
from aegis_pipeline import TrainingSet


def accuracy(model, x, y):
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def main():
    rows = list(TrainingSet(shuffle=False))
    x = torch.stack([torch.as_tensor(r[0], dtype=torch.float32) for r in rows])
    y = torch.as_tensor([int(r[1]) for r in rows])
    classes = int(os.environ.get("E2E_CLASSES", "4"))
    model = torch.nn.Linear(x.shape[1], classes)
    prev = os.environ.get("AEGIS_PREV_MODEL")
    if prev:
        model.load_state_dict(torch.load(prev))
    before = accuracy(model, x, y) if prev else 1.0 / classes
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    epochs = int(os.environ.get("AEGIS_EPOCHS_PER_TRIGGER") or 1)
    torch.manual_seed(int(os.environ.get("AEGIS_SEED") or 0))
    for _ in range(epochs):
        for i in torch.randperm(len(y)).split(64):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x[i]), y[i]).backward()
            opt.step()
    out = os.environ["AEGIS_MODEL_OUT"]
    torch.save(model.state_dict(), out + ".tmp")
    os.replace(out + ".tmp", out)
    with open(os.environ["E2E_ACCURACY"], "a") as f:
        f.write(json.dumps({"trigger": int(os.environ["AEGIS_TRIGGER"]),
                            "before": before,
                            "after": accuracy(model, x, y)}) + "\n")


if __name__ == "__main__":
    main()
