"""window_keys.py DATASET FROM TO OUT -- the keys of a dataset's samples
with FROM <= ts < TO written as a training set (src/pipeline/trainset.h)
to OUT: what an evaluation job of those samples would be asked to
predict, for bench_pipeline_eval.sh's reference runs.
"""
import struct
import sys
import zlib

import numpy as np

import aegis_pipeline


def main():
    folder, start, end, out = sys.argv[1], int(sys.argv[2]), \
        int(sys.argv[3]), sys.argv[4]
    samples = aegis_pipeline.Dataset(folder).samples
    keys = np.sort(samples["key"][(samples["ts"] >= start) &
                                  (samples["ts"] < end)])
    items = np.zeros(len(keys), [("key", "<u8"), ("w", "<f4"), ("r", "<u4")])
    items["key"], items["w"] = keys, 1
    body = struct.pack("<8sQQII", b"AEGTSET1", len(keys), 0, 0, 0) + \
        items.tobytes()
    with open(out, "wb") as f:
        f.write(body + struct.pack("<I", zlib.crc32(body)))


if __name__ == "__main__":
    main()
