"""linear_model.py train|predict -- the model of bench_pipeline_eval.sh: a
linear classifier of a generated tabular stream (least squares on one-hot
labels, numpy only), trained on $AEGIS_TRAINSET into $AEGIS_MODEL_OUT, or
predicting $AEGIS_EVAL_KEYS with $AEGIS_MODEL into $AEGIS_EVAL_OUT (one
score a class). Also run alone, with those variables set by hand, as the
benchmark's reference.
"""
import os
import sys

import numpy as np

import aegis_pipeline


def features(keys):
    """The samples' features (the default parser's), and labels."""
    ds = aegis_pipeline.Dataset()
    parse = ds.default_parser()
    x = np.stack([parse(ds.bytes(int(k))) for k in keys])
    return np.hstack([x, np.ones((len(x), 1), np.float32)]), \
        ds.samples["label"][keys]


def train():
    keys = aegis_pipeline.read_trainset(os.environ["AEGIS_TRAINSET"])[0]
    x, y = features(keys)
    onehot = np.eye(int(y.max()) + 1)[y]
    w = np.linalg.lstsq(x, onehot, rcond=None)[0]
    out = os.environ["AEGIS_MODEL_OUT"]
    with open(out + ".tmp", "wb") as f:
        np.save(f, w)
    os.replace(out + ".tmp", out)


def predict():
    keys = aegis_pipeline.read_trainset(os.environ["AEGIS_EVAL_KEYS"])[0]
    w = np.load(os.environ["AEGIS_MODEL"])
    x, _ = features(keys)
    scores = x @ w
    if scores.shape[1] < 2:
        scores = np.hstack([scores, -scores])
    aegis_pipeline.save_predictions(keys, scores=scores)


if __name__ == "__main__":
    {"train": train, "predict": predict}[sys.argv[1]]()
