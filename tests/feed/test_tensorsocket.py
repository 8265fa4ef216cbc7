"""TensorSocket's documented producer/consumer usage (tensorsocket_usage/)
run unchanged against aegis's `tensorsocket` module: ctest runs it with
/usr/bin/python3 and PYTHONPATH naming build/python. Exit 77 (skip) without
torch.

The consumers start first and must wait for their producer; each must see
every sample of every epoch exactly once, in batches of the size it asked
for (larger than the loader's 32: the producer combines 4 loader batches),
and len() must be TensorSocket's: the loader's for the producer, the
batches of an epoch for a consumer. Nothing may be left in /dev/shm."""
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


def main():
    assert tensorsocket.AEGIS_COMPAT, "not aegis's tensorsocket module"
    assert tensorsocket.TensorProducer and tensorsocket.TensorConsumer
    port = 20000 + os.getpid() % 20000
    sizes = (64, 128)
    consumers = [run("consumer.py", port, port + 1, EPOCHS, bs)
                 for bs in sizes]
    for kid in consumers:
        await_waiting(kid)
    producer = run("producer.py", port, port + 1, EPOCHS)
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
        for ids in seen["epochs"]:
            assert sorted(ids) == list(range(SAMPLES)), bs
    left = [f for f in os.listdir("/dev/shm")
            if f == "aegis-feed-tensorsocket-%d" % port]
    assert not left, left
    print("tensorsocket usage: ok")


if __name__ == "__main__":
    main()
