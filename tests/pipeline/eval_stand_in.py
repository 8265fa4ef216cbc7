"""eval_stand_in.py -- a pipeline's evaluation command for the e2e tests.

Predicts the samples of $AEGIS_EVAL_KEYS without a model, knowing their
true labels: the model of trigger N gets every sample right except those
whose key % 4 is below N, which it gets wrong. So model 0 is always
right, model 1 right on 3 of 4 samples, model 2 on 2 of 4. When
$DIR/drop_from holds a key K, model 0 also gets every even key from K on
wrong: an accuracy drop a performance trigger must see. It writes two
scores a sample (the predicted class 0.9, the other 0.1) with
aegis_pipeline.save_predictions, and says which model it evaluated on
how many samples in $DIR/evals (DIR: the folder above its working
directory). Flag files in $DIR break its output, which the supervisor
must refuse, each for the job that writes N.E.pred (E: train or end):
eval_nan.N.E (the first score NaN), eval_missing.N.E (the last sample
left out), eval_label.N.E (labels, one of them 7, out of range), eval_text.N.E (a
CSV file whose first label, x\xff, is no number and not UTF-8). While
the folder $DIR/hold_eval exists it waits for its removal, having said
so in $DIR/evaluating.N.E: a test restarts the supervisor meanwhile.
"""
import os
import time

import numpy as np

import aegis_pipeline

top = os.path.dirname(os.getcwd())
job = os.path.basename(os.environ["AEGIS_EVAL_OUT"])[:-len(".pred")]
hold = os.path.join(top, "hold_eval")
if os.path.isdir(hold):
    open(os.path.join(top, f"evaluating.{job}"), "w").close()
while os.path.isdir(hold):
    time.sleep(0.1)
model = int(os.environ["AEGIS_TRIGGER"])
keys = aegis_pipeline.read_trainset(os.environ["AEGIS_EVAL_KEYS"])[0]
truth = aegis_pipeline.Dataset().samples["label"][keys]
wrong = keys.astype(np.int64) % 4 < model
drop = os.path.join(top, "drop_from")
if model == 0 and os.path.exists(drop):
    wrong |= (keys >= int(open(drop).read())) & (keys % 2 == 0)
predicted = np.where(wrong, 1 - truth, truth)
scores = np.full((len(keys), 2), 0.1)
scores[np.arange(len(keys)), predicted] = 0.9


def flagged(name):
    return os.path.exists(os.path.join(top, f"{name}.{job}"))


def save_unchecked(keys, scores):
    """The predictions file written as any tool may write it, without
    save_predictions's checks (it refuses NaN): src/pipeline/eval.h."""
    rows = np.zeros(len(keys), dtype=[("key", "<u8"), ("score", "<f4", (2,))])
    rows["key"], rows["score"] = keys, scores
    header = aegis_pipeline._PRED_HEADER.pack(b"AEGPRED1", len(keys), 2, 0)
    with open(os.environ["AEGIS_EVAL_OUT"], "wb") as f:
        f.write(header + rows.tobytes())


if flagged("eval_nan"):
    scores[0, 0] = np.nan
    save_unchecked(keys, scores)
elif flagged("eval_text"):
    with open(os.environ["AEGIS_EVAL_OUT"], "wb") as f:
        f.write(b"%d,x\xff\n" % keys[0])
        f.write(b"".join(b"%d,%d\n" % (k, p)
                         for k, p in zip(keys[1:], predicted[1:])))
elif flagged("eval_label"):
    predicted[0] = 7
    aegis_pipeline.save_predictions(keys, labels=predicted)
else:
    if flagged("eval_missing"):
        keys, scores = keys[:-1], scores[:-1]
    aegis_pipeline.save_predictions(keys, scores=scores)
with open(os.path.join(top, "evals"), "a") as f:
    f.write(f"{model} {len(keys)}\n")
