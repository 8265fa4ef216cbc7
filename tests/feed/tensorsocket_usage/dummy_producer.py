"""A producer as TensorSocket's simple_producer.py writes one: a loader
that never raises StopIteration (its epoch is its len()), with a pack_fn
that changes each batch before packing it. test_tensorsocket_api.py runs
it as `dummy_producer.py PORT EPOCHS CONSUMERS`; it prints, as JSON, the
producer attributes it read on the way."""
import json
import sys
import time

import torch

from tensorsocket.producer import TensorProducer, pack

port, epochs, consumers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
LOADER_LEN, LOADER_BATCH, COMBINE = 12, 8, 4


class DummyLoader:
    """len() batches of sample ids, counting on for ever if asked."""

    def __init__(self, length, on_batch):
        self.length, self.id, self.batch_size = length, 0, LOADER_BATCH
        self.on_batch = on_batch

    def __len__(self):
        return self.length

    def __iter__(self):
        self.id = 0
        return self

    def __next__(self):
        self.on_batch(self.id)
        ids = torch.arange(self.batch_size) + self.id * self.batch_size
        self.id += 1
        return ids.float(), ids


def await_consumers(index):
    """Once the feed is up (after the first published batch), wait for
    every consumer to attach, so each sees both epochs whole."""
    if index != COMBINE or producer.epoch:
        return
    deadline = time.monotonic() + 60
    while len(producer.consumers) < consumers:
        assert time.monotonic() < deadline, producer.consumers
        time.sleep(0.01)


def double_then_pack(data):
    inputs, labels = data
    return pack((inputs * 2, labels))


data_loader = DummyLoader(LOADER_LEN, await_consumers)
producer = TensorProducer(data_loader, port, int(port) + 1,
                          rubber_band_pct=1.0, pack_fn=double_then_pack,
                          producer_batch_size=COMBINE)
seen = {"indices": [], "epochs": [], "consumer_ids": set(), "rb_len": 0}
for epoch in range(epochs):
    for i, _ in enumerate(producer):
        seen["indices"].append(producer.index)
        seen["consumer_ids"] |= set(producer.consumers)
        seen["rb_len"] = max(seen["rb_len"], len(producer.rb_buffer))
    seen["epochs"].append(producer.epoch)
seen["consumer_ids"] = sorted(seen["consumer_ids"])
seen.update(
    len=len(producer), port=producer.port, ack_port=producer.ack_port,
    heart_ports=list(producer.heart_ports),
    data_loader=producer.data_loader is data_loader,
    data_loader_len=producer.data_loader_len,
    pack_fn=producer.pack_fn is double_then_pack,
    producer_batch_size=producer.producer_batch_size,
    loader_batch_size=producer.loader_batch_size,
    consumer_max_buffer_size=producer.consumer_max_buffer_size,
    rb_max_len=producer.rb_max_len, loader_id=data_loader.id)
producer.join()
print(json.dumps(seen))
