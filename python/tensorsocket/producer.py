"""tensorsocket.producer: TensorSocket's module path for TensorProducer and
its helpers (pack, data_to_cuda, slice, collate)."""
from aegis_tensorsocket import (TensorPayload, TensorProducer, collate,
                                data_to_cuda, pack, slice)

__all__ = ["TensorProducer", "TensorPayload", "pack", "data_to_cuda",
           "slice", "collate"]
