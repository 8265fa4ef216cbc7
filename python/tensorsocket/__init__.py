"""tensorsocket -- TensorSocket's names over the aegis feed.

aegis installs this package only where TensorSocket itself is absent, so
that scripts written for TensorSocket run unchanged on a shared-memory
aegis feed: `from tensorsocket import TensorProducer, TensorConsumer,
TensorPayload`, the modules tensorsocket.producer, .consumer, .payload and
.heartbeat, and __version__ (the TensorSocket release whose API this
follows). Where TensorSocket is installed (pip puts it in /usr/local, a
virtual environment or the user's site, all ahead of
/usr/lib/python3/dist-packages on sys.path) that one is imported instead.
AEGIS_COMPAT tells the two apart. aegis_tensorsocket says what differs.
"""
from aegis_tensorsocket import TensorConsumer, TensorPayload, TensorProducer

__version__ = "0.0.4"
AEGIS_COMPAT = True

__all__ = ["TensorProducer", "TensorConsumer", "TensorPayload",
           "AEGIS_COMPAT"]
