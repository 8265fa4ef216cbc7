"""TensorSocket's documented producer/consumer usage (tensorsocket_usage/)
run unchanged against aegis's `tensorsocket` module: ctest runs it with
/usr/bin/python3 and PYTHONPATH naming build/python. Exit 77 (skip) without
torch.

The consumers start first and must wait for their producer; each must see
every sample of every epoch exactly once, in batches of the size it asked
for (larger than the loader's 32: the producer combines 4 loader batches),
and len() must be TensorSocket's: the loader's for the producer, the
batches of an epoch for a consumer. Nothing may be left in /dev/shm.

Then three consumers started first again, under TensorSocket's default
rubber band (0.005: a replay window of one published batch): each must
get epoch 0 whole from its first batch, as TensorSocket's heartbeat
registers every consumer waiting before its first batch (they started
with epoch 1 when the producer published as soon as the first attached)."""
import json
import os
import sys

try:
    import torch  # noqa: F401
except ImportError:
    sys.exit(77)

import tensorsocket
from ts_kids import await_waiting, run

SAMPLES, EPOCHS = 768, 2


def consumers_first(port, sizes, *producer_args):
    """Consumers of `sizes` started, then, once all wait, the producer;
    each consumer must see every sample of each epoch once."""
    consumers = [run("consumer.py", port, port + 1, EPOCHS, bs)
                 for bs in sizes]
    for kid in consumers:
        await_waiting(kid)
    producer = run("producer.py", port, port + 1, EPOCHS, *producer_args)
    out, err = producer.communicate(timeout=90)
    assert producer.returncode == 0, err
    lens = json.loads(out)
    assert lens["len"] == lens["loader_len"] == SAMPLES // 32, lens
    for bs, kid in zip(sizes, consumers):
        out, err = kid.communicate(timeout=90)
        assert kid.returncode == 0, err
        seen = json.loads(out)
        assert seen["len"] == SAMPLES // bs, (bs, seen["len"])
        assert seen["rows"] == [bs], (bs, seen["rows"])
        assert seen["intact"], bs
        assert len(seen["epochs"]) == EPOCHS, bs
        for epoch, ids in enumerate(seen["epochs"]):
            assert sorted(ids) == list(range(SAMPLES)), \
                (bs, epoch, len(ids), "samples")
    left = [f for f in os.listdir("/dev/shm")
            if f == "aegis-feed-tensorsocket-%d" % port or
            (f.startswith("aegis-feedw-") and
             f.endswith("-tensorsocket-%d" % port))]
    assert not left, left


def main():
    assert tensorsocket.AEGIS_COMPAT, "not aegis's tensorsocket module"
    assert tensorsocket.TensorProducer and tensorsocket.TensorConsumer
    port = 20000 + os.getpid() % 20000
    consumers_first(port, (64, 128))
    consumers_first(port + 2, (64, 64, 64), 0.005)
    print("tensorsocket usage: ok")


if __name__ == "__main__":
    main()
