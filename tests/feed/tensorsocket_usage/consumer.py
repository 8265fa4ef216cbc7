"""TensorSocket's documented consumer, as a TensorSocket user writes it
(the import is TensorSocket's own). test_tensorsocket.py runs it as
`consumer.py PORT ACK_PORT EPOCHS BATCH_SIZE`; it prints what it saw."""
import json
import sys

from tensorsocket.consumer import TensorConsumer

port, ack_port, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3])
data_loader = TensorConsumer(port, ack_port, batch_size=int(sys.argv[4]))

seen = {"len": len(data_loader), "epochs": [], "rows": set(), "intact": True}
for epoch in range(epochs):
    ids = []
    for batch_idx, (input, target) in enumerate(data_loader):
        ids.extend(target.tolist())
        seen["rows"].add(len(target))
        seen["intact"] &= bool((input == target.float()).all())
    seen["epochs"].append(ids)
seen["rows"] = sorted(seen["rows"])
print(json.dumps(seen))
