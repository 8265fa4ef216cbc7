"""aegis_feed -- one data pipeline shared by collocated training jobs.

A Producer wraps any iterable of batches (tuples, lists or dicts of numpy
arrays or torch CPU tensors, or a single array) and publishes them into a
shared-memory feed; any number of Consumer processes attach by name and
iterate over the same batches with no copy: numpy arrays (buffer protocol)
or torch tensors (DLPack) that point into the shared segment.

torch CUDA tensors travel by CUDA IPC: the producer copies each into a
device buffer owned by the ring slot, and consumers get torch CUDA tensors
over their mapping of it (same GPU, no copy). numpy cannot read them.

    for epoch in range(epochs):          # producer process
        for _ in producer: pass
    producer.close()

    for x, y in Consumer(name="imagenet", batch_size=64):   # each job
        ...

TensorProducer and TensorConsumer, TensorSocket's classes over the feed,
are in aegis_tensorsocket (and importable from here); the `tensorsocket`
package aegis ships where TensorSocket is not installed gives them
TensorSocket's names.

A consumer started before its producer waits for it (for ever, or
`timeout` seconds), logging once what it waits for; a producer waits for
`min_consumers` consumers before its first batch (for ever, or
`consumer_timeout` seconds), and after that for any one.
"""
import logging
import math
import numbers
import time

import _aegis_feed
import aegis_checks
from _aegis_feed import FeedError

__all__ = ["Producer", "Consumer", "TensorProducer", "TensorConsumer",
           "FeedError"]

# feed_dtype codes of the C library, by numpy dtype name.
_DTYPES = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4,
           "float16": 5, "bfloat16": 6, "float32": 7, "float64": 8,
           "bool": 9}

# Batch kind, kept by the producer in the feed's user flags.
_DICT, _TORCH, _SINGLE, _CUDA = 1, 2, 4, 8
_KEY_MAX = _aegis_feed.KEY_MAX  # bytes of a dict key

_SLOT_SLACK = 1.25  # later batches may be a little larger (ragged data)
_ATTACH_SLICE_S = 0.25  # one C wait for a producer; Ctrl-C is seen between

_log = logging.getLogger("aegis_feed")


def _check_seconds(name, value):
    """ValueError naming the argument `name` unless value is None or
    seconds, 0 or more (a NaN would wait for ever)."""
    if value is not None and (isinstance(value, bool) or
                              not isinstance(value, numbers.Real) or
                              not value >= 0):
        raise ValueError("%s %r: seconds, 0 or more, or None"
                         % (name, value))


def _check_fraction(name, value):
    """ValueError naming the argument `name` unless value is a fraction,
    from 0 to 1."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Real) or
            not 0 <= value <= 1):
        raise ValueError("%s %r: a fraction of an epoch, from 0 to 1"
                         % (name, value))


# The longest wait for consumers the feed can time: its C int of
# milliseconds (24.8 days). A longer consumer_timeout, infinity too, waits
# for ever, as None does.
_MAX_WAIT_MS = 2 ** 31 - 1


def _wait_ms(seconds):
    """The feed's consumer_wait_ms for a consumer_timeout (checked)."""
    if seconds is None or seconds * 1000 > _MAX_WAIT_MS:
        return 0  # for ever
    return max(1, int(seconds * 1000))


def _dtype_code(name):
    """The feed's code for a dtype name; TypeError for one it cannot carry."""
    try:
        return _DTYPES[name]
    except KeyError:
        raise TypeError("the feed cannot carry dtype %s; it carries %s"
                        % (name, ", ".join(_DTYPES))) from None


def _host_array(t):
    """(numpy array, dtype code) for a numpy array or torch CPU tensor."""
    if hasattr(t, "detach") and hasattr(t, "numpy"):  # torch.Tensor
        t = t.detach()
        if str(t.dtype) == "torch.bfloat16":
            import torch
            return t.contiguous().view(torch.int16).numpy(), _DTYPES["bfloat16"]
        code = _dtype_code(str(t.dtype)[len("torch."):])
        return t.contiguous().numpy(), code
    import numpy
    a = numpy.ascontiguousarray(t)
    return a, _dtype_code(a.dtype.name)


def _cuda_tensor(t):
    """(contiguous tensor, (data_ptr, shape, device), dtype code) for a
    torch CUDA tensor. The stream that wrote it is synchronised first: the
    feed copies it on the device's default stream."""
    import torch
    t = t.detach().contiguous()
    torch.cuda.current_stream(t.device).synchronize()
    code = _dtype_code(str(t.dtype)[len("torch."):])
    return t, (t.data_ptr(), tuple(t.shape), t.device.index), code


def _check_key(key, kind):
    """A dict batch's key travels as text of at most _KEY_MAX bytes: a
    longer one would be cut short (two keys could become one), another
    type come back as its str."""
    if not kind & _DICT:
        return
    if not isinstance(key, str):
        raise TypeError("a dict batch's keys must be str, not %s (%r)"
                        % (type(key).__name__, key))
    if len(key.encode("utf-8")) > _KEY_MAX or "\0" in key:
        raise ValueError("dict key %r: at most %d bytes, without NUL"
                         % (key, _KEY_MAX))


def _flatten(batch):
    """[(key, array or CUDA tuple, dtype)], kind flags, bytes, and the
    tensors that must stay alive until the publish is done."""
    if isinstance(batch, dict):
        items, kind = list(batch.items()), _DICT
    elif isinstance(batch, (tuple, list)):
        items, kind = [("", t) for t in batch], 0
    else:
        items, kind = [("", batch)], _SINGLE
    out, nbytes, keep = [], 0, []
    for key, t in items:
        _check_key(key, kind)
        if hasattr(t, "detach"):
            kind |= _TORCH
        if getattr(t, "is_cuda", False):
            kind |= _CUDA
            t, payload, code = _cuda_tensor(t)
            keep.append(t)
            nbytes += t.numel() * t.element_size() + 64
        else:
            payload, code = _host_array(t)
            nbytes += payload.nbytes + 64
        out.append((str(key), payload, code))
    return out, kind, nbytes, keep


def _concat(tensors):
    """One tensor of the rows of `tensors` (torch or numpy), in order."""
    first = tensors[0]
    if len(tensors) == 1 or getattr(first, "ndim", 0) == 0:
        return first  # a scalar stays the first batch's
    if hasattr(first, "detach"):
        import torch
        return torch.cat(tensors)
    import numpy
    return numpy.concatenate(tensors)


def _structure(batch):
    """What a batch's consumers rebuild it from: its kind and its keys (a
    dict) or length (a tuple or list)."""
    if isinstance(batch, dict):
        return "a dict of keys %s" % sorted(map(str, batch))
    if isinstance(batch, (tuple, list)):
        return "a sequence of %d tensors" % len(batch)
    return "one tensor"


def _kind_text(kind):
    """A batch kind (the flags _flatten gives), in words."""
    shape = "a dict" if kind & _DICT else "one tensor" if kind & _SINGLE \
        else "a sequence"
    return "%s of %s tensors" % (shape, "CUDA" if kind & _CUDA else
                                 "torch" if kind & _TORCH else "numpy")


def _combine(batches):
    """One batch of the rows of loader batches of one structure."""
    first = batches[0]
    if len(batches) == 1:
        return first
    for b in batches[1:]:
        if _structure(b) != _structure(first):
            raise ValueError("combine: loader batches differ: %s, then %s"
                             % (_structure(first), _structure(b)))
    if isinstance(first, dict):
        return {k: _concat([b[k] for b in batches]) for k in first}
    if isinstance(first, (tuple, list)):
        return tuple(_concat(list(ts)) for ts in zip(*batches))
    return _concat(batches)


def _rows(batch):
    """Rows (dim 0) of a batch, 0 if it has none."""
    if isinstance(batch, dict):
        batch = next(iter(batch.values()), None)
    elif isinstance(batch, (tuple, list)):
        batch = batch[0] if batch else None
    shape = getattr(batch, "shape", ())
    return int(shape[0]) if len(shape) else 0


def _loader_len(loader):
    try:
        return len(loader)
    except TypeError:
        return 0


def _epoch_rows(loader, loader_rows):
    """Samples per epoch: a torch DataLoader's, from its sampler; for any
    other loader with a len(), that many batches of loader_rows (the first
    batch's rows), as TensorSocket reckons; 0 (unknown) without a len().
    Consumers' len() is computed from it."""
    size = getattr(loader, "batch_size", None)
    try:
        if size and getattr(loader, "drop_last", False):
            return len(loader) * size
        if size and getattr(loader, "sampler", None) is not None:
            return len(loader.sampler)
    except TypeError:
        pass
    return _loader_len(loader) * loader_rows


class Producer:
    """Publishes the batches of `loader` into the feed `name`.

    ahead: most batches published past the slowest consumer (backpressure).
    rubber_band_pct: fraction of an epoch a late joiner may replay; needs
    len(loader), else give replay= (published batches) directly.
    min_consumers: wait for this many consumers before the first batch;
    after that, a consumer that leaves or dies never stops the others.
    consumer_timeout: seconds a publish waits for the consumers it needs
    before it raises FeedError (None: for ever). combine: loader batches
    published as one (their rows concatenated), so consumers may take
    batches up to that many times the loader's. The feed is created at the
    first batch, with slots sized from it (or slot_bytes=). len() is the
    loader's. close() (join()) ends the feed for good: iterating or
    publishing afterwards is a FeedError.
    """

    _feed = None  # what close() (and __del__) find after __init__ raised
    _closed = False

    def __init__(self, loader, name="aegis", ahead=10, rubber_band_pct=0.0,
                 replay=None, min_consumers=1, slots=0, slot_bytes=None,
                 consumer_timeout=None, combine=1):
        combine = aegis_checks.check_whole("combine", combine, 1)
        _check_seconds("consumer_timeout", consumer_timeout)
        _check_fraction("rubber_band_pct", rubber_band_pct)
        self._feed = None
        self._kind = None  # the first batch's kind (_flatten), the feed's
        self.loader = loader
        self.name = name
        self.ahead = ahead
        self.combine = combine
        if replay is None:
            replay = math.ceil(rubber_band_pct * _loader_len(loader) /
                               combine)
        self.replay = replay
        self.min_consumers = min_consumers
        self.consumer_timeout = consumer_timeout
        self.slots = slots
        self.slot_bytes = slot_bytes
        self._it = None
        self._pending = []  # loader batches not yet published (combine)
        self._loader_rows = 0  # rows of the first loader batch
        self._stage = ""  # what publishing a batch runs now, for _fail
        self.epoch = 0

    def __len__(self):
        return len(self.loader)

    def _open(self, need, kind, rows):
        # Host and CUDA tensors each get slot_bytes per slot (host in
        # shared memory, CUDA in the slot's device buffer).
        size = self.slot_bytes or int(need * _SLOT_SLACK) + 4096
        self._feed = _aegis_feed._Producer(
            self.name, size, slots=self.slots, ahead=self.ahead,
            replay=self.replay, min_consumers=self.min_consumers,
            user_flags=kind,
            consumer_wait_ms=_wait_ms(self.consumer_timeout),
            batch_rows=rows,
            epoch_batches=math.ceil(_loader_len(self.loader) / self.combine),
            epoch_rows=_epoch_rows(self.loader, self._loader_rows),
            user_meta=self._meta())

    def _meta(self):
        """Bytes the consumers may read (Consumer.meta); none here."""
        return b""

    def _check_open(self):
        """FeedError once close() (join()) ended the feed: publishing again
        would make a new feed of the name and wait for consumers that
        already saw the old one end."""
        if self._closed:
            raise FeedError("feed %s: the producer is closed (close() or "
                            "join() ended its feed); make a new one to "
                            "publish again" % self.name)

    def publish(self, batch):
        self._check_open()
        # keep: the CUDA sources, alive until publish has copied them
        items, kind, need, keep = _flatten(batch)
        if self._feed is None:
            self._open(need, kind, _rows(batch))
            self._kind = kind
        elif kind != self._kind:
            # consumers rebuild every batch in the first one's kind
            raise TypeError("feed %s: this batch is %s, the first was %s"
                            % (self.name, _kind_text(kind),
                               _kind_text(self._kind)))
        self._feed.publish(items)

    def _flush(self):
        if self._pending:
            self.publish(_combine(self._pending))
            self._pending = []

    def __iter__(self):
        self._it = iter(self.loader)
        self._pending = []  # what an interrupted epoch left
        return self

    def __next__(self):
        """Take the loader's next batch, publish it (once `combine` of them
        are in hand) and return it; at the end of the loader, publish what
        is left, close the epoch and stop."""
        self._check_open()
        if self._it is None:
            self._it = iter(self.loader)
        try:
            batch = next(self._it)
        except StopIteration:
            self._end_epoch()
            raise
        except BaseException as e:
            self._fail("its loader", e)
            raise
        self._stage = "publishing a batch"
        try:
            self._take(batch)
        except BaseException as e:
            self._fail(self._stage, e)
            raise
        return batch

    def _fail(self, what, e):
        """`what` (the loader, or a stage of publishing a batch: _stage)
        raised e: end the feed as failed, so that the consumers get a
        FeedError naming it once they have read what was published, not an
        epoch's end for what is only part of one."""
        if self._feed is not None:
            self._feed.fail("%s raised %s: %s" % (what, type(e).__name__, e))
            self._feed = None

    def _take(self, batch):
        """Publish batch once `combine` loader batches are in hand."""
        if not self._loader_rows:
            self._loader_rows = _rows(batch)
        self._pending.append(batch)
        if len(self._pending) == self.combine:
            self._flush()

    def _end_epoch(self):
        """Publish what is left of the epoch and close it; the next batch
        comes from a fresh iterator of the loader."""
        self._it = None
        self._stage = "publishing a batch"
        try:
            self._flush()
        except BaseException as e:
            self._fail(self._stage, e)
            raise
        if self._feed is not None:
            self._feed.end_epoch()
        self.epoch += 1

    def run(self, epochs=1):
        for _ in range(epochs):
            for _ in self:
                pass

    def consumers(self):
        return self._feed.consumers() if self._feed else 0

    def peers(self):
        """[(id, pid, batch_size, batches read)] of the live consumers."""
        return self._feed.peers() if self._feed else []

    def close(self):
        self._closed = True
        if self._feed is not None:
            self._feed.close()
            self._feed = None

    join = close  # TensorSocket's name for it

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


class Consumer:
    """Iterates over the batches of the feed `name`; one `for` loop is one
    epoch. batch_size 0 takes whole producer batches; otherwise each batch
    is a view of batch_size rows of a producer batch. as_torch None follows
    the producer's batch type; a feed of CUDA tensors needs torch.

    A consumer started before its producer waits for it: for ever, or
    `timeout` seconds before FeedError; it logs once (logger "aegis_feed")
    what it waits for. Each producer batch is cut into batches of
    batch_size rows, the last one shorter where batch_size does not divide
    it; one larger than the producer's batches is a FeedError (see
    Producer's combine). len() is the batches of an
    epoch at this batch size, where the producer's loader has a len().

    Only a feed of this process's user is read, or of a user named in the
    environment variable AEGIS_FEED_TRUST (user names or uids, separated
    by commas); another user's raises FeedError naming its owner."""

    def __init__(self, name="aegis", batch_size=0, timeout=None,
                 as_torch=None):
        self._feed = _attach(name, batch_size, timeout)
        self.batch_size = batch_size
        flags = self._feed.user_flags
        self._kind = flags
        self._torch = bool(flags & _TORCH) if as_torch is None else as_torch
        if flags & _CUDA and not self._torch:
            self._feed.close()
            raise FeedError("feed %s carries CUDA tensors: numpy cannot read "
                            "GPU memory; use as_torch=True" % name)
        self._ended = False
        self.epoch = self._feed.epoch
        # read now: a closed feed (at the end of the stream) has none
        self._meta = self._feed.user_meta
        self._id = self._feed.id
        try:
            self._len, self._len_error = len(self._feed), None
        except TypeError as e:  # the producer's loader has no len()
            self._len, self._len_error = None, str(e)

    def _convert(self, view):
        if self._torch:
            import torch
            return torch.utils.dlpack.from_dlpack(view.__dlpack__())
        import numpy
        return numpy.asarray(view)

    def __iter__(self):
        return self

    def __next__(self):
        if self._ended:
            raise StopIteration
        got = self._feed.next()
        if got == _aegis_feed.EPOCH_END:
            self.epoch += 1
            raise StopIteration
        if got == _aegis_feed.END:
            self._ended = True
            # Detach once the last batch is released: a producer with
            # device buffers waits for that before it frees them.
            self._feed.close()
            raise StopIteration
        if self._kind & _DICT:
            return {k: self._convert(v) for k, v in got}
        values = [self._convert(v) for _, v in got]
        return values[0] if self._kind & _SINGLE else tuple(values)

    def __len__(self):
        """Batches per epoch at this batch size, as read at attach: it
        answers after the producer ended the feed too."""
        if self._len is None:
            raise TypeError(self._len_error)
        return self._len

    @property
    def meta(self):
        """What the producer left for its consumers (bytes; b"" if none)."""
        return self._meta

    @property
    def id(self):
        """This consumer's id (16 bytes), as its producer lists it."""
        return self._id

    def close(self):
        self._feed.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _attach(name, batch_size, timeout):
    """A _Consumer of feed `name`, once its producer made it: tries in short
    waits (so Ctrl-C works) until `timeout` seconds (None: for ever)."""
    batch_size = aegis_checks.check_whole(  # the C library's: 32 bits
        "batch_size", batch_size, 0, 2 ** 32 - 1,
        note="0: whole producer batches")
    _check_seconds("timeout", timeout)
    # Announced as a consumer waiting for the feed for the whole loop, not
    # only inside each short wait: a producer made meanwhile holds its
    # first batch until every announced consumer has attached, so that
    # all start with epoch 0 (docs/feed.md, "Start order").
    announced = _aegis_feed.announce(name)
    try:
        return _attach_waiting(name, batch_size, timeout)
    finally:
        if announced:
            _aegis_feed.unannounce(name)


def _attach_waiting(name, batch_size, timeout):
    """_attach's loop of short waits."""
    start = time.monotonic()
    told = False
    while True:
        left = None if timeout is None else timeout - (time.monotonic() - start)
        wait_s = _ATTACH_SLICE_S if left is None else \
            max(0.0, min(_ATTACH_SLICE_S, left))
        try:
            return _aegis_feed._Consumer(name, batch_size, int(wait_s * 1000))
        except FeedError as e:
            if getattr(e, "code", None) != _aegis_feed.ENOENT:
                raise
        if left is not None and left <= wait_s:
            raise FeedError("feed %s: no producer after %g s (no "
                            "/dev/shm/aegis-feed-%s)" % (name, timeout, name))
        if not told:
            _log.warning("aegis_feed: waiting for the producer of feed %s "
                         "(/dev/shm/aegis-feed-%s does not exist yet)%s",
                         name, name, "" if timeout is None
                         else ", at most %g s" % timeout)
            told = True


def __getattr__(name):
    """TensorProducer and TensorConsumer, from aegis_tensorsocket (which
    builds on this module, so it is imported only when asked for)."""
    if name in ("TensorProducer", "TensorConsumer"):
        import aegis_tensorsocket
        return getattr(aegis_tensorsocket, name)
    raise AttributeError("module 'aegis_feed' has no attribute %r" % name)
