"""aegis_tensorsocket -- TensorSocket's TensorProducer and TensorConsumer
over the aegis feed, with the module functions of tensorsocket.producer.

They take TensorSocket's arguments, keep its attributes and run its users'
scripts unchanged: an epoch is len(data_loader) loader batches (a loader
that never raises StopIteration still ends its epochs), pack_fn is applied
to each published batch and unpack_fn gets what it made (TensorPayloads by
default), batches go to the GPU when CUDA is there. Where TensorSocket
drops batches, aegis is exact: each consumer sees every sample
of every epoch once, in batches of its batch_size. The ports only name the
feed: one machine, no sockets, no heartbeat (a consumer's record is freed
when its process ends). docs/feed.md lists every difference."""
import json
import math
import uuid

import aegis_checks
import aegis_feed
from aegis_tensorpayload import TensorPayload, _is_tensor, _map, pack, unpack

__all__ = ["TensorProducer", "TensorConsumer", "TensorPayload", "pack",
           "unpack", "data_to_cuda", "slice", "collate"]


def _port_name(port):
    return "tensorsocket-%s" % port


def _to_device(data, device):
    """data (tuple, list, dict or one tensor) with its tensors on device."""
    return _map(lambda t: t.to(device=device) if _is_tensor(t) else t, data)


def data_to_cuda(data):
    """The tensors of a batch on the current CUDA device."""
    return _to_device(data, "cuda")


def slice(data, a, b):  # noqa: A001 -- TensorSocket's name
    """Rows a to b of each tensor of a tuple batch."""
    return tuple(t[a:b] for t in data)


def collate(batches):
    """One tuple batch of the rows of tuple batches, in order."""
    import torch
    return tuple(torch.cat([b[i] for b in batches])
                 for i in range(len(batches[0])))


def _check_callable(name, fn):
    """TypeError naming the argument `name` unless fn is None (the
    default) or callable: found only at the first batch, the refusal named
    the publishing stage, not the argument."""
    if fn is not None and not callable(fn):
        raise TypeError("%s %r: not callable" % (name, fn))


def _check_device(device):
    """device as torch names it; ValueError naming the argument where torch
    knows no such device (found only at the first batch, in publishing)."""
    if device is None:
        return None
    import torch
    try:
        torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError("device %r: %s" % (device, e)) from None
    return device


def _cuda_device():
    """"cuda" where torch sees a GPU, else None (batches stay put)."""
    try:
        import torch
    except ImportError:
        return None
    return "cuda" if torch.cuda.is_available() else None


def _feed_member(t, where):
    """What the feed carries of one member of pack_fn's result."""
    if isinstance(t, TensorPayload):
        return t.tensor
    if _is_tensor(t) or hasattr(t, "__array_interface__"):
        return t
    raise TypeError("pack_fn returned %s at %s: aegis's feed carries "
                    "tensors, arrays and TensorPayloads only" %
                    (type(t).__name__, where))


def _unpacked(packed):
    """pack_fn's result as the feed's batch: its TensorPayloads opened."""
    if isinstance(packed, dict):
        return {k: _feed_member(v, "key %r" % k) for k, v in packed.items()}
    if isinstance(packed, (tuple, list)):
        return tuple(_feed_member(t, "position %d" % i)
                     for i, t in enumerate(packed))
    return _feed_member(packed, "the top")


def _told(meta):
    """The dict a TensorProducer left in the feed; {} from any other
    producer (aegis_feed.Producer leaves nothing)."""
    try:
        told = json.loads(meta.decode() or "{}")
    except ValueError:
        return {}
    return told if isinstance(told, dict) else {}


class ConsumerProgress:
    """What the producer knows of one consumer (producer.consumers[id])."""

    def __init__(self, pid, batch_size, batches, loader_batch_size):
        self.pid = pid
        self.batch_size = batch_size  # 0: whole published batches
        self.batches = batches        # published batches it has read
        self.loader_batch_size = loader_batch_size

    def __repr__(self):
        return "ConsumerProgress(pid=%d, batch_size=%d, batches=%d)" % (
            self.pid, self.batch_size, self.batches)


class TensorProducer(aegis_feed.Producer):
    """TensorSocket's producer: iterate it once per epoch, join() at the
    end. producer_batch_size loader batches are published as one, so
    consumers may take batches up to that many times the loader's;
    consumer_max_buffer_size (loader batches) bounds how far it runs ahead
    of the slowest consumer. Beyond TensorSocket's arguments: name (the
    feed; default from port), consumer_timeout (seconds a publish waits for
    a consumer before FeedError; None: for ever) and device (where batches
    go: default "cuda" when CUDA is there, as TensorSocket does; "cpu"
    keeps them in host memory)."""

    def __init__(self, data_loader, port=5555, ack_port=5556,
                 heart_ports=(4444, 4445), rubber_band_pct=0.005,
                 pack_fn=pack, consumer_max_buffer_size=10,
                 producer_batch_size=8, max_tensor_length=150, name=None,
                 consumer_timeout=None, device=None):
        self.data_loader_len = len(data_loader)  # TensorSocket's TypeError
        _check_callable("pack_fn", pack_fn)
        device = _check_device(device)
        producer_batch_size = aegis_checks.check_whole(
            "producer_batch_size", producer_batch_size, 1)
        consumer_max_buffer_size = aegis_checks.check_whole(
            "consumer_max_buffer_size", consumer_max_buffer_size, 1)
        super().__init__(
            data_loader, name=name or _port_name(port),
            ahead=max(2, math.ceil(consumer_max_buffer_size /
                                   producer_batch_size)),
            rubber_band_pct=rubber_band_pct, combine=producer_batch_size,
            consumer_timeout=consumer_timeout)
        self.port, self.ack_port, self.heart_ports = port, ack_port, heart_ports
        self.data_loader = data_loader
        self.pack_fn = pack_fn or pack
        self.producer_batch_size = producer_batch_size
        self.consumer_max_buffer_size = consumer_max_buffer_size
        self.loader_batch_size = 0  # known at the first batch
        self.index = 0  # loader batches taken this epoch
        self.rb_max_len = rubber_band_pct * self.data_loader_len
        self.rb_buffer = []  # (index, None) of the replay window: see _take
        self.device = device or _cuda_device()

    def __iter__(self):
        return self  # an epoch left unfinished goes on where it stopped

    def __next__(self):
        """The loader's next batch, published; after len(data_loader) of
        them (or the loader's own end) the epoch is closed and it stops.
        After join() it is a FeedError, as aegis_feed.Producer's, at an
        epoch's end too (it stopped there, as if an epoch had ended)."""
        self._check_open()
        if self.index >= self.data_loader_len:
            self._end_epoch()
            raise StopIteration
        return super().__next__()

    def _take(self, batch):
        """Count a loader batch (the first one gives loader_batch_size,
        which the feed, made at the first publish, tells consumers), then
        publish as the feed does."""
        if not self.loader_batch_size:
            self.loader_batch_size = aegis_feed._rows(batch)
        # The batches a late consumer may replay are in the feed's shared
        # slots already; keeping them here too would double that memory.
        self.rb_buffer.append((self.index, None))
        if len(self.rb_buffer) > self.rb_max_len:
            self.rb_buffer.pop(0)
        self.index += 1
        super()._take(batch)

    def _end_epoch(self):
        super()._end_epoch()
        self.index = 0
        self.rb_buffer = []

    def publish(self, batch):
        if self.device:
            batch = _to_device(batch, self.device)
        self._stage = "pack_fn"  # the consumers' error names it
        packed = self.pack_fn(batch)
        self._stage = "publishing a batch"
        super().publish(_unpacked(packed))

    def _meta(self):
        """What TensorSocket's consumers are told of their producer."""
        return json.dumps({
            "data_loader_len": self.data_loader_len,
            "loader_batch_size": self.loader_batch_size,
            "max_buffer_size": self.consumer_max_buffer_size,
        }).encode()

    @property
    def consumers(self):
        """The attached consumers by consumer_id (a str of a UUID), each a
        ConsumerProgress."""
        return {str(uuid.UUID(bytes=i)): ConsumerProgress(
                    pid, bs, n, self.loader_batch_size)
                for i, pid, bs, n in self.peers()}


class TensorConsumer(aegis_feed.Consumer):
    """TensorSocket's consumer: iterate it once per epoch; each batch is
    unpack_fn of the producer's pack_fn result (TensorPayloads by default),
    so an unpack_fn written for TensorSocket works unchanged. It waits for
    its producer (timeout: seconds, None for ever); len() is the batches of
    an epoch at its batch_size, exactly."""

    def __init__(self, port=5555, ack_port=5556, heart_ports=(4444, 4445),
                 unpack_fn=unpack, batch_size=64, name=None, timeout=None):
        _check_callable("unpack_fn", unpack_fn)
        super().__init__(name=name or _port_name(port), batch_size=batch_size,
                         timeout=timeout, as_torch=True)
        self.port, self.ack_port, self.heart_ports = port, ack_port, heart_ports
        self.unpack_fn = unpack_fn or unpack
        self.consumer_id = uuid.UUID(bytes=self.id)
        self.batch_count = 0  # batches handed out this epoch
        self.batch_max = -1   # index of the last one; -1 before the first
        told = _told(self.meta)
        self.data_loader_len = told.get("data_loader_len")
        self.loader_batch_size = told.get("loader_batch_size")
        self.max_buffer_size = told.get("max_buffer_size")

    def __next__(self):
        try:
            batch = super().__next__()
        except StopIteration:
            self.batch_count, self.batch_max = 0, -1
            raise
        self.batch_max = self.batch_count
        self.batch_count += 1
        return self.unpack_fn(pack(batch))
