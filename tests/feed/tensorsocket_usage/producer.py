"""TensorSocket's documented producer, as a TensorSocket user writes it
(the import is TensorSocket's own). test_tensorsocket.py runs it as
`producer.py PORT ACK_PORT EPOCHS [RUBBER_BAND_PCT]` (default 1.0); it
prints len(producer) for the test."""
import json
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

from tensorsocket.producer import TensorProducer

port, ack_port, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3])
rubber_band_pct = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
ids = torch.arange(768)
data_loader = DataLoader(TensorDataset(ids.float(), ids), batch_size=32,
                         shuffle=True)

producer = TensorProducer(data_loader, port, ack_port, rubber_band_pct=rubber_band_pct,
                          producer_batch_size=4)
for _ in range(epochs):
    for _ in producer:
        pass
producer.join()
print(json.dumps({"len": len(producer), "loader_len": len(data_loader)}))
