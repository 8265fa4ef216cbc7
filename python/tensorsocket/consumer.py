"""tensorsocket.consumer: TensorSocket's module path for TensorConsumer."""
from aegis_feed import TensorConsumer

__all__ = ["TensorConsumer"]
