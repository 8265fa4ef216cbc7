"""aegis_pipeline against a dataset registered by the real aegis command:
every key of a training set read exactly once over two DataLoader
workers, a CSV row's features without a parser, with its own bytes, label and weight; the order fixed by the
seed and changed by the epoch; a user's bytes_parser and transforms
applied; a damaged training set refused with its path named.

usage: test_aegis_pipeline.py AEGIS (PYTHONPATH names python/)."""
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import torch.utils.data

import aegis_pipeline

AEGIS = sys.argv[1]


def write_trainset(path, keys, weights, seed=7, trigger=3):
    """A training set as src/pipeline/trainset.h lays it out."""
    body = struct.pack("<8sQQII", b"AEGTSET1", len(keys), seed, trigger, 0)
    for k, w in zip(keys, weights):
        body += struct.pack("<QfI", k, w, 0)
    with open(path, "wb") as f:
        f.write(body + struct.pack("<I", zlib.crc32(body)))


def aegis(*args, env):
    subprocess.run([AEGIS, *args], check=True, env=env,
                   stdout=subprocess.DEVNULL)


def make_dataset(tmp):
    """A generated tabular stream (binary records), registered."""
    env = dict(os.environ, AEGIS_STATE_HOME=os.path.join(tmp, "state"))
    data = os.path.join(tmp, "data")
    aegis("dataset", "gen", "tabular", "--out", data, "--samples", "3000",
          "--files", "3", env=env)
    with open(os.path.join(data, "drift.json")) as f:
        add_args = json.load(f)["dataset_add"].split()
    aegis("dataset", "add", "t", "--dir", data, *add_args, env=env)
    aegis("dataset", "watch", "t", "--once", "--quiet", env=env)
    return os.path.join(tmp, "state", "datasets", "t"), data


def file_records(data):
    """Every record of the generated files, in key order."""
    dtype = np.dtype([("label", "<i4"), ("x", "<f4", 8)])
    return np.concatenate([np.fromfile(os.path.join(data, f"part-0000{i}.bin"),
                                       dtype) for i in range(3)])


def read_all(ds, workers):
    loader = torch.utils.data.DataLoader(ds, batch_size=None,
                                         num_workers=workers)
    return [(x, label, w) for x, label, w in loader]


def check_contents(state, data, trainset, keys, weights):
    records = file_records(data)
    ds = aegis_pipeline.TrainingSet(trainset, state, seed=5)
    got = read_all(ds, 2)
    assert len(got) == len(keys), (len(got), len(keys))
    by_features = {np.asarray(x).tobytes(): (label, w) for x, label, w in got}
    for k, w in zip(keys, weights):
        label, weight = by_features[records[k]["x"].tobytes()]
        assert label == records[k]["label"], (k, label)
        assert abs(weight - w) < 1e-6, (k, weight, w)


def check_order(state, trainset):
    first = [np.asarray(x).tobytes() for x, _, _ in read_all(
        aegis_pipeline.TrainingSet(trainset, state, seed=5), 0)]
    again = [np.asarray(x).tobytes() for x, _, _ in read_all(
        aegis_pipeline.TrainingSet(trainset, state, seed=5), 0)]
    assert first == again, "the same seed gave another order"
    ds = aegis_pipeline.TrainingSet(trainset, state, seed=5)
    ds.set_epoch(1)
    other = [np.asarray(x).tobytes() for x, _, _ in read_all(ds, 0)]
    assert other != first and sorted(other) == sorted(first)
    # refused when set: a negative one failed only at the iteration
    for epoch in (-100, 2.5, "1", True):
        raises(ValueError, "set_epoch: epoch", lambda: ds.set_epoch(epoch))


def check_user_functions(state, trainset, keys):
    seen = []

    def parser(mv):
        assert isinstance(mv, memoryview) and len(mv) == 36
        seen.append(1)
        return np.frombuffer(mv, "<i4", count=1)[0]

    ds = aegis_pipeline.TrainingSet(trainset, state, bytes_parser=parser,
                                    transform=lambda v: v + 1000,
                                    label_transform=lambda v: -v)
    got = read_all(ds, 0)
    assert len(seen) == len(keys)
    assert all(x == -label + 1000 for x, label, _ in got)


def check_refused(state, tmp, keys, weights):
    bad = os.path.join(tmp, "bad.tset")
    write_trainset(bad, keys, weights)
    with open(bad, "r+b") as f:
        f.seek(40)
        f.write(b"\xff")
    try:
        aegis_pipeline.TrainingSet(bad, state)
    except ValueError as e:
        assert bad in str(e) and "checksum" in str(e), e
    else:
        raise AssertionError("a damaged training set was read")


def check_csv_default_parser(tmp):
    """A CSV dataset without a bytes_parser: each sample is its row's
    features (the label and timestamp columns left out)."""
    env = dict(os.environ, AEGIS_STATE_HOME=os.path.join(tmp, "state"))
    data = os.path.join(tmp, "csv")
    aegis("dataset", "gen", "tabular", "--out", data, "--samples", "50",
          "--files", "1", "--format", "csv", env=env)
    with open(os.path.join(data, "drift.json")) as f:
        add_args = json.load(f)["dataset_add"].split()
    aegis("dataset", "add", "c", "--dir", data, *add_args, env=env)
    aegis("dataset", "watch", "c", "--once", "--quiet", env=env)
    state = os.path.join(tmp, "state", "datasets", "c")
    trainset = os.path.join(tmp, "c.tset")
    write_trainset(trainset, [3], [1.0])
    (x, label, _), = read_all(aegis_pipeline.TrainingSet(trainset, state), 0)
    with open(os.path.join(data, "part-00000.csv")) as f:
        row = f.readlines()[4].strip().split(",")
    assert label == int(row[0])
    assert np.allclose(np.asarray(x), [float(v) for v in row[2:]], atol=1e-5)


def check_csv_bom(tmp):
    """A CSV file starting with a UTF-8 byte order mark: its header's first
    name is read without it, as csvrec.c reads it (the reader took
    "\\ufefflabel" for a name, and found no column 'label')."""
    env = dict(os.environ, AEGIS_STATE_HOME=os.path.join(tmp, "state"))
    data = os.path.join(tmp, "bom")
    os.mkdir(data)
    with open(os.path.join(data, "a.csv"), "wb") as f:
        f.write(b"\xef\xbb\xbflabel,ts,x,y\n1,1700000000,0.5,2\n")
    aegis("dataset", "add", "bom", "--dir", data, "--format", "csv",
          "--header", "--label-column", "label", "--ts-column", "ts", env=env)
    aegis("dataset", "watch", "bom", "--once", "--quiet", env=env)
    trainset = os.path.join(tmp, "bom.tset")
    write_trainset(trainset, [0], [1.0])
    state = os.path.join(tmp, "state", "datasets", "bom")
    (x, label, _), = read_all(aegis_pipeline.TrainingSet(trainset, state), 0)
    assert label == 1 and np.allclose(np.asarray(x), [0.5, 2.0]), (x, label)


def check_csv_features_parity():
    """The Python reader takes as features what csvrec.c takes: finite
    decimal numbers (test_dataset.c checks the same row in C)."""
    row = b"0x10, 5,1_000,inf,nan,1e39,-2.5e3,.5,7".split(b",")
    got = [aegis_pipeline._CsvFeatures._number(f) for f in row]
    assert [v for v in got if v is not None] == [-2500.0, 0.5, 7.0], got


def check_many_files(tmp):
    """A one-sample-per-file dataset of more files than the process may
    hold open: each sample is read when its turn comes, where a map of
    each file kept a descriptor each and failed at the limit."""
    env = dict(os.environ, AEGIS_STATE_HOME=os.path.join(tmp, "state"))
    data = os.path.join(tmp, "files")
    os.mkdir(data)
    for i in range(300):
        with open(os.path.join(data, f"{i}.img"), "wb") as f:
            f.write(bytes([i % 256]) * 4)
        with open(os.path.join(data, f"{i}.img.label"), "w") as f:
            f.write(f"{i % 3}\n")
    aegis("dataset", "add", "f", "--dir", data, "--format", "file",
          "--pattern", "*.img", env=env)
    aegis("dataset", "watch", "f", "--once", "--quiet", env=env)
    state = os.path.join(tmp, "state", "datasets", "f")
    trainset = os.path.join(tmp, "f.tset")
    write_trainset(trainset, list(range(300)), [1.0] * 300)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (128, hard))
    try:
        got = read_all(aegis_pipeline.TrainingSet(trainset, state), 0)
        ds = aegis_pipeline.Dataset(state)
        first = ds.bytes(0).tobytes()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert len(got) == 300, len(got)
    assert len(first) == 4 and len(set(first)) == 1, first


def raises(kind, want, call):
    """call() raises kind, saying want."""
    try:
        call()
    except kind as e:
        assert want in str(e), (want, str(e))
    else:
        raise AssertionError(f"no {kind.__name__} for {want}")


def check_api_errors(tmp):
    """What a training or evaluation script gets wrong is said, where
    numpy broadcast one label to every key, rounded 0.9 to 0, wrapped -1
    to 2^64 - 1 and took NaN, and a missing variable was a bare KeyError."""
    out = os.path.join(tmp, "p.pred")
    keys = [10, 11, 12]
    save = aegis_pipeline.save_predictions
    raises(ValueError, "3 keys but labels has 1 rows",
           lambda: save(keys, labels=[1], path=out))
    raises(ValueError, "3 keys but labels has 1 rows",
           lambda: save(keys, labels=3, path=out))
    raises(ValueError, "3 keys but scores has 1 rows",
           lambda: save(keys, scores=[[.1, .9]], path=out))
    raises(ValueError, "the label of key 10: 0.9 is not a whole number",
           lambda: save(keys, labels=[0.9, 1.0, 2.0], path=out))
    raises(ValueError, "NaN", lambda: save(keys, scores=[[0, 1]] * 2 +
                                           [[float("nan"), 1]], path=out))
    raises(ValueError, "predictions: keys[0]: -1 is out of range; it must "
           "be from 0 to %d" % (2 ** 64 - 1),
           lambda: save([-1, 2, 3], labels=[0, 1, 2], path=out))
    raises(ValueError, "predictions: keys[0]: 1.0 is not a whole number "
           "(type float)",
           lambda: save([1.0, 2.0, 3.0], labels=[0, 1, 2], path=out))
    # a label a key: 2-D labels were numpy's "could not broadcast input
    # array from shape (3,2) into shape (3,)", a label past int64 its
    # OverflowError ("Python int too large to convert to C long"), naming
    # neither the argument nor the key
    raises(ValueError, "predictions: labels: expected one dimension, got "
           "shape (3, 2)",
           lambda: save(keys, labels=[[0, 1], [1, 2], [2, 3]], path=out))
    raises(ValueError, "predictions: the label of key 12: %r is out of "
           "range; it must be from 0 to %d" % (2 ** 70, 2 ** 63 - 1),
           lambda: save(keys, labels=[0, 1, 2 ** 70], path=out))
    raises(ValueError, "predictions: the label of key 11: 1e+30 is out of "
           "range", lambda: save(keys, labels=[0, 1e30, 2], path=out))
    save(keys, labels=[0, 1, 2], path=out)  # and right ones are taken
    # a binary classifier's bools are classes 1 and 0, as numbers are
    save(keys, labels=[1, 0, 1], path=out)
    with open(out, "rb") as f:
        as_numbers = f.read()
    for bools in (np.array([True, False, True]),
                  torch.tensor([True, False, True])):
        save(keys, labels=bools, path=out)
        with open(out, "rb") as f:
            assert f.read() == as_numbers, bools
    # a number is no path: open() read descriptor 5 and closed it
    fd = os.open(out, os.O_RDONLY)
    raises(TypeError, "TrainingSet: path must be a file's path",
           lambda: aegis_pipeline.TrainingSet(fd))
    raises(TypeError, "save_predictions: path must be a file's path (str "
           "or os.PathLike), got int",
           lambda: save(keys, labels=[0, 1, 2], path=fd))
    os.fstat(fd)  # still open
    os.close(fd)
    env = dict(os.environ)
    os.environ.pop("AEGIS_EVAL_OUT", None)
    os.environ.pop("AEGIS_TRAINSET", None)
    try:
        raises(RuntimeError, "$AEGIS_EVAL_OUT is not set",
               lambda: save(keys, labels=[0, 1, 2]))
        raises(RuntimeError, "$AEGIS_TRAINSET is not set",
               aegis_pipeline.TrainingSet)
    finally:
        os.environ.clear()
        os.environ.update(env)
    raises(FileNotFoundError, "not a dataset's folder",
           lambda: aegis_pipeline.Dataset(tmp))
    check_save_errors(tmp)


def check_save_errors(tmp):
    """What aegis would refuse after the job ended is refused when it is
    saved, where it was written: a NaN embedding, a negative label, a key
    twice. Neither labels nor scores is said as such (it said "not both"),
    and a write that fails leaves no PATH.tmp behind (path /tmp left
    /tmp.tmp)."""
    out = os.path.join(tmp, "e.pred")
    save = aegis_pipeline.save_predictions
    raises(ValueError, "embeddings: a value is NaN or infinite",
           lambda: aegis_pipeline.save_embeddings([[float("nan")]], path=out))
    raises(ValueError, "embeddings: a value is NaN or infinite",
           lambda: aegis_pipeline.save_embeddings([[1.0, 1e39]], path=out))
    raises(ValueError, "the label of key 11: -1 is out of range; it must be "
           "from 0 to %d (labels are classes)" % (2 ** 63 - 1),
           lambda: save([10, 11, 12], labels=[0, -1, 2], path=out))
    raises(ValueError, "key 10 is given twice",
           lambda: save([10, 11, 10], labels=[0, 1, 2], path=out))
    try:
        save([0, 1], path=out)
    except ValueError as e:
        assert str(e) == "predictions: give labels or scores", e
    else:
        raise AssertionError("no labels and no scores taken")
    raises(ValueError, "give labels or scores, not both",
           lambda: save([0], labels=[1], scores=[[0, 1]], path=out))
    assert not os.path.exists(out)
    folder = os.path.join(tmp, "a-folder")
    os.mkdir(folder)
    for write in (lambda: aegis_pipeline.save_losses([1.0], path=folder),
                  lambda: save([0], labels=[1], path=folder),
                  lambda: aegis_pipeline.save_embeddings([[1.0]],
                                                         path=folder)):
        try:
            write()
        except OSError:
            pass
        else:
            raise AssertionError("a write over a folder succeeded")
        assert not os.path.exists(folder + ".tmp"), "the temporary was left"


def check_bytes_index(state):
    """Dataset.bytes takes keys 0 to len - 1: -1 gave the last sample."""
    ds = aegis_pipeline.Dataset(state)
    raises(IndexError, "no sample with key -1 (3000 registered)",
           lambda: ds.bytes(-1))
    raises(IndexError, "no sample with key 3000", lambda: ds.bytes(3000))
    assert len(ds.bytes(2999)) == 36


def flip_byte(path, at):
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)[0]
        f.seek(at)
        f.write(bytes([b ^ 0xFF]))


def append_block(path, first, file, sample_file):
    """A valid block of one sample (no run) at the end of keys.log: of
    file `file`, its sample saying it is of `sample_file`."""
    head = struct.Struct("<IIIIQQII")
    sample = np.zeros(1, aegis_pipeline.SAMPLE_DTYPE)
    sample["key"], sample["file"], sample["len"] = first, sample_file, 36
    payload = sample.tobytes()
    zeroed = head.pack(0x314B4241, 1, 0, file, first, 36, 0, 0)
    crc = zlib.crc32(payload, zlib.crc32(zeroed))
    with open(path, "ab") as f:
        f.write(head.pack(0x314B4241, 1, 0, file, first, 36, crc, 0) +
                payload)


def check_damaged_logs(state, tmp):
    """The Python reader follows the C readers' rules (keylog.c, filetab.c,
    dataset.c): a torn tail, which a crash leaves, is dropped quietly;
    damage with whole records after it, a stray sample, a bad header and a
    block naming a file past files.log are errors naming the file and
    byte, where the reader cut the log there and returned 1000 samples of
    3000 (or none) without a word."""
    copy = os.path.join(tmp, "damaged")

    def fresh():
        subprocess.run(["rm", "-rf", copy], check=True)
        subprocess.run(["cp", "-r", state, copy], check=True)
        return os.path.join(copy, "keys.log"), os.path.join(copy, "files.log")

    def count():
        return len(aegis_pipeline.Dataset(copy).samples)

    keys, files = fresh()
    size = os.path.getsize(keys)
    flip_byte(keys, 16 + 50)                  # in the first of 3 blocks
    raises(ValueError, "keys.log: damaged at byte 16, with whole blocks",
           count)
    keys, files = fresh()
    flip_byte(files, 16 + 12 + 3)             # the first file's name
    raises(ValueError, "files.log: damaged at byte 16, with whole entries",
           count)
    keys, files = fresh()
    os.truncate(files, 16 + 26 + 5)           # the second entry torn
    raises(ValueError, "keys.log: the block at byte ", count)
    raises(ValueError, "names file 1, past the 1 files " + files, count)
    os.truncate(files, 0)
    raises(ValueError, "names file 0, past the 0 files", count)
    os.unlink(files)
    raises(ValueError, "names file 0, past the 0 files", count)
    keys, files = fresh()
    os.truncate(keys, size - 7)               # a crash's torn tail
    assert count() == 2000, count()
    flip_byte(keys, 3)
    raises(ValueError, "keys.log: not a key log (bad header)", count)
    keys, files = fresh()
    append_block(keys, 3000, 0, 2)
    raises(ValueError, "holds a sample of file 2 with key 3000", count)
    keys, files = fresh()
    append_block(keys, 3000, 0, 0)            # its own sample: read
    assert count() == 3001, count()


def check_short_key_log(state, tmp):
    """A keys.log empty or shorter than its header is one no watcher has
    written yet (dataset.c's log_not_yet): no samples, where the reader
    raised a bare struct.error naming nothing."""
    copy = os.path.join(tmp, "short")
    subprocess.run(["cp", "-r", state, copy], check=True)
    keys = os.path.join(copy, "keys.log")
    for size in (0, 10):
        os.truncate(keys, size)
        assert len(aegis_pipeline.Dataset(copy).samples) == 0


def check_damaged_conf(state, tmp, trainset):
    """A dataset.json damaged is a ValueError naming it and the key at
    fault, when the Dataset is made: it was a JSONDecodeError naming no
    file, or a KeyError ('format') or TypeError from the first sample."""
    copy = os.path.join(tmp, "conf")
    subprocess.run(["cp", "-r", state, copy], check=True)
    conf_path = os.path.join(copy, "dataset.json")
    with open(conf_path) as f:
        conf = json.load(f)
    for text, want in (("{garbage", "dataset.json: not JSON"),
                       ("[]", "dataset.json: not a JSON object"),
                       ("{}", "dataset.json: format: unknown format ''"),
                       (json.dumps(dict(conf, label_size="4")),
                        "dataset.json: label_size: '4' is not a whole "
                        "number (type str); it must be from 0 to 4294967295"),
                       (json.dumps(dict(conf, header=1)),
                        "dataset.json: header: not true or false"),
                       (json.dumps(dict(conf, sep=";;")),
                        "dataset.json: sep: ';;' is over 1"),
                       (json.dumps(dict(conf, label_size=2 ** 32)),
                        "dataset.json: label_size: 4294967296 is out of "
                        "range; it must be from 0 to 4294967295")):
        with open(conf_path, "w") as f:
            f.write(text)
        raises(ValueError, want, lambda: aegis_pipeline.Dataset(copy))
        raises(ValueError, want,
               lambda: aegis_pipeline.TrainingSet(trainset, copy))
    # absent keys are what dsconf.c takes for them
    with open(conf_path, "w") as f:
        json.dump({k: conf[k] for k in ("dir", "format", "label_size")}, f)
    assert len(list(aegis_pipeline.TrainingSet(trainset, copy))) == 300


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_csv_default_parser(tmp)
        check_csv_bom(tmp)
        check_api_errors(tmp)
        check_many_files(tmp)
        check_csv_features_parity()
        state, data = make_dataset(tmp)
        rng = np.random.default_rng(1)
        keys = rng.choice(3000, 300, replace=False).tolist()
        weights = rng.random(300).astype(np.float32).tolist()
        trainset = os.path.join(tmp, "t.tset")
        write_trainset(trainset, keys, weights)
        check_contents(state, data, trainset, keys, weights)
        check_order(state, trainset)
        check_user_functions(state, trainset, keys)
        check_refused(state, tmp, keys, weights)
        check_damaged_logs(state, tmp)
        check_short_key_log(state, tmp)
        check_damaged_conf(state, tmp, trainset)
        check_bytes_index(state)
    print("aegis_pipeline: ok")


if __name__ == "__main__":
    main()
