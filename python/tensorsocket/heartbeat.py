"""tensorsocket.heartbeat: TensorSocket's heartbeat classes, by name.

TensorSocket learns which consumers live from heartbeats over two more
sockets. aegis needs none: a consumer's record in the feed is freed when
its process ends, and the producer reads the records (producer.consumers).
These classes keep the names, arguments and attributes a script may touch;
they send and expect nothing."""
import threading


class HeartBeater:
    """The producer's side: hearts (consumer ids seen), consumers, and the
    progress and batch size each heart reported (none, on aegis)."""

    def __init__(self, loop=None, pingstream=None, pongstream=None,
                 period=500):
        self.loop, self.period = loop, period
        self.pingstream, self.pongstream = pingstream, pongstream
        self.hearts, self.responses = set(), set()
        self.heart_progress, self.heart_batch_size = {}, {}
        self.lifetime = 0

    def beat(self):
        """One round of TensorSocket's protocol: nothing to do here."""

    @property
    def consumers(self):
        return [str(h) for h in self.hearts]


class Heart(threading.Thread):
    """The consumer's side: a thread that, on aegis, ends at once."""

    def __init__(self, consumer=None, uuid="default", batch_size=0,
                 port_in="tcp://localhost:10112",
                 port_out="tcp://localhost:10113", *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.consumer, self.batch_size = consumer, batch_size
        self._uuid = uuid if isinstance(uuid, bytes) else str(uuid).encode()
        self._port_in, self._port_out = port_in, port_out

    def run(self):
        """Nothing to send: the feed sees a consumer's process end."""
