"""eval_select.py -- the evaluation command of train_select.py's models:
predicts $AEGIS_EVAL_KEYS with $AEGIS_MODEL (one score a class) into
$AEGIS_EVAL_OUT, for aegis to compute the metrics.
"""
import os

import numpy as np
import torch

from aegis_pipeline import TrainingSet, save_predictions
from train_select import build


def main():
    samples = TrainingSet(os.environ["AEGIS_EVAL_KEYS"], shuffle=False,
                          weights=False)
    x = torch.as_tensor(np.stack([s for s, _ in samples]),
                        dtype=torch.float32)
    model = build(x.shape[1])
    model.load_state_dict(torch.load(os.environ["AEGIS_MODEL"]))
    with torch.no_grad():
        save_predictions(samples.keys, scores=model(x).numpy())


if __name__ == "__main__":
    main()
