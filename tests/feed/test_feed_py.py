"""Tests of the aegis_feed Python module, run by ctest with /usr/bin/python3
and PYTHONPATH naming the built extension. Exit 77 (skip) without numpy.

Consumers are separate interpreter processes (this file, run with
`consume NAME BATCH_SIZE EPOCHS`) that print what they saw as JSON; the
parent produces and checks: every sample id of every epoch exactly once,
views that are windows of one shared buffer (no copy), a clean /dev/shm."""
import json
import math
import os
import select
import signal
import subprocess
import sys
import threading
import time

try:
    import numpy as np
except ImportError:
    sys.exit(77)

import aegis_feed

ROWS, BATCHES = 128, 6


def numpy_loader():
    return [(np.full((ROWS, 3), i, dtype=np.float32),
             np.arange(ROWS, dtype=np.int64) + i * ROWS)
            for i in range(BATCHES)]


def consume(name, batch_size, epochs, opts):
    """Child: report ids per epoch, rows per batch, len() and whether views
    were zero-copy. opts: "die_after" (SIGKILL itself after that many
    batches), "tensorsocket" (read through TensorConsumer), "timeout",
    "keep" (keep every batch, as a list of all of them would)."""
    wait = {"timeout": opts["timeout"]} if "timeout" in opts else {}
    kind = aegis_feed.TensorConsumer if opts.get("tensorsocket") \
        else aegis_feed.Consumer
    c = kind(name=name, batch_size=batch_size, **wait)
    report = {"epochs": [], "contiguous_views": True, "readonly": True,
              "kind": None, "rows": [], "batches": [], "len": len_or_none(c)}
    seen, kept = 0, []
    for _ in range(epochs):
        ids_seen, prev, batches = [], None, 0
        for batch in c:
            seen += 1
            batches += 1
            if seen == opts.get("die_after"):
                os.kill(os.getpid(), signal.SIGKILL)
            if opts.get("keep"):
                kept.append(batch)
            x, ids = (batch["x"], batch["ids"]) if isinstance(batch, dict) \
                else batch
            report["kind"] = type(ids).__module__.split(".")[0]
            if report["kind"] == "torch":
                addr, nbytes = ids.data_ptr(), ids.numel() * 8
                arr = ids.numpy()
            else:
                addr, nbytes = ids.ctypes.data, ids.nbytes
                arr = ids
                report["readonly"] &= not ids.flags.writeable
            # a later view of the same producer batch starts where the
            # previous one ended: it points into the same shared slot
            if prev is not None and int(arr[0]) % ROWS:
                report["contiguous_views"] &= prev == addr
            prev = addr + nbytes
            ids_seen.extend(int(i) for i in arr)
            report["rows"].append(len(arr))
            if not np.all(np.asarray(x)[:, 0] == np.asarray(arr) // ROWS):
                report["corrupt"] = True
        report["epochs"].append(ids_seen)
        report["batches"].append(batches)
    print(json.dumps(report))


def len_or_none(obj):
    try:
        return len(obj)
    except TypeError:
        return None


def spawn(name, batch_size, epochs, **opts):
    return subprocess.Popen([sys.executable, __file__, "consume", name,
                             str(batch_size), str(epochs), json.dumps(opts)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def await_line(stream, want, seconds=20):
    """The first line of stream containing want, within seconds."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [],
                                    deadline - time.monotonic())
        line = stream.readline() if ready else ""
        if want in line:
            return line
        assert line or not ready, "EOF before %r" % want
    raise AssertionError("no %r within %d s" % (want, seconds))


def check_exactly_once(report, epochs, label):
    assert len(report["epochs"]) == epochs, (label, len(report["epochs"]))
    for e, ids in enumerate(report["epochs"]):
        assert sorted(ids) == list(range(ROWS * BATCHES)), (label, e)
    assert report["contiguous_views"], label
    assert "corrupt" not in report, label


def test_numpy_mixed_batch_sizes(name):
    sizes = (32, 64, 128)
    producer = aegis_feed.Producer(numpy_loader(), name=name,
                                   min_consumers=len(sizes), ahead=4)
    kids = [spawn(name, bs, 2) for bs in sizes]
    producer.run(2)
    producer.close()
    for bs, kid in zip(sizes, kids):
        out, _ = kid.communicate(timeout=60)
        assert kid.returncode == 0, bs
        report = json.loads(out)
        check_exactly_once(report, 2, "numpy batch %d" % bs)
        assert report["kind"] == "numpy" and report["readonly"]


def test_torch_aliases(name):
    try:
        import torch
    except ImportError:
        print("torch missing: alias test skipped")
        return
    batches = [{"x": torch.full((ROWS, 3), float(i)),
                "ids": torch.arange(ROWS) + i * ROWS} for i in range(BATCHES)]
    producer = aegis_feed.TensorProducer(batches, port=7000, ack_port=7001,
                                         rubber_band_pct=0.5, name=name)
    kid = spawn(name, 32, 1)
    for _ in producer:
        pass
    producer.join()
    out, _ = kid.communicate(timeout=60)
    assert kid.returncode == 0
    report = json.loads(out)
    check_exactly_once(report, 1, "torch")
    assert report["kind"] == "torch"


def test_missing_feed_is_an_error(name):
    """A consumer's timeout says what it waited for (issue 17 item 4)."""
    start = time.monotonic()
    try:
        aegis_feed.Consumer(name=name + "-absent", timeout=0.3)
    except aegis_feed.FeedError as e:
        assert "absent" in str(e) and "no producer" in str(e), str(e)
    else:
        raise AssertionError("attached to a feed that does not exist")
    assert time.monotonic() - start < 5


def test_consumer_before_producer_waits(name):
    """A consumer started first waits for its producer, saying so, and
    then reads every sample (issue 17 item 4)."""
    kid = spawn(name, 64, 1)
    line = await_line(kid.stderr, "waiting for the producer")
    assert name in line, line
    producer = aegis_feed.Producer(numpy_loader(), name=name)
    producer.run(1)
    producer.close()
    out, _ = kid.communicate(timeout=60)
    assert kid.returncode == 0
    check_exactly_once(json.loads(out), 1, "consumer first")


def test_producer_times_out_without_consumers(name):
    """A producer waiting for consumers gives up after consumer_timeout,
    saying how many it has (issue 17 item 4)."""
    producer = aegis_feed.Producer(numpy_loader(), name=name,
                                   min_consumers=2, consumer_timeout=0.3)
    start = time.monotonic()
    try:
        producer.run(1)
    except aegis_feed.FeedError as e:
        assert "0 of the 2 consumers" in str(e), str(e)
    else:
        raise AssertionError("published without consumers")
    finally:
        producer.close()
    assert time.monotonic() - start < 5


def test_closed_producer_is_an_error(name):
    """A producer iterated again after join() made a new feed of its name
    and waited for consumers (for ever without consumer_timeout), which
    had seen the feed end; now it, and a publish, are a FeedError at
    once."""
    producer = aegis_feed.Producer(numpy_loader(), name=name,
                                   consumer_timeout=10)
    kid = spawn(name, 0, 1)
    producer.run(1)
    producer.join()
    out, _ = kid.communicate(timeout=60)
    assert kid.returncode == 0
    check_exactly_once(json.loads(out), 1, "before the join")
    start = time.monotonic()
    raises(aegis_feed.FeedError, "the producer is closed",
           lambda: producer.run(1))
    raises(aegis_feed.FeedError, "the producer is closed",
           lambda: producer.publish(numpy_loader()[0]))
    assert time.monotonic() - start < 5


def test_endless_consumer_timeout(name):
    """A consumer_timeout of infinity, or past what the feed can time (24.8
    days), waits for ever, as None does: it was an OverflowError at the
    first batch."""
    for i, wait in enumerate((float("inf"), 1e300)):
        feed = "%s-%d" % (name, i)
        producer = aegis_feed.Producer(numpy_loader(), name=feed,
                                       consumer_timeout=wait)
        kid = spawn(feed, 0, 1)
        producer.run(1)
        producer.join()
        out, _ = kid.communicate(timeout=60)
        assert kid.returncode == 0
        check_exactly_once(json.loads(out), 1, "timeout %r" % wait)


def test_dead_consumer_does_not_stall(name):
    """min_consumers gates the start only: one of three consumers killed
    mid-epoch does not stop the producer nor the others (issue 17 item 1)."""
    producer = aegis_feed.Producer(numpy_loader(), name=name,
                                   min_consumers=3, ahead=2)
    kids = [spawn(name, 32, 2), spawn(name, 64, 2),
            spawn(name, 32, 2, die_after=3)]
    producer.run(2)
    producer.close()
    for i, kid in enumerate(kids[:2]):
        out, _ = kid.communicate(timeout=60)
        assert kid.returncode == 0, i
        check_exactly_once(json.loads(out), 2, "survivor %d" % i)
    kids[2].communicate(timeout=60)
    assert kids[2].returncode == -signal.SIGKILL


def torch_loader(rows, batches):
    """Like numpy_loader, as torch tensors in batches of `rows`."""
    import torch
    ids = [torch.arange(rows) + i * rows for i in range(batches)]
    return [((i // ROWS).float().unsqueeze(1).repeat(1, 3), i) for i in ids]


def test_producer_batch_size_combines(name):
    """TensorProducer(producer_batch_size=4) publishes four 32-row loader
    batches as one, so a consumer can take 64 rows; one that asks for a
    size the producer cannot serve gets a clear error; len() says the
    batches of an epoch (issue 17 items 3 and 5)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch missing: producer_batch_size test skipped")
        return
    loader = torch_loader(32, ROWS * BATCHES // 32)
    producer = aegis_feed.TensorProducer(loader, port=7010,
                                         producer_batch_size=4, name=name)
    assert len(producer) == len(loader)
    kid = spawn(name, 64, 1, tensorsocket=True)
    for _ in producer:
        pass
    bad = spawn(name, 256, 1, tensorsocket=True, timeout=5)
    _, err = bad.communicate(timeout=60)
    assert bad.returncode != 0
    assert "batch size 256 is larger than the producer's batches of 128" \
        in err, err
    producer.join()
    out, _ = kid.communicate(timeout=60)
    assert kid.returncode == 0
    report = json.loads(out)
    check_exactly_once(report, 1, "combined")
    assert set(report["rows"]) == {64}, report["rows"]
    assert report["len"] == report["batches"][0] == ROWS * BATCHES // 64, \
        (report["len"], report["batches"])


def leaked(prefix):
    return [f for f in os.listdir("/dev/shm") if f.startswith(prefix)]


def raises(kind, want, call):
    """call() raises kind, saying want."""
    try:
        call()
    except kind as e:
        assert want in str(e), (want, str(e))
    else:
        raise AssertionError("no %s for %s" % (kind.__name__, want))


def test_failed_loader_is_an_error_for_consumers(name):
    """A loader that raises halfway ends the feed as failed: the consumer
    reads the batches published before, then gets a FeedError saying the
    producer failed, where the epoch used to end as if whole."""
    def loader():
        for i, batch in enumerate(numpy_loader()):
            if i == 3:
                raise RuntimeError("the loader failed")
            yield batch
    kid = spawn(name, 0, 1)
    producer = aegis_feed.Producer(loader(), name=name)
    raises(RuntimeError, "the loader failed", lambda: producer.run(1))
    out, err = kid.communicate(timeout=60)
    assert kid.returncode != 0 and out == "", (out, err)
    assert "FeedError" in err and "the producer failed (its loader raised " \
        "RuntimeError: the loader failed)" in err, err


def test_failed_pack_fn_is_named(name):
    """A TensorProducer's pack_fn that raises ends the feed as failed, and
    the consumers' error names pack_fn: it blamed the loader."""
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch missing: pack_fn test skipped")
        return
    from aegis_tensorsocket import pack
    packed = []

    def pack_fn(batch):
        if len(packed) == 2:
            raise ValueError("cannot pack this")
        packed.append(1)
        return pack(batch)
    kid = spawn(name, 0, 1, tensorsocket=True)
    producer = aegis_feed.TensorProducer(
        torch_loader(ROWS, BATCHES), port=7020, name=name, pack_fn=pack_fn,
        producer_batch_size=1, device="cpu")
    raises(ValueError, "cannot pack this", lambda: producer.run(1))
    out, err = kid.communicate(timeout=60)
    assert kid.returncode != 0 and out == "", (out, err)
    assert "the producer failed (pack_fn raised ValueError: cannot pack " \
        "this)" in err, err


def test_bad_keys_and_sizes_are_refused(name):
    """A dict key too long for the feed (it was cut to 31 bytes, so two
    keys could become one) or not a str (it came back as its str), a
    batch_size past 32 bits (it wrapped), a NaN timeout (it waited for
    ever) and a producer's combine that is no whole number or a NaN
    consumer_timeout are refused when given."""
    row = np.zeros(4, dtype=np.float32)
    raises(ValueError, "at most 31 bytes",
           lambda: aegis_feed.Producer([{"k" * 32: row}], name=name).run(1))
    raises(TypeError, "keys must be str",
           lambda: aegis_feed.Producer([{3: row}], name=name).run(1))
    for size in (2 ** 32, -1, 1.5):
        raises(ValueError, "batch_size",
               lambda: aegis_feed.Consumer(name=name, batch_size=size))
    raises(ValueError, "timeout",
           lambda: aegis_feed.Consumer(name=name, timeout=float("nan")))
    for combine in (0, 1.5):  # 1.5: no group ever filled, one batch
        raises(ValueError, "combine: %r" % combine,
               lambda: aegis_feed.Producer([row], name=name, combine=combine))
    raises(ValueError, "consumer_timeout",
           lambda: aegis_feed.Producer([row], name=name,
                                       consumer_timeout=float("nan")))


def test_consumer_keeping_batches_is_told(name):
    """A consumer that keeps every batch holds the producer back past
    `ahead` and then waited for ever for the next batch, the producer for
    it; it now gets a FeedError saying what it holds, and the producer
    goes on with the next consumer."""
    kid = spawn(name, 0, 1, keep=True)
    producer = aegis_feed.Producer(numpy_loader(), name=name, ahead=2)
    done = []
    thread = threading.Thread(target=lambda: done.append(producer.run(1)))
    thread.start()
    out, err = kid.communicate(timeout=60)
    assert kid.returncode != 0 and out == "", (out, err)
    assert "still holds batch 0" in err and "ahead" in err, err
    second = spawn(name, 0, 1)
    thread.join(60)
    producer.close()  # the second reads on to the feed's end
    out, err = second.communicate(timeout=60)
    assert done and second.returncode == 0, (done, err)


def test_unlike_batches_are_refused(name):
    """A dtype the feed cannot carry was a bare KeyError; a batch unlike
    the first was rebuilt by the consumers in the first one's shape, and
    combined loader batches of other keys lost or missed some."""
    odd = np.zeros(4, dtype=np.complex64)
    raises(TypeError, "cannot carry dtype complex64",
           lambda: aegis_feed.Producer([odd], name=name).run(1))
    row = np.zeros((2, 4), dtype=np.float32)
    raises(ValueError, "loader batches differ",
           lambda: aegis_feed.Producer([{"x": row}, {"y": row}], name=name,
                                       combine=2).run(1))
    kid = spawn(name, 0, 1)
    first, second = numpy_loader()[:2]
    raises(TypeError, "this batch is a dict of numpy tensors, the first was "
           "a sequence of numpy tensors",
           lambda: aegis_feed.Producer([first, dict(zip("x ids".split(),
                                                        second))],
                                       name=name).run(1))
    out, err = kid.communicate(timeout=60)
    assert kid.returncode != 0 and "the producer failed" in err, err


def main():
    if sys.argv[1:2] == ["consume"]:
        consume(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                json.loads(sys.argv[5]))
        return
    signal.alarm(100)  # a stall fails the test instead of hanging it
    prefix = "py%d" % os.getpid()
    for i, test in enumerate((test_numpy_mixed_batch_sizes, test_torch_aliases,
                              test_missing_feed_is_an_error,
                              test_consumer_before_producer_waits,
                              test_producer_times_out_without_consumers,
                              test_closed_producer_is_an_error,
                              test_endless_consumer_timeout,
                              test_dead_consumer_does_not_stall,
                              test_producer_batch_size_combines,
                              test_bad_keys_and_sizes_are_refused,
                              test_failed_loader_is_an_error_for_consumers,
                              test_failed_pack_fn_is_named,
                              test_consumer_keeping_batches_is_told,
                              test_unlike_batches_are_refused)):
        test("%s-%d" % (prefix, i))
        assert not leaked("aegis-feed-" + prefix), leaked("aegis-feed-" + prefix)
        print("ok", test.__name__)


if __name__ == "__main__":
    main()
