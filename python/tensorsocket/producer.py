"""tensorsocket.producer: TensorSocket's module path for TensorProducer."""
from aegis_feed import TensorProducer

__all__ = ["TensorProducer"]
