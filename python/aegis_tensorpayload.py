"""aegis_tensorpayload -- TensorPayload, TensorSocket's wrapper of one
tensor, and pack/unpack, which wrap and unwrap the tensors of a batch.

On aegis a batch travels through the feed's shared memory (or a slot's
device buffer), not through pickles, so a TensorPayload is what pack_fn and
unpack_fn written for TensorSocket expect to hold: `.tensor` is the tensor.
It is still picklable (copied by plain pickle, shared through
torch.multiprocessing's pickler, by CUDA IPC for a CUDA tensor), and the
description that travels is made only when it is pickled."""

__all__ = ["TensorPayload", "pack", "unpack"]


def _is_tensor(obj):
    return type(obj).__module__.startswith("torch") and hasattr(obj, "detach")


class TensorPayload:
    """TensorPayload(tensor) wraps a tensor; TensorPayload(description), with
    the `payload` of another one, rebuilds it (in another process too)."""

    def __init__(self, tensor):
        if _is_tensor(tensor):
            self._tensor, self._payload = tensor, None
        elif isinstance(tensor, tuple) and len(tensor) == 2 and \
                callable(tensor[0]):
            rebuild, args = tensor
            self._tensor, self._payload = rebuild(*args), tensor
        else:
            raise TypeError("TensorPayload takes a torch tensor or another "
                            "payload's .payload, not %s" %
                            type(tensor).__name__)

    @property
    def payload(self):
        """(rebuild function, its arguments): torch's own way to send a
        tensor to another process."""
        if self._payload is None:
            from torch.multiprocessing.reductions import reduce_tensor
            self._payload = reduce_tensor(self._tensor)
        return self._payload

    @property
    def tensor(self):
        return self._tensor

    def __reduce__(self):
        return (TensorPayload, (self.payload,))

    def __repr__(self):
        t = self._tensor
        return "TensorPayload(%s %s on %s)" % (tuple(t.shape), t.dtype,
                                               t.device)


def _map(fn, data):
    """data with fn applied to each member: a tuple for a tuple or list,
    a dict for a dict, fn(data) for anything else."""
    if isinstance(data, dict):
        return {k: fn(v) for k, v in data.items()}
    if isinstance(data, (tuple, list)):
        return tuple(fn(t) for t in data)
    return fn(data)


def pack(data):
    """Each tensor of a batch (tuple, list, dict or one tensor) wrapped in a
    TensorPayload; anything else left as it is."""
    return _map(lambda t: TensorPayload(t) if _is_tensor(t) else t, data)


def unpack(data):
    """pack undone: each TensorPayload of a batch back to its tensor."""
    return _map(lambda t: t.tensor if isinstance(t, TensorPayload) else t,
                data)
