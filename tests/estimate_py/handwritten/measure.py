"""What a training step of a hand-written model really holds, measured on
the CPU without the extractor's code, for check_goal.py (issue 26's
definitions):

- activations: the bytes of the tensors autograd saves for backward in
  one training-mode forward pass at the training batch, each storage
  once, parameters, buffers, the input and autocast's copies of the
  weights left out, a dropout mask at one byte an element (a GPU's);
- the live peak: the most bytes of tensors alive at once over one forward
  and backward at the training batch (every tensor an operator makes,
  tracked by a dispatch mode until it dies), the lower bound of what the
  step needs beside its weights, optimizer state and CUDA context.
"""

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# aegis_zoo's measuring side, which shares no code with the extractor.
from aegis_zoo import call_with as call, saved_storages, tensors_of as tensors

MIB = 1024.0 * 1024.0
CUDA_CONTEXT_MIB = 512.0
# Optimizer state per parameter element, as the descriptions' "adam".
ADAM_STATES = 2


def batched(example, batch):
    """The one-sample example repeated to the training batch (every
    tensor's leading dimension of 1)."""
    if isinstance(example, torch.Tensor):
        return example.repeat((batch,) + (1,) * (example.dim() - 1))
    return tuple(batched(item, batch) for item in example)


def _ptr(tensor):
    return tensor.storage().data_ptr()


class _Casts(TorchDispatchMode):
    """Notes dropout's random masks and autocast's copies of weights, by
    storage address, each held until the pass ends: a mask freed at once
    (a non-reentrant checkpointed segment's) would leave its address to a
    later activation, then counted at a byte an element."""

    def __init__(self, weights):
        super().__init__()
        self.weights, self.masks, self.copies = weights, {}, {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if name in ("bernoulli_", "bernoulli"):
            self.masks.update((_ptr(t), t) for t in tensors(out))
        elif name == "_to_copy" and args and _ptr(args[0]) in self.weights:
            self.copies.update((_ptr(t), t) for t in tensors(out))
        return out


def activation_bytes(module, example):
    """Bytes autograd keeps after one training-mode forward pass of
    example (batch norm in eval mode, as the extractor describes it)."""
    state = {_ptr(t) for t in module.parameters()}
    state |= {_ptr(t) for t in module.buffers()}
    casts = _Casts(state)
    total = 0
    for storage in saved_storages(module, example, casts):
        ptr = storage.data_ptr()
        if ptr not in casts.copies:
            total += storage.size() if ptr in casts.masks else \
                storage.nbytes()
    return total


class _Live(TorchDispatchMode):
    """Tracks the bytes of every storage an operator makes until its last
    tensor dies, and the peak of their sum."""

    def __init__(self):
        super().__init__()
        self.refs = {}          # storage pointer -> [tensors alive, bytes]
        self.live = self.peak = 0

    def _gone(self, ptr):
        entry = self.refs[ptr]
        entry[0] -= 1
        if entry[0] == 0:
            self.live -= entry[1]
            del self.refs[ptr]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if _scalar_detach(func, args):
            return torch.tensor(args[0])
        out = func(*args, **(kwargs or {}))
        for tensor in tensors(out):
            # (a sparse gradient, nn.Embedding(sparse=True)'s, has no
            # storage of its own: its indices and values are counted as
            # the operators that make them return them)
            ptr = 0 if tensor.is_sparse else _ptr(tensor)
            if not ptr:
                continue
            if ptr not in self.refs:
                self.refs[ptr] = [0, tensor.storage().nbytes()]
                self.live += self.refs[ptr][1]
                self.peak = max(self.peak, self.live)
            self.refs[ptr][0] += 1
            weakref.finalize(tensor, self._gone, ptr)
        return out


def _scalar_detach(func, args):
    """Whether this is detach of a Python number: torch 1.13 hands a
    dispatch mode a saved wrapped scalar (x * 0.5's 0.5) as a float, and
    the non-reentrant checkpoint detaches every tensor its recomputation
    saves in backward, which then fails. A 0-d tensor of the same value
    serves backward as well, and holds no activation."""
    return func.overloadpacket.__name__ == "detach" and args and \
        not isinstance(args[0], torch.Tensor)


def live_peak_bytes(module, example):
    """The peak of live tensor bytes over one forward and backward."""
    module.zero_grad(set_to_none=True)
    tracker = _Live()
    with torch.enable_grad(), tracker:
        loss = call(module, example)
        loss.float().sum().backward()
        del loss
    module.zero_grad(set_to_none=True)
    return tracker.peak


def state_bytes(module):
    """(parameter bytes, buffer bytes), fp32 as the model is stored."""
    params = sum(p.numel() * p.element_size() for p in module.parameters())
    buffers = sum(b.numel() * b.element_size() for b in module.buffers())
    return params, buffers


def measured_parts_mib(module, activations):
    """Weights + gradients + Adam's state + buffers + activations + the
    CUDA context."""
    params, buffers = state_bytes(module)
    return ((2 + ADAM_STATES) * params + buffers + activations) / MIB + \
        CUDA_CONTEXT_MIB


def floor_mib(module, live_peak):
    """The live peak + weights + Adam's state + the CUDA context."""
    params, buffers = state_bytes(module)
    return ((1 + ADAM_STATES) * params + buffers + live_peak) / MIB + \
        CUDA_CONTEXT_MIB
