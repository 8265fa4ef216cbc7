"""tensorsocket.consumer: TensorSocket's module path for TensorConsumer and
unpack."""
from aegis_tensorsocket import TensorConsumer, TensorPayload, unpack

__all__ = ["TensorConsumer", "TensorPayload", "unpack"]
