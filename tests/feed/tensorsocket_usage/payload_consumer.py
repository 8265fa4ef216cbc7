"""A consumer as TensorSocket's simple_consumer.py writes one, with an
unpack_fn written for TensorSocket (it takes TensorPayloads apart).
test_tensorsocket_api.py runs it as `payload_consumer.py PORT EPOCHS
BATCH_SIZE`; it prints, as JSON, what it saw and the attributes it read."""
import json
import sys
import uuid

from tensorsocket.consumer import TensorConsumer, unpack
from tensorsocket.payload import TensorPayload

port, epochs, batch_size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
given = set()


def checked_unpack(data):
    given.update(type(t).__name__ for t in data)
    assert all(isinstance(t, TensorPayload) for t in data), data
    return unpack(data)


consumer = TensorConsumer(port, int(port) + 1, unpack_fn=checked_unpack,
                          batch_size=batch_size)
seen = {"epochs": [], "counts_ok": True, "doubled": True, "rows": set(),
        "devices": set(), "epoch_attr": [], "len": len(consumer),
        "consumer_id": str(consumer.consumer_id),
        "is_uuid": isinstance(consumer.consumer_id, uuid.UUID),
        "data_loader_len": consumer.data_loader_len,
        "loader_batch_size": consumer.loader_batch_size,
        "max_buffer_size": consumer.max_buffer_size,
        "batch_size": consumer.batch_size}
for epoch in range(epochs):
    ids = []
    for i, batch in enumerate(consumer):
        (inputs, labels) = batch
        seen["counts_ok"] &= (consumer.batch_count, consumer.batch_max) == \
            (i + 1, i)
        seen["doubled"] &= bool((inputs == 2 * labels.float()).all())
        seen["rows"].add(len(labels))
        seen["devices"].add(labels.device.type)
        ids.extend(labels.tolist())
    seen["epochs"].append(ids)
    seen["epoch_attr"].append(consumer.epoch)
seen["given"] = sorted(given)
seen["batch_count_after"] = consumer.batch_count
for k in ("rows", "devices"):
    seen[k] = sorted(seen[k])
print(json.dumps(seen))
