"""tensorsocket -- TensorSocket's names over the aegis feed.

aegis installs this package only where TensorSocket itself is absent, so
that scripts written for TensorSocket (`from tensorsocket import
TensorProducer`, `from tensorsocket.consumer import TensorConsumer`) run
unchanged on a shared-memory aegis feed. Where TensorSocket is installed
(pip puts it in /usr/local, a virtual environment or the user's site, all
ahead of /usr/lib/python3/dist-packages on sys.path) that one is imported
instead. AEGIS_COMPAT tells the two apart.

What differs from TensorSocket: the ports only name the feed (one machine,
no sockets); batches stay on the device the loader made them on; pack_fn
has no effect, and an unpack_fn gets each batch as tensors. See
aegis_feed for the rest.
"""
from aegis_feed import TensorConsumer, TensorProducer

AEGIS_COMPAT = True

__all__ = ["TensorProducer", "TensorConsumer", "AEGIS_COMPAT"]
