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

TensorProducer and TensorConsumer accept TensorSocket's constructor
arguments, so scripts written for it run unchanged (the ports only name the
feed; there is no socket).
"""
import math

import _aegis_feed
from _aegis_feed import FeedError

__all__ = ["Producer", "Consumer", "TensorProducer", "TensorConsumer",
           "FeedError"]

# feed_dtype codes of the C library, by numpy dtype name.
_DTYPES = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4,
           "float16": 5, "bfloat16": 6, "float32": 7, "float64": 8,
           "bool": 9}

# Batch kind, kept by the producer in the feed's user flags.
_DICT, _TORCH, _SINGLE, _CUDA = 1, 2, 4, 8

_SLOT_SLACK = 1.25  # later batches may be a little larger (ragged data)


def _host_array(t):
    """(numpy array, dtype code) for a numpy array or torch CPU tensor."""
    if hasattr(t, "detach") and hasattr(t, "numpy"):  # torch.Tensor
        t = t.detach()
        if str(t.dtype) == "torch.bfloat16":
            import torch
            return t.contiguous().view(torch.int16).numpy(), _DTYPES["bfloat16"]
        return t.contiguous().numpy(), _DTYPES[str(t.dtype)[len("torch."):]]
    import numpy
    a = numpy.ascontiguousarray(t)
    return a, _DTYPES[a.dtype.name]


def _cuda_tensor(t):
    """(contiguous tensor, (data_ptr, shape, device), dtype code) for a
    torch CUDA tensor. The stream that wrote it is synchronised first: the
    feed copies it on the device's default stream."""
    import torch
    t = t.detach().contiguous()
    torch.cuda.current_stream(t.device).synchronize()
    code = _DTYPES[str(t.dtype)[len("torch."):]]
    return t, (t.data_ptr(), tuple(t.shape), t.device.index), code


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


class Producer:
    """Publishes the batches of `loader` into the feed `name`.

    ahead: most batches published past the slowest consumer (backpressure).
    rubber_band_pct: fraction of an epoch a late joiner may replay; needs
    len(loader), else give replay= (batches) directly. min_consumers: wait
    for this many consumers before publishing. The feed is created at the
    first batch, with slots sized from it (or slot_bytes=).
    """

    def __init__(self, loader, name="aegis", ahead=10, rubber_band_pct=0.0,
                 replay=None, min_consumers=1, slots=0, slot_bytes=None):
        self._feed = None
        self.loader = loader
        self.name = name
        self.ahead = ahead
        if replay is None:
            try:
                replay = math.ceil(rubber_band_pct * len(loader))
            except TypeError:
                replay = 0
        self.replay = replay
        self.min_consumers = min_consumers
        self.slots = slots
        self.slot_bytes = slot_bytes
        self._it = None
        self.epoch = 0

    def _open(self, need, kind):
        # Host and CUDA tensors each get slot_bytes per slot (host in
        # shared memory, CUDA in the slot's device buffer).
        size = self.slot_bytes or int(need * _SLOT_SLACK) + 4096
        self._feed = _aegis_feed._Producer(
            self.name, size, slots=self.slots, ahead=self.ahead,
            replay=self.replay, min_consumers=self.min_consumers,
            user_flags=kind)

    def publish(self, batch):
        # keep: the CUDA sources, alive until publish has copied them
        items, kind, need, keep = _flatten(batch)
        if self._feed is None:
            self._open(need, kind)
        self._feed.publish(items)

    def __iter__(self):
        self._it = iter(self.loader)
        return self

    def __next__(self):
        """Publish the loader's next batch and return it; at the end of the
        loader, close the epoch and stop."""
        if self._it is None:
            self._it = iter(self.loader)
        try:
            batch = next(self._it)
        except StopIteration:
            self._it = None
            if self._feed is not None:
                self._feed.end_epoch()
            self.epoch += 1
            raise
        self.publish(batch)
        return batch

    def run(self, epochs=1):
        for _ in range(epochs):
            for _ in self:
                pass

    def consumers(self):
        return self._feed.consumers() if self._feed else 0

    def close(self):
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

    Only a feed of this process's user is read, or of a user named in the
    environment variable AEGIS_FEED_TRUST (user names or uids, separated
    by commas); another user's raises FeedError naming its owner."""

    def __init__(self, name="aegis", batch_size=0, timeout=30.0,
                 as_torch=None):
        self._feed = _aegis_feed._Consumer(name, batch_size,
                                           int(timeout * 1000))
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

    def close(self):
        self._feed.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _port_name(port):
    return "tensorsocket-%d" % port


class TensorProducer(Producer):
    """TensorSocket's producer signature. The ports name the feed;
    pack_fn, producer_batch_size and max_tensor_length are accepted and
    have no effect here."""

    def __init__(self, data_loader, port=5555, ack_port=5556,
                 heart_ports=(4444, 4445), rubber_band_pct=0.005,
                 pack_fn=None, consumer_max_buffer_size=10,
                 producer_batch_size=8, max_tensor_length=150, name=None):
        super().__init__(data_loader, name=name or _port_name(port),
                         ahead=consumer_max_buffer_size,
                         rubber_band_pct=rubber_band_pct)


class TensorConsumer(Consumer):
    """TensorSocket's consumer signature; yields torch tensors."""

    def __init__(self, port=5555, ack_port=5556, heart_ports=(4444, 4445),
                 unpack_fn=None, batch_size=64, name=None, timeout=30.0):
        super().__init__(name=name or _port_name(port), batch_size=batch_size,
                         timeout=timeout, as_torch=True)
        self._unpack = unpack_fn

    def __next__(self):
        batch = super().__next__()
        return self._unpack(batch) if self._unpack else batch
