"""len() of a TensorSocket consumer over a loader that is not a torch
DataLoader (a class with __len__ and batch_size, as users write): it must
be the batches the consumer gets in each epoch, for every batch size (one
that does not divide the producer's batches too), and len() must still
answer after the producer's join() ended the feed. A batch size larger
than the producer's batches is refused, saying so. The
consumers start first (they wait for the producer) and each must see
every sample of each epoch once. ctest runs it with /usr/bin/python3 and
PYTHONPATH naming build/python; exit 77 (skip) without torch.

Run as `test_tensorsocket_len.py consumer PORT BATCH_SIZE` it is one of
the consumers, printing what it saw as JSON."""
import json
import os
import subprocess
import sys

try:
    import torch
except ImportError:
    sys.exit(77)

from ts_kids import await_waiting

SAMPLES, LOADER_BATCH, COMBINE, EPOCHS = 1000, 8, 8, 2
# 24 and 48 do not divide the published batches of 64 rows: each is cut
# into pieces of that size and one shorter piece of the rest.
SIZES = (8, 16, 4, 24, 48)


class Loader:
    """SAMPLES ids in batches of LOADER_BATCH: a len() and a batch_size,
    no sampler (so the producer cannot ask how many samples it has)."""
    batch_size = LOADER_BATCH

    def __len__(self):
        return (SAMPLES + LOADER_BATCH - 1) // LOADER_BATCH

    def __iter__(self):
        for i in range(0, SAMPLES, LOADER_BATCH):
            ids = torch.arange(i, min(SAMPLES, i + LOADER_BATCH))
            yield ids.float(), ids


def one_epoch(c):
    """What a consumer got in one epoch; no batch outlives the call, so
    nothing holds the feed once the loop ends."""
    ids, batches = [], 0
    for _, y in c:
        ids += y.tolist()
        batches += 1
    return {"batches": batches, "whole": sorted(ids) == list(range(SAMPLES))}


def consumer(port, bs):
    from tensorsocket.consumer import TensorConsumer
    c = TensorConsumer(port, port + 1, batch_size=bs)
    seen = {"len": len(c), "epochs": [one_epoch(c) for _ in range(EPOCHS)]}
    for _ in c:  # the end of the feed (the producer joined): c detaches
        pass
    try:
        seen["len_after_join"] = len(c)
    except Exception as e:  # noqa: BLE001 -- what it raised is the report
        seen["len_after_join"] = "%s: %s" % (type(e).__name__, e)
    print(json.dumps(seen))


def main():
    from tensorsocket.producer import TensorProducer
    port = 20000 + os.getpid() % 20000
    kids = [subprocess.Popen([sys.executable, os.path.abspath(__file__),
                              "consumer", str(port), str(bs)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for bs in SIZES]
    big = subprocess.Popen([sys.executable, os.path.abspath(__file__),
                            "consumer", str(port), "128"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    kids.append(big)
    try:
        for kid in kids:
            await_waiting(kid)
        producer = TensorProducer(Loader(), port, port + 1,
                                  producer_batch_size=COMBINE, device="cpu")
        for _ in range(EPOCHS):
            for _ in producer:
                pass
        producer.join()
        _, err = big.communicate(timeout=90)
        assert big.returncode != 0 and "batch size 128 is larger than the " \
            "producer's batches of 64 rows" in err, err
        for bs, kid in zip(SIZES, kids):
            out, err = kid.communicate(timeout=90)
            assert kid.returncode == 0, (bs, err)
            seen = json.loads(out)
            for epoch in seen["epochs"]:
                assert epoch["whole"], (bs, seen)
                assert epoch["batches"] == seen["len"], (bs, seen)
            assert seen["len_after_join"] == seen["len"], (bs, seen)
    finally:
        for kid in kids:
            if kid.poll() is None:
                kid.kill()
                kid.wait()
    print("tensorsocket len: ok")


if __name__ == "__main__":
    if sys.argv[1:2] == ["consumer"]:
        consumer(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
