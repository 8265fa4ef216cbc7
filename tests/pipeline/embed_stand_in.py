"""embed_stand_in.py -- a pipeline's embedding command for the e2e tests.

Embeds the samples of $AEGIS_EMBED_KEYS without a model: sample k's row
is (k % 10 / 10, k * 3 % 10 / 10), moved by 5 in its first value from key
40 on, so that windows of ten samples before key 40 are alike and the
window 40-49 drifts. Says which embedding it made with which model in
$DIR/embeds (DIR: the folder above its working directory) and then in
$DIR/embedded.K; while $DIR/hold_embed.K exists it waits for its
removal, having said so in $DIR/embed_holding.K. When $DIR/nan.K exists
its first row holds NaN, which the supervisor must refuse (written
without save_embeddings, which refuses it before the supervisor could).
"""
import os
import time

import numpy as np

import aegis_pipeline

top = os.path.dirname(os.getcwd())
k = os.path.basename(os.environ["AEGIS_EMBED_OUT"]).split(".")[0]
if os.path.isdir(os.path.join(top, f"hold_embed.{k}")):
    open(os.path.join(top, f"embed_holding.{k}"), "w").close()
    while os.path.isdir(os.path.join(top, f"hold_embed.{k}")):
        time.sleep(0.1)
keys = aegis_pipeline.read_trainset(os.environ["AEGIS_EMBED_KEYS"])[0]
keys = keys.astype(np.int64)
rows = np.stack([keys % 10 / 10 + np.where(keys >= 40, 5.0, 0.0),
                 keys * 3 % 10 / 10], axis=1)
if os.path.exists(os.path.join(top, f"nan.{k}")):
    # written by hand, as any framework may: save_embeddings refuses NaN
    # itself, and the supervisor must too
    rows[0, 0] = np.nan
    with open(os.environ["AEGIS_EMBED_OUT"], "wb") as f:
        f.write(rows.astype("<f4").tobytes())
else:
    aegis_pipeline.save_embeddings(rows)
model = os.path.basename(os.environ["AEGIS_MODEL"])
with open(os.path.join(top, "embeds"), "a") as f:
    f.write(f"{k} {model} {len(keys)}\n")
open(os.path.join(top, f"embedded.{k}"), "w").close()
