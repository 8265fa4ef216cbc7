"""TensorSocket's public API on aegis's `tensorsocket` package (issue 26):
its names (__version__, TensorPayload, tensorsocket.payload and
.heartbeat, the module functions), and scripts written the way
TensorSocket's examples are (tensorsocket_usage/dummy_producer.py and
payload_consumer.py) run unchanged and exactly:
- a loader that never raises StopIteration ends each epoch after
  len(data_loader) batches, and is never asked for more;
- pack_fn is applied, and unpack_fn gets TensorPayloads;
- the producer's and consumers' attributes read as TensorSocket's do, and
  producer.consumers is keyed by the consumers' consumer_id;
- batches are on the GPU where CUDA is there.
ctest runs it with /usr/bin/python3 and PYTHONPATH naming build/python;
exit 77 (skip) without torch."""
import gc
import json
import os
import pickle
import sys

try:
    import torch
except ImportError:
    sys.exit(77)

import aegis_feed
import tensorsocket
from ts_kids import await_waiting, run

EPOCHS, LOADER_LEN, LOADER_BATCH, COMBINE = 2, 12, 8, 4
SAMPLES = LOADER_LEN * LOADER_BATCH


def test_names():
    import tensorsocket.consumer as consumer
    import tensorsocket.heartbeat as heartbeat
    import tensorsocket.payload as payload
    import tensorsocket.producer as producer
    assert tensorsocket.__version__ == "0.0.4", tensorsocket.__version__
    assert tensorsocket.TensorPayload is payload.TensorPayload
    assert tensorsocket.TensorProducer is producer.TensorProducer
    assert tensorsocket.TensorConsumer is consumer.TensorConsumer
    heart = heartbeat.Heart(None, "id", 16, "tcp://localhost:1",
                            "tcp://localhost:2")
    heart.daemon = True
    heart.start()
    heart.join(10)
    assert not heart.is_alive()
    assert heartbeat.HeartBeater(None, None, None).consumers == []


def test_payload():
    from tensorsocket.consumer import unpack
    from tensorsocket.payload import TensorPayload
    from tensorsocket.producer import collate, pack, slice
    x, y = torch.arange(12.).reshape(6, 2), torch.arange(6)
    p = TensorPayload(x)
    assert p.tensor is x
    again = pickle.loads(pickle.dumps(p))
    assert isinstance(again, TensorPayload) and torch.equal(again.tensor, x)
    assert torch.equal(TensorPayload(p.payload).tensor, x)
    try:
        TensorPayload([1, 2])
    except TypeError as e:
        assert "takes a torch tensor" in str(e), e
    else:
        raise AssertionError("TensorPayload took a list")
    packed = pack((x, y))
    assert all(isinstance(t, TensorPayload) for t in packed)
    assert unpack(packed)[1] is y
    assert torch.equal(slice((x, y), 2, 4)[1], y[2:4])
    assert torch.equal(collate([(y[:2],), (y[2:],)])[0], y)


def test_pack_fn_must_leave_tensors():
    """A pack_fn whose result the feed cannot carry is a clear error at the
    first batch, before any feed is made."""
    loader = [(torch.zeros(4), torch.arange(4))]
    producer = tensorsocket.TensorProducer(
        loader, port="api%d" % os.getpid(), producer_batch_size=1,
        pack_fn=lambda data: "not tensors")
    try:
        next(iter(producer))
    except TypeError as e:
        assert "pack_fn returned str" in str(e), e
    else:
        raise AssertionError("a str from pack_fn was published")
    producer.join()


def test_join_at_an_epoch_end():
    """A producer iterated after join() is a FeedError, as aegis_feed's
    Producer is (docs/feed.md, "A closed producer"): one that had taken
    its epoch's last batch, joined, then iterated again, ended the
    iteration instead (StopIteration: a `for` loop ran no batch, silently),
    however often it was iterated."""
    port = 20000 + (os.getpid() * 11 + 7) % 20000
    kid = run("payload_consumer.py", port, 1, 4)
    try:
        await_waiting(kid)
        loader = [(2 * torch.arange(4 * i, 4 * i + 4).float(),
                   torch.arange(4 * i, 4 * i + 4)) for i in range(4)]
        producer = tensorsocket.TensorProducer(
            loader, port=port, producer_batch_size=2, device="cpu")
        taken = [b for _, b in zip(range(len(loader)), producer)]
        assert len(taken) == len(loader) and producer.index == len(loader)
        producer.join()
        for again in (lambda: next(producer),
                      lambda: [b for b in producer]):
            try:
                again()
            except aegis_feed.FeedError as e:
                assert "the producer is closed" in str(e), e
            except StopIteration:
                raise AssertionError("StopIteration after join(), not "
                                     "FeedError") from None
            else:
                raise AssertionError("iterated after join()")
        kid.communicate(timeout=60)
    finally:
        if kid.poll() is None:
            kid.kill()
            kid.communicate()


def refused(want, **kwargs):
    """TensorProducer(loader, **kwargs) raises a ValueError saying want."""
    loader = [(torch.zeros(4), torch.arange(4))]
    try:
        tensorsocket.TensorProducer(loader, port="api%d" % os.getpid(),
                                    **kwargs)
    except ValueError as e:
        assert want in str(e), (want, e)
    else:
        raise AssertionError("TensorProducer took %r" % (kwargs,))


def test_bad_arguments_are_refused():
    """A producer_batch_size of 0 was a ZeroDivisionError, 2.5 was taken
    (no group of 2.5 batches ever filled, so the epoch came as one batch),
    a negative consumer_max_buffer_size or consumer_timeout was taken, and
    each refusal was followed by an AttributeError from __del__. Each is
    a ValueError naming the argument, and nothing more."""
    unraisable = []
    seen_hook, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        for size in (0, -1, 2.5, "8", True):
            refused("producer_batch_size: %r" % (size,),
                    producer_batch_size=size)
        for size in (0, -5, "10"):
            refused("consumer_max_buffer_size: %r" % (size,),
                    consumer_max_buffer_size=size)
        for wait in (-1, "5", float("nan")):
            refused("consumer_timeout", consumer_timeout=wait)
        # were taken, and failed (or replayed 5 epochs) later
        for pct in (-1, 5, "0.1", float("nan")):
            refused("rubber_band_pct %r" % (pct,), rubber_band_pct=pct)
        refused("device 'bogus'", device="bogus")
        port = "api%d" % os.getpid()
        for make in (lambda: tensorsocket.TensorProducer(
                         [(torch.zeros(4),)], port=port, pack_fn=3),
                     lambda: tensorsocket.TensorConsumer(
                         port=port, timeout=0, unpack_fn=3)):
            try:
                make()
            except TypeError as e:
                assert "_fn 3: not callable" in str(e), e
            else:
                raise AssertionError("a pack_fn or unpack_fn of 3 taken")
        try:
            tensorsocket.TensorProducer(None)
        except TypeError:
            pass
        gc.collect()
    finally:
        sys.unraisablehook = seen_hook
    assert not unraisable, [u.exc_value for u in unraisable]


def test_device_choice():
    """Batches go to "cuda" where torch sees a GPU (TensorSocket's rule),
    unless device= says otherwise; where it sees none they stay put.
    (With a GPU, test_scripts checks that consumers get CUDA tensors.)"""
    loader = [(torch.zeros(4), torch.arange(4))]
    seen_gpu = torch.cuda.is_available
    try:
        torch.cuda.is_available = lambda: True
        assert tensorsocket.TensorProducer(loader).device == "cuda"
        assert tensorsocket.TensorProducer(loader, device="cpu").device \
            == "cpu"
        torch.cuda.is_available = lambda: False
        assert tensorsocket.TensorProducer(loader).device is None
    finally:
        torch.cuda.is_available = seen_gpu


def check_producer(seen, consumer_ids):
    per_epoch = list(range(1, LOADER_LEN + 1))
    assert seen["indices"] == per_epoch * EPOCHS, seen["indices"]
    assert seen["epochs"] == list(range(1, EPOCHS + 1)), seen["epochs"]
    assert seen["loader_id"] == LOADER_LEN, "asked the loader for more"
    assert seen["len"] == seen["data_loader_len"] == LOADER_LEN, seen
    assert seen["data_loader"] and seen["pack_fn"], seen
    assert seen["producer_batch_size"] == COMBINE, seen
    assert seen["loader_batch_size"] == LOADER_BATCH, seen
    assert seen["consumer_max_buffer_size"] == 10, seen
    assert seen["heart_ports"] == [4444, 4445], seen
    assert seen["rb_max_len"] == LOADER_LEN and seen["rb_len"] == LOADER_LEN
    assert seen["consumer_ids"] == sorted(consumer_ids), \
        (seen["consumer_ids"], consumer_ids)


def check_consumer(seen, bs):
    assert seen["epochs"] and len(seen["epochs"]) == EPOCHS, bs
    for ids in seen["epochs"]:
        assert sorted(ids) == list(range(SAMPLES)), (bs, sorted(ids))
    assert seen["given"] == ["TensorPayload"], seen["given"]
    assert seen["doubled"], "pack_fn was not applied"
    assert seen["counts_ok"] and seen["batch_count_after"] == 0, seen
    assert seen["rows"] == [bs] and seen["len"] == SAMPLES // bs, seen
    assert seen["epoch_attr"] == list(range(1, EPOCHS + 1)), seen
    assert seen["is_uuid"] and seen["batch_size"] == bs, seen
    assert seen["data_loader_len"] == LOADER_LEN, seen
    assert seen["loader_batch_size"] == LOADER_BATCH, seen
    assert seen["max_buffer_size"] == 10, seen
    want = "cuda" if torch.cuda.is_available() else "cpu"
    assert seen["devices"] == [want], (seen["devices"], want)


def test_scripts():
    port = 20000 + (os.getpid() * 7) % 20000
    sizes = (16, 32)
    consumers = [run("payload_consumer.py", port, EPOCHS, bs) for bs in sizes]
    for kid in consumers:
        await_waiting(kid)
    producer = run("dummy_producer.py", port, EPOCHS, len(sizes))
    out, err = producer.communicate(timeout=100)
    assert producer.returncode == 0, err
    produced = json.loads(out)
    ids = []
    for bs, kid in zip(sizes, consumers):
        out, err = kid.communicate(timeout=100)
        assert kid.returncode == 0, err
        seen = json.loads(out)
        check_consumer(seen, bs)
        ids.append(seen["consumer_id"])
    check_producer(produced, ids)
    left = [f for f in os.listdir("/dev/shm")
            if f == "aegis-feed-tensorsocket-%d" % port]
    assert not left, left


def main():
    assert tensorsocket.AEGIS_COMPAT, "not aegis's tensorsocket package"
    for test in (test_names, test_payload, test_pack_fn_must_leave_tensors,
                 test_join_at_an_epoch_end, test_bad_arguments_are_refused,
                 test_device_choice, test_scripts):
        test()
        print("%s: ok" % test.__name__)


if __name__ == "__main__":
    main()
