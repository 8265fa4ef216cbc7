"""Checks a binary dataset's key log against its files: every whole
record of every file registered exactly once (no loss, no double), keys
dense, each sample's label the one in its record.

usage: check_dataset.py STATE_FOLDER_OF_DATASET EXPECTED_SAMPLES"""
import os
import sys

import numpy as np

import aegis_pipeline


def main():
    ds = aegis_pipeline.Dataset(sys.argv[1])
    want = int(sys.argv[2])
    s = ds.samples
    rs, ls = ds.conf["record_size"], ds.conf["label_size"]
    assert len(s) == want, f"{len(s)} samples registered, {want} written"
    assert (s["key"] == np.arange(len(s))).all(), "keys are not dense"
    pairs = set(zip(s["file"].tolist(), s["offset"].tolist()))
    assert len(pairs) == len(s), "a record was registered twice"
    for i, name in enumerate(ds.files):
        size = os.path.getsize(ds.file_path(i))
        offs = np.sort(s["offset"][s["file"] == i])
        assert (offs == np.arange(0, size - size % rs, rs)).all(), \
            f"{name}: records lost or doubled"
    for row in s[:: max(1, len(s) // 997)]:
        rec = ds.bytes(int(row["key"]))
        assert int.from_bytes(rec[:ls], "little", signed=True) == row["label"]
    print(f"{len(s)} samples, each once")


if __name__ == "__main__":
    main()
