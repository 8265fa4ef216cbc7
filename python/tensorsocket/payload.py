"""tensorsocket.payload: TensorSocket's module path for TensorPayload."""
from aegis_tensorpayload import TensorPayload

__all__ = ["TensorPayload"]
