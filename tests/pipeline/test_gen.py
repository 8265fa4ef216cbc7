"""aegis dataset gen: the same seed gives the same bytes and another seed
others; drift.json's points are where the generator's means and class
shares move, by the documented drift size (2 standard deviations per
pair of features for the tabular stream); the CSV, binary and image
streams agree with their drift.json; bad usage, and an --out or options
it cannot use as asked, exit 2.

usage: test_gen.py AEGIS"""
import filecmp
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

AEGIS = sys.argv[1]


def gen(out, *args):
    subprocess.run([AEGIS, "dataset", "gen", *args, "--out", out],
                   check=True)
    with open(os.path.join(out, "drift.json")) as f:
        return json.load(f)


def records(out, meta):
    dtype = np.dtype([("label", "<i4"), ("x", "<f4", meta["dim"])])
    return np.concatenate([np.fromfile(os.path.join(out, f"part-{i:05d}.bin"),
                                       dtype) for i in range(meta["files"])])


def check_deterministic(tmp):
    a, b, c = (os.path.join(tmp, n) for n in "abc")
    gen(a, "tabular", "--samples", "4000", "--seed", "3")
    gen(b, "tabular", "--samples", "4000", "--seed", "3")
    gen(c, "tabular", "--samples", "4000", "--seed", "4")
    name = "part-00005.bin"
    assert filecmp.cmp(os.path.join(a, name), os.path.join(b, name), False)
    assert not filecmp.cmp(os.path.join(a, name), os.path.join(c, name),
                           False)


def class_means(rows, label):
    return rows["x"][rows["label"] == label].mean(axis=0)


def check_tabular_drift(tmp):
    out = os.path.join(tmp, "t")
    meta = gen(out, "tabular", "--samples", "80000", "--dim", "4")
    rows = records(out, meta)
    assert len(rows) == 80000 and meta["record_size"] == 20
    drifts = {d["type"]: d for d in meta["drifts"]}
    cut = drifts["abrupt"]["key"]
    before, after = rows[cut - 15000:cut], rows[cut:cut + 15000]
    # each pair of features: the class mean moves 2 (a 60-degree turn at
    # radius 2), so the whole mean moves 2 * sqrt(pairs)
    moved = np.linalg.norm(class_means(before, 1) - class_means(after, 1))
    assert abs(moved - 2 * np.sqrt(2)) < 0.2, moved
    still = np.linalg.norm(class_means(rows[:cut // 2], 1)
                           - class_means(rows[cut // 2:cut], 1))
    assert still < 0.2, still
    g = drifts["gradual"]
    assert (g["start_key"], g["end_key"]) == (40000, 50000)
    shift = drifts["label_shift"]["key"]
    share = lambda r: np.mean(r["label"] == 0)
    assert abs(share(rows[:shift]) - 0.25) < 0.02
    assert abs(share(rows[shift:]) - 0.70) < 0.03
    assert drifts["abrupt"]["ts"] == meta["start_ts"] + cut * 60


def check_csv_and_image(tmp):
    out = os.path.join(tmp, "csv")
    meta = gen(out, "tabular", "--samples", "1000", "--files", "2",
               "--format", "csv")
    with open(os.path.join(out, "part-00000.csv")) as f:
        header = f.readline().strip().split(",")
        first = f.readline().strip().split(",")
    assert header[:3] == ["label", "ts", "f0"] and len(header) == 10
    assert int(first[1]) == meta["start_ts"]
    assert "--ts-column ts" in meta["dataset_add"]
    img = os.path.join(tmp, "img")
    meta = gen(img, "image", "--samples", "400", "--files", "1")
    assert meta["dim"] == 1024 and meta["record_size"] == 4100
    pix = records(img, meta)["x"]
    assert pix.min() >= 0 and pix.max() <= 1
    cut = meta["drifts"][0]["key"]
    assert pix[cut:].mean() - pix[:cut].mean() > 0.05  # brighter after


def check_usage():
    bad = subprocess.run([AEGIS, "dataset", "gen", "sound", "--out", "/tmp/x"],
                         capture_output=True)
    assert bad.returncode == 2 and b"tabular" in bad.stderr
    bad = subprocess.run([AEGIS, "dataset", "gen", "tabular"],
                         capture_output=True)
    assert bad.returncode == 2


def refused(rc, want, *args):
    """aegis dataset gen ARGS exits rc saying want."""
    bad = subprocess.run([AEGIS, "dataset", "gen", *args],
                         capture_output=True)
    assert bad.returncode == rc and want in bad.stderr.decode(), \
        (args, bad.returncode, bad.stderr)


def check_refused(tmp):
    """What gen cannot do as asked is refused, exit 2, where it was done
    another way: a folder of an earlier stream kept its 10 part files
    beside the 2 written ("files": 2), --files 100 over 10 samples wrote
    10 files ("files": 100), an image's --dim was ignored, and an --out
    that is a file exited 1. Without --files, fewer samples than its
    default 20 make a file each."""
    out = os.path.join(tmp, "again")
    gen(out, "tabular", "--samples", "100", "--files", "10")
    refused(2, f"{out}: the folder holds files already (", "tabular",
            "--out", out, "--samples", "100", "--files", "2")
    assert len(os.listdir(out)) == 11
    few = os.path.join(tmp, "few")
    refused(2, "--files 100 is more than --samples 10", "tabular", "--out",
            few, "--samples", "10", "--files", "100")
    assert gen(few, "tabular", "--samples", "10")["files"] == 10
    assert len(os.listdir(few)) == 11
    refused(2, "--dim is for tabular streams", "image", "--out",
            os.path.join(tmp, "img5"), "--dim", "5")
    refused(2, "--files is for --format binary and csv", "tabular",
            "--format", "file", "--out", os.path.join(tmp, "f3"),
            "--files", "3")
    assert gen(os.path.join(tmp, "f5"), "tabular", "--format", "file",
               "--samples", "5")["files"] == 5
    refused(2, "/etc/passwd: not a folder", "tabular", "--out", "/etc/passwd")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_deterministic(tmp)
        check_tabular_drift(tmp)
        check_csv_and_image(tmp)
        check_refused(tmp)
    check_usage()
    print("aegis dataset gen: ok")


if __name__ == "__main__":
    main()
