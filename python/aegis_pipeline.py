"""aegis_pipeline -- a retraining job's PyTorch dataset over its trigger's
training set.

A pipeline's training job gets two paths in its environment:
AEGIS_TRAINSET, the trigger's training set (the keys it trains on and
their weights, src/pipeline/trainset.h), and AEGIS_DATASET, the state
folder of the dataset the keys belong to (dataset.json, keys.log,
files.log: src/pipeline/keylog.h, filetab.h). TrainingSet reads both:

    from aegis_pipeline import TrainingSet
    ds = TrainingSet(bytes_parser=parse, transform=normalise, seed=1)
    loader = torch.utils.data.DataLoader(ds, batch_size=64, num_workers=2)
    for epoch in range(epochs):
        ds.set_epoch(epoch)
        for x, label, weight in loader:
            ...

Each DataLoader worker takes its own share of the keys (every n-th of one
shuffled order, the same in every worker: a permutation of the keys drawn
from seed + epoch), and reads each sample's bytes from its file mapped
into memory, with no copy: bytes_parser gets a memoryview of the sample.
Without a bytes_parser a sample is its numpy view: the float32 features of
a binary record, the numeric fields of a CSV row, or the bytes of a file.
The files are mapped copy-on-write, so the arrays are writable and a
write stays in the process.

A pipeline's embedding job (a drift trigger measuring on a model's
embeddings) gets AEGIS_EMBED_KEYS, the samples to embed in a training
set's format, AEGIS_MODEL, the newest model, and AEGIS_EMBED_OUT, where
save_embeddings writes one row per sample, in the keys' order:

    samples = TrainingSet(os.environ["AEGIS_EMBED_KEYS"], shuffle=False,
                          weights=False)
    save_embeddings(np.stack([embed(x) for x, _ in samples]))

A pipeline's evaluation job gets AEGIS_EVAL_KEYS, the samples to predict,
AEGIS_MODEL, the model to evaluate, and AEGIS_EVAL_OUT, where
save_predictions writes each sample's key with its predicted label or its
scores, one per class (aegis computes the metrics from them):

    samples = TrainingSet(os.environ["AEGIS_EVAL_KEYS"], shuffle=False,
                          weights=False)
    save_predictions(samples.keys, scores=np.stack([model(x) for x, _ in
                                                    samples]))
"""
import json
import math
import mmap
import os
import re
import struct
import zlib

import numpy as np

import aegis_checks

__all__ = ["Dataset", "TrainingSet", "read_trainset", "save_embeddings",
           "save_predictions", "save_losses", "downsampler", "SAMPLE_DTYPE"]

# pl_sample (src/pipeline/sample.h), the key log's record.
SAMPLE_DTYPE = np.dtype([("key", "<u8"), ("ts", "<i8"), ("label", "<i8"),
                         ("file", "<u4"), ("len", "<u4"), ("offset", "<u8")])
_BAD_DTYPE = np.dtype([("offset", "<u8"), ("reason", "<u4"),
                       ("reserved", "<u4")])
_ITEM_DTYPE = np.dtype([("key", "<u8"), ("weight", "<f4"),
                        ("reserved", "<u4")])
_KEYLOG_HEADER = struct.Struct("<8sII")
_BLOCK = struct.Struct("<IIIIQQII")   # pl_block_head (keylog.h)
_BLOCK_MAGIC = 0x314B4241
_FILE_ENTRY = struct.Struct("<III")   # crc, index, len (filetab.h)
_TRAINSET_HEADER = struct.Struct("<8sQQII")
_PRED_HEADER = struct.Struct("<8sQII")  # eval.h: magic, count, width, 0


_RUN = struct.Struct("<QqII")         # pl_run_head (keylog.h)
_BLOCK_RUN = 1
_LOG_HEADER_SIZE = 16                 # keys.log's and files.log's
_NAME_MAX = 4096                      # a files.log entry's name (filetab.c)


def _samples_size(count, flags):
    if flags & _BLOCK_RUN:           # labels padded to 8 bytes
        return _RUN.size + (4 * count + 7) // 8 * 8
    return count * SAMPLE_DTYPE.itemsize


def _block_size(count, nbad, flags):
    return _BLOCK.size + _samples_size(count, flags) + \
        nbad * _BAD_DTYPE.itemsize


def _block_whole(data, at):
    """The head of the block at `at` (keylog.c's block_whole) when it is
    whole and its checksum right, else None. A run of no samples is never
    written."""
    if len(data) - at < _BLOCK.size:
        return None
    head = _BLOCK.unpack_from(data, at)
    magic, count, nbad, file, first, done, crc, flags = head
    end = at + _block_size(count, nbad, flags)
    if magic != _BLOCK_MAGIC or flags & ~_BLOCK_RUN or \
            (flags & _BLOCK_RUN and count == 0) or end > len(data):
        return None
    zeroed = _BLOCK.pack(magic, count, nbad, file, first, done, 0, flags)
    payload = memoryview(data)[at + _BLOCK.size:end]
    return head if zlib.crc32(payload, zlib.crc32(zeroed)) == crc else None


def _block_samples(data, at, head):
    """The samples of the whole block at `at` (a run block's expanded)."""
    _, count, _, file, first, _, _, flags = head
    start = at + _BLOCK.size
    if not flags & _BLOCK_RUN:
        return np.frombuffer(data, SAMPLE_DTYPE, count, start)
    offset, ts, size, _ = _RUN.unpack_from(data, start)
    run = np.empty(count, SAMPLE_DTYPE)
    run["key"] = np.arange(first, first + count)
    run["ts"], run["file"], run["len"] = ts, file, size
    run["label"] = np.frombuffer(data, "<i4", count, start + _RUN.size)
    run["offset"] = offset + np.arange(count, dtype=np.uint64) * size
    return run


def _stray_sample(samples, head):
    """The first sample not of the block's own file and key (keylog.c's
    stray_sample: readers index files and keys by them), or None."""
    file, first = head[3], head[4]
    own = (samples["file"] == file) & \
        (samples["key"] == np.arange(first, first + len(samples),
                                     dtype=np.uint64))
    bad = np.flatnonzero(~own)
    return samples[bad[0]] if len(bad) else None


def _whole_block_after(data, pos, next_key):
    """What lies past the bad block at pos, as keylog.c's
    whole_block_after says: 0 nothing whole (a torn tail, which a crash
    makes), 1 a whole block (damage in the middle: cutting there would
    lose its samples), 2 more block heads claiming bytes than a torn tail
    could hold (refused like damage). Blocks lie 8-byte aligned; a block
    past pos holds keys from next_key on, which rules most heads out
    before their CRC is taken."""
    start = pos + 8
    n = (len(data) - start - _BLOCK.size) // 8 + 1
    if n <= 0:
        return 0
    words = np.frombuffer(data, "<u8", n + 2, start)
    maybe = np.flatnonzero(((words[:n] & 0xFFFFFFFF) == _BLOCK_MAGIC) &
                           (words[2:n + 2] >= next_key))
    budget = 16 * (len(data) - pos) + (1 << 20)
    for k in maybe.tolist():
        at = start + 8 * k
        _, count, nbad, _, _, _, _, flags = _BLOCK.unpack_from(data, at)
        claimed = _block_size(count, nbad, flags)
        if claimed > len(data) - at:
            continue
        if claimed > budget:
            return 2
        budget -= claimed
        if _block_whole(data, at) is not None:
            return 1
    return 0


def _keylog_error(path, at, after):
    return ValueError(
        f"{path}: damaged at byte {at}, with "
        f"{'whole blocks' if after == 1 else 'too many block heads'} after "
        f"it: the log is corrupt, not torn by a crash, so nothing of it is "
        f"read (restore it from a copy)")


def _scan_keys(data, path, nfiles, files_path):
    """The samples of key log bytes `data` read from `path`, as
    keylog.c's pl_keylog_scan and dataset.c read them: up to a torn tail,
    which a crash leaves and which is dropped quietly; a ValueError naming
    the file and byte for anything else (a bad header, damage with whole
    blocks after it, a sample not of its block's file and key, a block
    naming a file past the nfiles of files_path)."""
    if len(data) < _LOG_HEADER_SIZE:   # no watcher has written it yet
        return np.empty(0, SAMPLE_DTYPE)
    magic, version, size = _KEYLOG_HEADER.unpack_from(data, 0)
    if magic != b"AEGKEYS1" or version != 1 or size != SAMPLE_DTYPE.itemsize:
        raise ValueError(f"{path}: not a key log (bad header)")
    parts, at, next_key = [], _LOG_HEADER_SIZE, 0
    while True:
        head = _block_whole(data, at)
        if head is None or head[4] != next_key:
            break
        samples = _block_samples(data, at, head)
        stray = _stray_sample(samples, head)
        if stray is not None:
            raise ValueError(
                f"{path}: the block at byte {at} (file {head[3]}, keys from "
                f"{head[4]}) holds a sample of file {stray['file']} with key "
                f"{stray['key']}: the log is corrupt (restore it from a copy)")
        if head[3] >= nfiles:
            raise ValueError(
                f"{path}: the block at byte {at} names file {head[3]}, past "
                f"the {nfiles} files {files_path} lists: that table was cut "
                f"or lost (restore both from one copy)")
        parts.append(samples)
        at += _block_size(head[1], head[2], head[7])
        next_key += head[1]
    after = _whole_block_after(data, at, next_key) if at < len(data) else 0
    if after:
        raise _keylog_error(path, at, after)
    return np.concatenate(parts) if parts else np.empty(0, SAMPLE_DTYPE)


def read_keys(path, nfiles, files_path="files.log"):
    """The samples of key log `path` (a numpy array of SAMPLE_DTYPE, key i
    at index i) up to its torn tail, if any; nfiles: the entries of the
    file table (files_path, named in errors). Raises ValueError naming the
    file and byte where the log is damaged, not torn (see _scan_keys)."""
    with open(path, "rb") as f:
        return _scan_keys(f.read(), path, nfiles, files_path)


def _entry_whole(data, at, index):
    """The name of the files.log entry at `at` when it is whole, of that
    index and its checksum right (filetab.c's entry_whole), else None."""
    if len(data) - at < _FILE_ENTRY.size:
        return None
    crc, got, n = _FILE_ENTRY.unpack_from(data, at)
    name = data[at + _FILE_ENTRY.size:at + _FILE_ENTRY.size + n]
    if got != index or not 0 < n <= _NAME_MAX or len(name) != n or \
            zlib.crc32(name, zlib.crc32(struct.pack("<II", got, n))) != crc:
        return None
    return name


def _name_ok(name):
    """Whether a name can be one of the folder's files (filetab.c's
    name_ok): joined to the folder, one with a NUL, a slash, . or .. would
    name another file, or one outside it."""
    return b"\0" not in name and b"/" not in name and \
        name not in (b".", b"..")


def _whole_entry_after(data, at, count):
    """Whether a whole entry of a later index than count lies past the
    bad one at `at` (filetab.c's whole_entry_after): a crash tears only the
    end of the table, so then it was damaged in the middle. Entries are
    not aligned: every byte is a candidate, its CRC taken only where its
    index could follow, within the same budget as the C reader's."""
    size = len(data)
    starts = np.arange(at + 1, size - _FILE_ENTRY.size + 1, dtype=np.int64)
    if not len(starts):
        return False
    raw = np.frombuffer(data, np.uint8).astype(np.uint64)

    def u32(offset):
        p = starts + offset
        return raw[p] | raw[p + 1] << 8 | raw[p + 2] << 16 | raw[p + 3] << 24

    index, n = u32(4), u32(8)
    left = (size - starts - _FILE_ENTRY.size).astype(np.uint64)
    maybe = np.flatnonzero((index > count) & (index - count <= size - at) &
                           (n > 0) & (n <= left))
    budget = 16 * (size - at) + (1 << 20)
    for k in maybe.tolist():
        p, want = int(starts[k]), int(index[k])
        if int(n[k]) > budget:
            return True
        budget -= int(n[k])
        if _entry_whole(data, p, want) is not None:
            return True
    return False


def read_files(path):
    """The file table at `path`: the names, by index, as filetab.c reads
    it. A missing table, or one shorter than its header (torn at its
    creation), has no entries; a torn last entry is dropped. A ValueError
    names the file where it is not a table, names a file outside the
    folder, or is damaged with whole entries after the damage."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    if len(data) < _LOG_HEADER_SIZE:
        return []
    if data[:8] != b"AEGFILE1":
        raise ValueError(f"{path}: not a file table (bad header)")
    names, at = [], _LOG_HEADER_SIZE
    while (name := _entry_whole(data, at, len(names))) is not None:
        if not _name_ok(name):
            raise ValueError(f"{path}: the entry at byte {at} names no file "
                             f"of the folder (a NUL, a slash, . or ..): the "
                             f"table is corrupt")
        names.append(os.fsdecode(name))
        at += _FILE_ENTRY.size + len(name)
    if at < len(data) and _whole_entry_after(data, at, len(names)):
        raise ValueError(f"{path}: damaged at byte {at}, with whole entries "
                         f"after it: the table is corrupt, not torn by a "
                         f"crash, so nothing of it is read (restore it and "
                         f"keys.log from one copy)")
    return names


def read_trainset(path):
    """A trigger's training set (src/pipeline/trainset.h):
    (keys uint64 array, weights float32 array, seed, trigger). Raises
    ValueError naming the file when it is not whole."""
    with open(path, "rb") as f:
        data = f.read()
    head = _TRAINSET_HEADER.size
    if len(data) < head + 4:
        raise ValueError(f"{path}: too short for a training set")
    magic, count, seed, trigger, _ = _TRAINSET_HEADER.unpack_from(data, 0)
    if magic != b"AEGTSET1":
        raise ValueError(f"{path}: not a training set (bad magic)")
    if len(data) != head + count * _ITEM_DTYPE.itemsize + 4:
        raise ValueError(f"{path}: size does not match its {count} keys")
    if zlib.crc32(data[:-4]) != struct.unpack_from("<I", data, len(data) - 4)[0]:
        raise ValueError(f"{path}: bad checksum")
    items = np.frombuffer(data, _ITEM_DTYPE, count, head)
    return items["key"].copy(), items["weight"].copy(), seed, trigger


# dataset.json's keys that reading samples uses, each with what dsconf.c
# takes for it when it is absent.
_CONF_DEFAULTS = {"dir": "", "format": "", "sep": ",", "header": False,
                  "label_size": 0, "label_column": "", "ts_column": ""}
_CONF_KINDS = {str: "a string", bool: "true or false"}
_FORMATS = ("file", "binary", "csv")
# dsconf.c's bounds: sep's bytes (a char), label_size (32 bits)
_SEP_MAX = 1
_CONF_MAX = {"label_size": 2 ** 32 - 1}


def _read_conf(path):
    """The dataset.json at path, as dsconf.c reads it (an absent key its
    default); ValueError naming the file, and the key, where it is
    damaged: it was a KeyError or a JSON error naming neither."""
    try:
        with open(path, "rb") as f:
            conf = json.load(f)
    except ValueError as e:  # not JSON, or not UTF-8
        raise ValueError(f"{path}: not JSON ({e})") from None
    if not isinstance(conf, dict):
        raise ValueError(f"{path}: not a JSON object")
    conf = dict(_CONF_DEFAULTS, **conf)
    for key, default in _CONF_DEFAULTS.items():
        value = conf[key]
        if type(default) is int:  # a count: not a bool, nor 4.0
            aegis_checks.check_whole(f"{path}: {key}", value, 0,
                                     _CONF_MAX.get(key))
        elif type(value) is not type(default):  # a flag is no count
            raise ValueError(f"{path}: {key}: not {_CONF_KINDS[type(default)]}"
                             f" ({value!r})")
    if len(conf["sep"].encode()) > _SEP_MAX:
        raise ValueError(f"{path}: sep: {conf['sep']!r} is over {_SEP_MAX} "
                         f"byte")
    if conf["format"] not in _FORMATS:
        raise ValueError(f"{path}: format: unknown format {conf['format']!r}"
                         f" (one of {', '.join(_FORMATS)})")
    conf["sep"] = conf["sep"] or ","
    return conf


class Dataset:
    """A registered dataset, read from its state folder: its
    configuration (`conf`), its files (`files`) and samples (`samples`,
    SAMPLE_DTYPE: key, ts, label, file, len, offset). A dataset.json
    damaged is a ValueError naming it and the key at fault."""

    def __init__(self, path=None):
        self.path = _job_file(path, "AEGIS_DATASET", "Dataset")
        conf = os.path.join(self.path, "dataset.json")
        if not os.path.isfile(conf):
            raise FileNotFoundError(f"{self.path}: not a dataset's folder "
                                    f"(no dataset.json): give the folder "
                                    f"`aegis dataset show` names")
        self.conf = _read_conf(conf)
        self.files, self.samples = _read_logs(self.path)
        self._maps = {}

    def __len__(self):
        return len(self.samples)

    def file_path(self, index):
        return os.path.join(self.conf["dir"], self.files[index])

    def mapped(self, file, end):
        """File `file` mapped copy-on-write, at least `end` bytes of it, as
        a memoryview (an older, shorter map of a file that grew lives on
        while views of it do). A one-sample-per-file dataset's file is
        read instead, and not kept (_WholeFiles)."""
        if self.conf["format"] == "file":
            return _WholeFiles(self)[file]
        mapped = self._maps.get(file)
        if mapped is None or len(mapped) < end:
            with open(self.file_path(file), "rb") as f:
                mapped = memoryview(mmap.mmap(f.fileno(), 0,
                                              access=mmap.ACCESS_COPY))
            if len(mapped) < end:
                raise ValueError(f"{self.file_path(file)}: shorter than its "
                                 f"registered samples")
            self._maps[file] = mapped
        return mapped

    def view(self, file, offset, length):
        """A memoryview of `length` bytes at `offset` of file `file`."""
        return self.mapped(file, offset + length)[offset:offset + length]

    def bytes(self, key):
        """The bytes of sample `key` (0 to len - 1), a memoryview."""
        if not 0 <= key < len(self.samples):
            raise IndexError(f"dataset {self.path}: no sample with key {key} "
                             f"({len(self.samples)} registered)")
        s = self.samples[key]
        return self.view(int(s["file"]), int(s["offset"]), int(s["len"]))

    def default_parser(self):
        """What a sample is without a bytes_parser (see the module's
        docstring)."""
        fmt = self.conf["format"]
        if fmt == "binary":
            skip = self.conf["label_size"]
            return lambda mv: np.frombuffer(mv, "<f4", offset=skip)
        if fmt == "csv":
            return _CsvFeatures(self)
        return lambda mv: np.frombuffer(mv, np.uint8)


def _read_logs(path):
    """The file names and samples of the dataset at state folder `path`.

    keys.log is read before files.log. The watcher appends a file's entry
    to files.log before the first block naming it (watch.c), and files.log
    only grows (its start-up cut takes only a torn entry, which no block
    names), so every block read names a file that files.log, read after
    it, lists: one that does not is a table cut or lost, an error as the
    watcher says. Read the other way round, a watcher listing a new file
    between the two reads would look the same. A keys.log missing, or
    shorter than its header, is one no watcher has written yet: no
    samples (dataset.c's log_not_yet)."""
    keys = os.path.join(path, "keys.log")
    try:
        with open(keys, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        data = b""
    files_path = os.path.join(path, "files.log")
    files = read_files(files_path)
    return files, _scan_keys(data, keys, len(files), files_path)


class _WholeFiles:
    """A one-sample-per-file dataset's files, each read when it is indexed:
    a sample is a whole file, read once an epoch, so nothing is kept of it.
    A map of each would keep a descriptor a file, and a process may hold
    about a thousand."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __getitem__(self, file):
        # writable, as a copy-on-write map is: torch takes no read-only
        # array without a warning
        with open(self.dataset.file_path(file), "rb") as f:
            buf = bytearray(os.fstat(f.fileno()).st_size)
            return memoryview(buf)[:f.readinto(buf)]


_FLOAT32_MAX = 3.4028234663852886e38
_UTF8_BOM = b"\xef\xbb\xbf"


class _CsvFeatures:
    """A CSV row's numeric fields other than its label and timestamp (the
    columns resolved once, from the first file's header)."""

    def __init__(self, ds):
        self.sep = ds.conf["sep"].encode()
        header = None
        if ds.conf["header"] and ds.files:
            with open(ds.file_path(0), "rb") as f:
                line = f.readline()
            # a UTF-8 byte order mark is no part of the first name, as
            # csvrec.c skips it
            line = line[3:] if line.startswith(_UTF8_BOM) else line
            header = line.rstrip(b"\r\n").split(self.sep)
        self.skip = {self._column(ds.conf[k], header)
                     for k in ("label_column", "ts_column") if ds.conf[k]}

    @staticmethod
    def _column(spec, header):
        if spec.isdigit():
            return int(spec)
        return header.index(spec.encode()) if header else -1

    # A decimal number, as csvrec.c's features take it (no spaces, no
    # '_', no hex, no inf or nan).
    _DECIMAL = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")

    @staticmethod
    def _number(field):
        """A field's number, or None where the watcher's features leave it
        out (csvrec.c: empty, 64 bytes or more, or no finite decimal
        number)."""
        if not 0 < len(field) < 64 or not _CsvFeatures._DECIMAL.fullmatch(field):
            return None
        v = float(field)  # finite as a float32 is, as strtof gives it
        return v if math.isfinite(v) and abs(v) <= _FLOAT32_MAX else None

    def __call__(self, mv):
        fields = bytes(mv).split(self.sep)
        numbers = (self._number(v) for i, v in enumerate(fields)
                   if i not in self.skip)
        return np.array([v for v in numbers if v is not None],
                        dtype=np.float32)


def _torch_iterable():
    import torch.utils.data
    return torch.utils.data.IterableDataset


class TrainingSet(_torch_iterable()):
    """The samples of a trigger's training set, as (sample, label, weight)
    tuples, or (sample, label) with weights=False; see the module's
    docstring.

    trainset: its path (default $AEGIS_TRAINSET); dataset: a Dataset or
    its state folder (default $AEGIS_DATASET); bytes_parser(memoryview)
    makes a sample of its bytes; transform and label_transform apply
    after it; seed (default the training set's own) and shuffle decide
    the order, with set_epoch(e) giving each epoch its own. keys=True
    (a flag; the keys themselves are the attribute `keys`) adds each
    sample's key as the tuple's last item, for selection that must name
    the samples it keeps (aegis_downsample)."""

    def __init__(self, trainset=None, dataset=None, bytes_parser=None,
                 transform=None, label_transform=None, seed=None,
                 shuffle=True, weights=True, keys=False):
        super().__init__()
        # before the files are read: True was taken as seed 1
        if seed is not None:
            seed = aegis_checks.check_whole("TrainingSet: seed", seed, 0)
        path = _job_file(trainset, "AEGIS_TRAINSET", "TrainingSet")
        self.keys, self.weights, own_seed, self.trigger = read_trainset(path)
        self.dataset = dataset if isinstance(dataset, Dataset) \
            else Dataset(dataset)
        if len(self.keys) and int(self.keys.max()) >= len(self.dataset):
            raise ValueError(f"{path}: key {int(self.keys.max())} is not in "
                             f"dataset {self.dataset.path} "
                             f"({len(self.dataset)} samples)")
        self.parser = bytes_parser or self.dataset.default_parser()
        self.transform = transform
        self.label_transform = label_transform
        self.seed = own_seed if seed is None else seed
        self.shuffle = shuffle
        self.with_weights = weights
        self.with_keys = keys
        self.epoch = 0

    def __len__(self):
        return len(self.keys)

    def set_epoch(self, epoch):
        # seeds the order with seed + epoch: numpy refused a negative sum
        # only at the iteration, and took 2.5
        self.epoch = aegis_checks.check_whole("set_epoch: epoch", epoch, 0)

    def _my_share(self):
        """The positions of the keys this worker reads, in order."""
        import torch.utils.data
        order = np.arange(len(self.keys))
        if self.shuffle:
            order = np.random.default_rng(self.seed + self.epoch) \
                .permutation(len(self.keys))
        info = torch.utils.data.get_worker_info()
        return order if info is None else order[info.id::info.num_workers]

    def _views(self, meta):
        """Each file of the share mapped to its last sample's end, indexed
        by file (None for the others); the files themselves, read when
        indexed, for the one-sample-per-file format."""
        if self.dataset.conf["format"] == "file":
            return _WholeFiles(self.dataset)
        ends = meta["offset"] + meta["len"]
        views = [None] * (int(meta["file"].max()) + 1 if len(meta) else 0)
        for file in np.unique(meta["file"]).tolist():
            views[file] = self.dataset.mapped(
                file, int(ends[meta["file"] == file].max()))
        return views

    def _make(self):
        """bytes -> sample: the parser, then the transform."""
        parse, transform = self.parser, self.transform
        if transform is None:
            return parse
        return lambda mv: transform(parse(mv))

    def __iter__(self):
        # The loop is the whole cost of a DataLoader-only epoch: lists, not
        # numpy scalars, and no per-sample branches.
        share = self._my_share()
        meta = self.dataset.samples[self.keys[share]]
        views, make = self._views(meta), self._make()
        starts = meta["offset"].tolist()
        ends = (meta["offset"] + meta["len"]).tolist()
        labels = meta["label"].tolist()
        if self.label_transform is not None:
            labels = [self.label_transform(label) for label in labels]
        rows = zip(meta["file"].tolist(), starts, ends, labels)
        if self.with_keys:
            yield from self._with_keys(rows, views, make, share)
            return
        if not self.with_weights:
            for file, start, end, label in rows:
                yield make(views[file][start:end]), label
            return
        for (file, start, end, label), weight in zip(
                rows, self.weights[share].tolist()):
            yield make(views[file][start:end]), label, weight

    def _with_keys(self, rows, views, make, share):
        """__iter__'s tuples with the key last (kept apart so that the
        default loop stays as lean as it is)."""
        keys = self.keys[share].tolist()
        if not self.with_weights:
            for (file, start, end, label), key in zip(rows, keys):
                yield make(views[file][start:end]), label, key
            return
        for (file, start, end, label), weight, key in zip(
                rows, self.weights[share].tolist(), keys):
            yield make(views[file][start:end]), label, weight, key


def save_embeddings(rows, path=None):
    """Writes an embedding job's answer: rows (one per sample asked for,
    in order; any array-like of numbers, 2-D) as float32 rows to path
    (default $AEGIS_EMBED_OUT), whole or not at all."""
    rows = np.ascontiguousarray(rows, dtype="<f4")
    if rows.ndim != 2 or rows.shape[1] < 1:
        raise ValueError(f"embeddings: expected rows of numbers, got shape "
                         f"{rows.shape}")
    # the supervisor refuses a row that is not finite (its drift metrics
    # would be NaN): said here, where the job can still be mended
    if not np.all(np.isfinite(rows)):
        raise ValueError("embeddings: a value is NaN or infinite (or past "
                         "float32's range)")
    _replace_whole(_job_file(path, "AEGIS_EMBED_OUT", "save_embeddings"),
                   [rows.tobytes()])


def _replace_whole(path, chunks):
    """Writes chunks to path through a temporary name: whole or not at
    all. A write or rename that fails (a full disk, path a folder) takes
    the temporary with it: left behind, it would hold half an answer."""
    tmp = path + ".tmp"
    f = open(tmp, "wb")
    try:
        with f:
            for chunk in chunks:
                f.write(chunk)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _job_file(path, variable, what):
    """path, or the file the pipeline's job was given in variable. A
    number is refused: open() takes it for a descriptor, which it reads
    and then closes."""
    if path is not None and not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"{what}: path must be a file's path (str or "
                        f"os.PathLike), got {type(path).__name__}")
    if path:
        return path
    if variable not in os.environ:
        raise RuntimeError(f"{what}: no path given and ${variable} is not "
                           f"set: this runs in a pipeline's job, or give "
                           f"path=")
    return os.environ[variable]


def _per_key(values, count, what):
    """values as an array of count rows, each finite: a clear ValueError
    where numpy would broadcast one row to every key, or take NaN."""
    raw = np.asarray(values)
    if raw.ndim == 0 or len(raw) != count:
        raise ValueError(f"predictions: {count} keys but {what} has "
                         f"{1 if raw.ndim == 0 else len(raw)} rows")
    if raw.dtype.kind == "f" and not np.all(np.isfinite(raw)):
        raise ValueError(f"predictions: {what} holds NaN or infinity")
    return raw


def _unique_keys(keys):
    """A ValueError naming a key given twice: aegis refuses the whole file
    for it (docs/pipelines.md), after the job has ended."""
    ordered = np.sort(keys)
    twice = ordered[1:][ordered[1:] == ordered[:-1]]
    if len(twice):
        raise ValueError(f"predictions: key {int(twice[0])} is given twice")


def save_predictions(keys, labels=None, scores=None, path=None):
    """Writes an evaluation job's answer (src/pipeline/eval.h's binary
    format) to path (default $AEGIS_EVAL_OUT): for each key, its predicted
    label (labels: whole numbers) or its scores, one per class (scores:
    one row per key, 2 or more columns; top-n accuracy and ROC-AUC need
    them). Give one of labels and scores, with one row per key."""
    keys = aegis_checks.check_whole_array(
        "predictions: keys", np.asarray(keys).reshape(-1), "<u8", 0,
        floats=False)
    _unique_keys(keys)
    if labels is None and scores is None:
        raise ValueError("predictions: give labels or scores")
    if labels is not None and scores is not None:
        raise ValueError("predictions: give labels or scores, not both")
    if labels is not None:
        width = 0
        rows = np.zeros(len(keys), dtype=[("key", "<u8"), ("label", "<i8")])
        # a class each: 2-D labels were numpy's "could not broadcast", a
        # label past int64 its OverflowError, a negative one taken
        labels = _per_key(labels, len(keys), "labels")
        if labels.dtype.kind == "b":
            # a binary classifier's (probs > 0.5): classes 1 and 0
            labels = labels.astype("<i8")
        rows["label"] = aegis_checks.check_whole_array(
            "predictions: labels", labels,
            "<i8", 0, note="labels are classes",
            at=lambda i: f"predictions: the label of key {keys[i]}")
    else:
        scores = _per_key(scores, len(keys), "scores").astype("<f4")
        if scores.ndim != 2 or scores.shape[1] < 2:
            raise ValueError(f"predictions: expected one row of 2 or more "
                             f"scores per key, got shape {scores.shape}")
        width = scores.shape[1]
        rows = np.zeros(len(keys), dtype=[("key", "<u8"),
                                          ("score", "<f4", (width,))])
        rows["score"] = scores
    rows["key"] = keys
    header = _PRED_HEADER.pack(b"AEGPRED1", len(keys), width, 0)
    _replace_whole(_job_file(path, "AEGIS_EVAL_OUT", "save_predictions"),
                   [header, rows.tobytes()])


def save_losses(losses, path=None):
    """Writes an IL job's answer (RHO-LOSS's irreducible-loss model,
    docs/pipelines.md): one loss per sample of $AEGIS_IL_KEYS, in order,
    as float32, to path (default $AEGIS_IL_OUT), whole or not at all."""
    losses = np.ascontiguousarray(losses, dtype="<f4").reshape(-1)
    if not np.all(np.isfinite(losses)):
        raise ValueError("save_losses: a loss is NaN or infinite")
    _replace_whole(_job_file(path, "AEGIS_IL_OUT", "save_losses"),
                   [losses.tobytes()])


def downsampler(**options):
    """The training loop's hook for learned selection: the downsampler of
    this trigger's downsampling_config ($AEGIS_DOWNSAMPLING), or None when
    it trains on everything. Show it sample ids with the model's outputs
    (inform_samples: per-sample loss from logits, last-layer gradients,
    embeddings) and it returns the kept ids with their weights
    (select_points); see the aegis_downsample module."""
    import aegis_downsample
    return aegis_downsample.from_env(**options)
