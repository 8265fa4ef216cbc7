"""Tests of the aegis_feed Python module, run by ctest with /usr/bin/python3
and PYTHONPATH naming the built extension. Exit 77 (skip) without numpy.

Consumers are separate interpreter processes (this file, run with
`consume NAME BATCH_SIZE EPOCHS`) that print what they saw as JSON; the
parent produces and checks: every sample id of every epoch exactly once,
views that are windows of one shared buffer (no copy), a clean /dev/shm."""
import json
import os
import subprocess
import sys

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


def consume(name, batch_size, epochs):
    """Child: report ids per epoch and whether views were zero-copy."""
    c = aegis_feed.Consumer(name=name, batch_size=batch_size)
    report = {"epochs": [], "contiguous_views": True, "readonly": True,
              "kind": None}
    for _ in range(epochs):
        ids_seen, prev = [], None
        for batch in c:
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
            if not np.all(np.asarray(x)[:, 0] == np.asarray(arr) // ROWS):
                report["corrupt"] = True
        report["epochs"].append(ids_seen)
    print(json.dumps(report))


def spawn(name, batch_size, epochs):
    return subprocess.Popen([sys.executable, __file__, "consume", name,
                             str(batch_size), str(epochs)],
                            stdout=subprocess.PIPE, text=True)


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
    try:
        aegis_feed.Consumer(name=name + "-absent", timeout=0.05)
    except aegis_feed.FeedError as e:
        assert "absent" in str(e)
    else:
        raise AssertionError("attached to a feed that does not exist")


def leaked(prefix):
    return [f for f in os.listdir("/dev/shm") if f.startswith(prefix)]


def main():
    if sys.argv[1:2] == ["consume"]:
        consume(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    prefix = "py%d" % os.getpid()
    for i, test in enumerate((test_numpy_mixed_batch_sizes, test_torch_aliases,
                              test_missing_feed_is_an_error)):
        test("%s-%d" % (prefix, i))
        assert not leaked("aegis-feed-" + prefix), leaked("aegis-feed-" + prefix)
        print("ok", test.__name__)


if __name__ == "__main__":
    main()
