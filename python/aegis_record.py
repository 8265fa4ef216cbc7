"""One recorded forward pass of a model, for aegis_describe.py.

What is recorded, in forward order:
  * the layers: every leaf module (and nn.MultiheadAttention, whose
    children's weights it uses without calling them), the container modules
    that own tensors directly, and the torch functions that a container's
    forward calls between its modules (torch.cat, +, F.linear, softmax...);
  * the parameters and buffers each layer uses: a tensor is claimed by the
    first layer or function that is handed it or owns it, so a weight passed
    to a function (Swin's ShiftedWindowAttention gives self.qkv.weight to
    F.linear, and its nn.Linear never runs) and a tied weight are counted
    once, where they are first used;
  * the tensors autograd keeps for backward, found with saved_tensors_hooks
    and counted once per storage: a tensor is attributed to the layer whose
    output it is, or, for a tensor made inside a layer (an in-place SiLU's
    copy of its input, attention scores and softmax, an LSTM's gates), to
    the layer that was running. What counts is what is still saved when
    forward ends (a branch whose output is dropped frees its saved tensors).
    Dropout's random mask is counted apart: CPU and meta keep it as a float
    tensor, a GPU as one byte per element. A layer whose class says
    fused_kernel = True stands for one fused GPU kernel (aegis_models'
    ScaledDotProduct, PyTorch's flash and memory-efficient attention):
    what its forward computes step by step is not kept; its inputs, its
    output and one float per output row (the log-sum-exp) are.
The pass runs in whatever train/eval state the caller set; it enables
autograd itself. The same code runs on meta tensors (shapes only) and on
CPU ones.
"""

import contextlib
import weakref

import torch
import torch.utils.checkpoint as checkpoint_module
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

# Functions recorded as layers whenever a container's forward calls them,
# whether or not autograd keeps their output: the ones that make a new
# tensor of activations (Inception's branch pools and concatenations,
# MobileNet's residual sums, a language model's logits from a tied
# weight, F.linear(h, self.embed.weight), whose weight is claimed already
# and whose output autograd does not keep, yet is the largest tensor and
# gradient of the step). Any other function called there is recorded only
# when it uses a parameter or makes a tensor that autograd keeps.
FUNCTIONAL_STEPS = frozenset([
    "cat", "concat", "stack", "add", "sub", "mul", "matmul", "bmm",
    "linear", "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "embedding", "embedding_bag",
    "einsum", "mm", "addmm", "baddbmm",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d",
    "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "relu", "relu6", "leaky_relu", "elu", "gelu", "silu", "mish",
    "sigmoid", "tanh", "hardswish", "hardsigmoid", "softmax",
    "log_softmax", "dropout", "interpolate", "layer_norm", "batch_norm",
])

# The entry that stands for activation checkpointing's recomputation: its
# "saved" is what the largest checkpointed segment keeps while backward
# runs it again (nothing of it is kept during forward).
CHECKPOINT_RECOMPUTE = "checkpoint_recompute"

# Dropout's random mask: CPU and meta tensors draw it with bernoulli_ into
# a float tensor, a GPU's fused kernel (native_dropout) keeps it as bytes.
_NOISE_OPS = ("bernoulli_", "bernoulli")

# Floating-point tensors are counted in elements (the job's precision sets
# their size); these dtypes are not activations and keep their own size.
_ACTIVATION_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


class MetaPassUnfaithful(RuntimeError):
    """The pass on meta tensors ran but cannot describe the job: what it
    says (str) is why, and the caller falls back to the CPU."""


def tensors_in(value):
    """Every tensor in a value: tensors, tuples, lists, dicts (Hugging Face
    outputs are dicts) and namedtuples, recursively."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors_in(item)


def storage_key(tensor):
    """What identifies a tensor's memory: views of one storage share it,
    on meta tensors too (their storage has no data pointer)."""
    try:
        return tensor.storage()._cdata
    except (RuntimeError, NotImplementedError, TypeError):
        return ("tensor", id(tensor))


def layer_modules(module):
    """The modules that become layers: leaves, plus nn.MultiheadAttention
    (whose descendants are then skipped); and the ids of those skipped."""
    skip = set()
    layers = []
    for mod in module.modules():
        if id(mod) in skip:
            continue
        if isinstance(mod, torch.nn.MultiheadAttention):
            skip.update(id(sub) for sub in mod.modules() if sub is not mod)
            layers.append(mod)
        elif not list(mod.children()):
            layers.append(mod)
    return layers, skip


def _containers_with_own_tensors(module, layers, skip):
    """Non-leaf modules that own parameters or buffers directly (a class
    token, a relative-position bias table): they get an entry of their own
    when entered."""
    layer_ids = {id(m) for m in layers}
    return [mod for mod in module.modules()
            if id(mod) not in layer_ids and id(mod) not in skip and
            (any(p is not None for p in mod._parameters.values()) or
             any(b is not None for b in mod._buffers.values()))]


class _Saved:
    """What the pack hook hands autograd: while autograd holds it, the
    tensor is saved. A weak reference to it tells, at the end of forward,
    whether the graph that saved the tensor is still alive. It holds the
    tensor detached: a saved output holding its own grad_fn would make a
    cycle through the graph that nothing frees."""
    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor):
        # (Only a tensor with a grad_fn can close the cycle; detaching a
        # scalar autograd wrapped would fail under a dispatch mode.)
        self.tensor = tensor if tensor.grad_fn is None else tensor.detach()


def _reference(tensor):
    """A reference to a layer's output for attributing it later: strong on
    meta (it costs nothing, and keeps the storage address from being
    reused), weak on CPU, where holding every output of a big model would
    cost gigabytes."""
    if tensor.is_meta:
        return lambda: tensor
    return weakref.ref(tensor)


def _entry(kind):
    return {"type": kind, "activations": 0, "params": 0, "buffers": 0,
            "saved": 0, "saved_bytes": 0, "masks": 0}


class Recorder:
    """Collects the entries as hooks and the function mode report them."""

    def __init__(self, module, inputs):
        self.entries = []
        self.depth = 0                  # leaf layers running now
        self.running = []               # entries running, innermost last
        self._always = set()            # ids of entries kept even if empty
        self._claimed = set()
        self._names = {}                # id(tensor) -> (name, trainable)
        for name, param in module.named_parameters():
            self._names.setdefault(id(param), (name, param.requires_grad))
        for name, buf in module.named_buffers():
            self._names.setdefault(id(buf), (name, False))
        self._state_keys = {storage_key(t) for t in module.parameters()}
        self._state_keys |= {storage_key(t) for t in module.buffers()}
        self._input_keys = {storage_key(t) for t in tensors_in(inputs)}
        self._made_by = {}              # storage key -> (entry, reference)
        # (weakref to _Saved, key, entry, saved under autocast)
        self._saves = []
        self._kept = []                 # _Saved of fused kernels' tensors
        self._fused = set()             # ids of fused kernels' entries
        # Storage keys of dropout's random masks and of autocast's copies
        # of the weights, each with its tensor, held until the pass ends:
        # the key of a freed mask (a checkpointed segment's) would be
        # reused by a later activation, on meta too. (A weak reference
        # would not do: autograd keeps a saved tensor's storage through
        # another tensor object than the one the operator made.)
        self.noise = {}
        self.weight_copies = {}
        self.paused = 0                 # > 0 while a segment is re-run
        self.checkpoints = 0            # checkpointed segments run
        # Whether an operator made a meta tensor under the CPU's autocast,
        # which casts CPU tensors only: a forward that names its device
        # (torch.autocast("cpu")) runs in float32 on meta, where the CPU
        # pass has autocast's real dtypes. (Noted, not raised: an error
        # inside an operator reaches the caller as torch's RuntimeError.)
        self.meta_autocast = False
        # (CPU's, CUDA's) autocast flags as the torch function running now
        # was called: inside its autocast kernel, where it saves, autocast
        # reads as off. None outside any function.
        self.autocast_at_call = None
        self.recompute = 0              # the largest one's saved elements

    # -- parameters -------------------------------------------------------

    def _claim(self, entry, tensors):
        for tensor in tensors:
            if tensor is None or id(tensor) in self._claimed or \
               id(tensor) not in self._names:
                continue
            self._claimed.add(id(tensor))
            field = "params" if self._names[id(tensor)][1] else "buffers"
            entry[field] += tensor.numel()

    def unclaimed(self):
        """(trainable names, their elements, other elements) of the
        module's tensors that no layer or function used."""
        seen, names, params, buffers = set(), [], 0, 0
        for module_tensor_id, (name, trainable) in self._names.items():
            if module_tensor_id in self._claimed or module_tensor_id in seen:
                continue
            seen.add(module_tensor_id)
            numel = self._numel[module_tensor_id]
            if trainable:
                names.append(name)
                params += numel
            else:
                buffers += numel
        return names, params, buffers

    # -- outputs ----------------------------------------------------------

    def _made(self, entry, inputs, output):
        """Registers the new tensors of output as entry's; returns their
        elements (an output that shares an input's storage adds none)."""
        given = {storage_key(t) for t in tensors_in(inputs)}
        elements = 0
        for tensor in tensors_in(output):
            key = storage_key(tensor)
            if key in given:
                continue
            elements += tensor.numel()
            if key not in self._made_by or self._producer(key) is None:
                self._made_by[key] = (entry, _reference(tensor))
        return elements

    def _producer(self, key):
        """The entry that made the storage key, while its tensor lives (a
        dead one's storage address may be reused by another)."""
        made = self._made_by.get(key)
        return made[0] if made and made[1]() is not None else None

    # -- hooks ------------------------------------------------------------

    def enter_layer(self, mod, _inputs):
        if self.paused:
            return
        self.depth += 1
        entry = _entry(type(mod).__name__)
        if getattr(mod, "fused_kernel", False):
            self._fused.add(id(entry))
        self.running.append(entry)

    def leave_layer(self, mod, inputs, output):
        if self.paused:
            return
        self.depth -= 1
        entry = self.running.pop()
        self._claim(entry, mod.parameters())
        self._claim(entry, mod.buffers())
        entry["activations"] = self._made(entry, inputs, output)
        if id(entry) in self._fused:
            self._keep_fused(entry, inputs, output)
        self._always.add(id(entry))
        self.entries.append(entry)

    def enter_container(self, mod, _inputs):
        # Only the container's own tensors: its children report themselves.
        if self.paused:
            return
        entry = _entry(type(mod).__name__)
        self._claim(entry, mod.parameters(recurse=False))
        self._claim(entry, mod.buffers(recurse=False))
        self.entries.append(entry)

    def enter_function(self, name, args, kwargs):
        """A torch function is about to run; returns the entry pushed for
        it, if any (pop it, then pass it to leave_function)."""
        if self.paused:
            return None
        if self.depth:
            # Inside a layer: its work. Claim what it is handed (a layer
            # may use a weight it does not own).
            self._claim(self.running[-1], tensors_in((args, kwargs)))
            return None
        entry = _entry(name)
        self.entries.append(entry)
        if name in FUNCTIONAL_STEPS:
            self._always.add(id(entry))
        self._claim(entry, tensors_in((args, kwargs)))
        self.running.append(entry)
        return entry

    def leave_function(self, entry, args, kwargs, output):
        """The function of entry (popped already) returned output."""
        entry["activations"] += self._made(entry, (args, kwargs), output)

    def _keep_fused(self, entry, inputs, output):
        """What a fused kernel keeps: its inputs and output, whatever
        autograd saw its step-by-step forward save."""
        for tensor in list(tensors_in(inputs)) + list(tensors_in(output)):
            if not tensor.is_floating_point():
                continue
            holder = _Saved(tensor)
            self._kept.append(holder)
            key = storage_key(tensor)
            self._saves.append((weakref.ref(holder), key,
                                self._producer(key) or entry, False))
        for tensor in tensors_in(output):
            entry["saved"] += tensor.numel() // max(tensor.shape[-1], 1)

    def pack(self, tensor):
        """saved_tensors_hooks' pack: note who saved what (nothing of what
        a fused kernel saves inside)."""
        if self.paused or (self.running and
                           id(self.running[-1]) in self._fused):
            return _Saved(tensor)
        key = storage_key(tensor)
        entry = self._producer(key) or (self.running[-1] if self.running
                                        else None)
        holder = _Saved(tensor)
        autocast = _autocast_on(tensor, self.autocast_at_call)
        self._saves.append((weakref.ref(holder), key, entry, autocast))
        return holder

    # -- tensors made by ATen operators -----------------------------------

    def note_op(self, op_name, args, output):
        """Notes a dropout mask (bernoulli's output) or an autocast copy of
        a weight (_to_copy of a parameter's storage)."""
        if self.paused:
            return
        if torch.is_autocast_cpu_enabled() and \
                any(t.is_meta for t in tensors_in(output)):
            self.meta_autocast = True
        if op_name in _NOISE_OPS:
            notes = self.noise
        elif op_name == "_to_copy" and args and \
                isinstance(args[0], torch.Tensor) and \
                storage_key(args[0]) in self._state_keys:
            notes = self.weight_copies
        else:
            return
        for tensor in tensors_in(output):
            notes[storage_key(tensor)] = tensor

    # -- activation checkpointing -----------------------------------------

    def checkpointed(self, function, args, kwargs):
        """A checkpointed segment is about to run: its tensors are not
        kept, but backward runs it again and holds what it keeps while
        its gradients are computed. That is measured here, by running the
        segment once more with autograd on and this recorder paused; the
        largest segment's is what the description adds."""
        held = []

        def pack(tensor):
            holder = _Saved(tensor)
            held.append(weakref.ref(holder))
            return holder
        given = [a.detach().requires_grad_(a.is_floating_point())
                 if isinstance(a, torch.Tensor) else a for a in args]
        skip = set(self._state_keys) | {storage_key(t) for t in
                                         tensors_in(given)}
        self.paused += 1
        try:
            with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(
                    pack, lambda holder: holder.tensor):
                output = function(*given, **kwargs)
            elements = _saved_elements(held, skip)
            del output
        finally:
            self.paused -= 1
        self.checkpoints += 1
        self.recompute = max(self.recompute, elements)

    # -- the result -------------------------------------------------------

    def finish(self, module):
        """The layer entries, once forward has returned (call it while its
        output is still referenced: that keeps the graph alive)."""
        self._numel = {}
        for tensor in list(module.parameters()) + list(module.buffers()):
            self._numel[id(tensor)] = tensor.numel()
        counted = set(self._state_keys) | self._input_keys
        stray = None
        for ref, key, entry, autocast in self._saves:
            holder = ref()
            if holder is None or key in counted or \
                    key in self.weight_copies:
                # (An autocast copy of a weight is made once a step, not per
                # sample: the estimate counts it with the weights.)
                continue
            counted.add(key)
            tensor = holder.tensor
            size = tensor.storage().size()
            if entry is None:
                if stray is None:
                    stray = _entry("unattributed")
                    self.entries.append(stray)
                entry = stray
            if key in self.noise:
                entry["masks"] += size
            elif tensor.dtype in _ACTIVATION_DTYPES and not (
                    autocast and tensor.dtype == torch.float32):
                entry["saved"] += size
            else:
                entry["saved_bytes"] += size * tensor.element_size()
            self._always.add(id(entry))
        if self.checkpoints:
            entry = _entry(CHECKPOINT_RECOMPUTE)
            entry["saved"] = self.recompute
            self.entries.append(entry)
            self._always.add(id(entry))
        return [_tidy(e) for e in self.entries
                if id(e) in self._always or e["params"] or e["buffers"]]


def _autocast_flags():
    """(CPU's, CUDA's) autocast on, as torch reads it now."""
    return torch.is_autocast_cpu_enabled(), torch.is_autocast_enabled()


def _autocast_on(tensor, at_call=None):
    """Whether torch.autocast runs for tensor's device, now or (at_call,
    the flags as the running function was called) around the kernel that
    saves it: a float32 tensor saved under it is one autocast keeps in
    float32 (norms, log_softmax), 4 bytes whatever the job's precision, so
    it is counted in saved_bytes. Autocast casts the tensors of its own
    device only: under CUDA's, a CPU or meta tensor is float32 merely
    because nothing cast it, and is counted at the job's precision as
    without autocast."""
    now = _autocast_flags()
    flags = [a or b for a, b in zip(now, at_call or now)]
    if tensor.device.type == "cpu":
        return flags[0]
    if tensor.device.type == "cuda":
        return flags[1]
    return False


def _saved_elements(held, skip):
    """Elements of the storages still saved among held (weak references
    to _Saved), each once, those of skip left out."""
    seen, elements = set(skip), 0
    for ref in held:
        holder = ref()
        if holder is None:
            continue
        key = storage_key(holder.tensor)
        if key not in seen:
            seen.add(key)
            elements += holder.tensor.storage().size()
    return elements


def _tidy(entry):
    """The entry as the description writes it: zero buffers, saved_bytes
    and masks left out."""
    out = {"type": entry["type"], "activations": entry["activations"],
           "params": entry["params"]}
    if entry["buffers"]:
        out["buffers"] = entry["buffers"]
    out["saved"] = entry["saved"]
    for key in ("saved_bytes", "masks"):
        if entry[key]:
            out[key] = entry[key]
    return out


class _FunctionMode(TorchFunctionMode):
    """Reports each torch function a forward calls to the recorder; torch
    runs the call itself with the mode off, so calls inside it are not
    seen."""

    def __init__(self, recorder):
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        entry = self.recorder.enter_function(getattr(func, "__name__", ""),
                                             args, kwargs)
        self.recorder.autocast_at_call = _autocast_flags()
        try:
            output = func(*args, **kwargs)
        finally:
            self.recorder.autocast_at_call = None
            if entry is not None:
                self.recorder.running.pop()
        if entry is not None:
            self.recorder.leave_function(entry, args, kwargs, output)
        return output


class _OpMode(TorchDispatchMode):
    """Reports every ATen operator's output to the recorder (note_op), at
    the level where a dropout deep inside another function
    (nn.MultiheadAttention's) and autocast's casts show too."""

    def __init__(self, recorder):
        super().__init__()
        self.recorder = recorder

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        output = func(*args, **(kwargs or {}))
        self.recorder.note_op(func.overloadpacket.__name__, args, output)
        return output


@contextlib.contextmanager
def _checkpoints_seen(recorder):
    """torch.utils.checkpoint's two paths (reentrant: CheckpointFunction;
    not: _checkpoint_without_reentrant) report each segment to the
    recorder before running it as they would."""
    plain_forward = checkpoint_module.CheckpointFunction.forward
    plain_function = checkpoint_module._checkpoint_without_reentrant

    def forward(ctx, run_function, preserve_rng_state, *args):
        recorder.checkpointed(run_function, args, {})
        return plain_forward(ctx, run_function, preserve_rng_state, *args)

    def without_reentrant(function, preserve_rng_state=True, *args,
                          **kwargs):
        recorder.checkpointed(function, args, kwargs)
        return plain_function(function, preserve_rng_state, *args, **kwargs)

    checkpoint_module.CheckpointFunction.forward = staticmethod(forward)
    checkpoint_module._checkpoint_without_reentrant = without_reentrant
    try:
        yield
    finally:
        checkpoint_module.CheckpointFunction.forward = \
            staticmethod(plain_forward)
        checkpoint_module._checkpoint_without_reentrant = plain_function


def call(module, example_input):
    """module(...) with the example as a tensor, positional arguments (a
    tuple) or keyword arguments (a dict)."""
    if isinstance(example_input, dict):
        return module(**example_input)
    if isinstance(example_input, tuple):
        return module(*example_input)
    return module(example_input)


def record(module, example_input):
    """One forward pass with autograd on: (the layer entries, the names of
    trainable tensors no layer used, their elements, the other unused
    elements). The module's hooks are removed again, whatever happens."""
    layers, skip = layer_modules(module)
    recorder = Recorder(module, example_input)
    handles = [m.register_forward_pre_hook(recorder.enter_layer)
               for m in layers]
    handles += [m.register_forward_hook(recorder.leave_layer) for m in layers]
    handles += [m.register_forward_pre_hook(recorder.enter_container)
                for m in _containers_with_own_tensors(module, layers, skip)]
    try:
        with torch.enable_grad(), \
                torch.autograd.graph.saved_tensors_hooks(
                    recorder.pack, lambda holder: holder.tensor), \
                _FunctionMode(recorder), _OpMode(recorder), \
                _checkpoints_seen(recorder):
            output = call(module, example_input)
        if recorder.meta_autocast:
            raise MetaPassUnfaithful(
                "the forward runs under torch.autocast, which casts no "
                "meta tensor: the meta pass would describe float32 where "
                "autocast makes bfloat16 or float16")
        entries = recorder.finish(module)
        del output
    finally:
        for handle in handles:
            handle.remove()
    return (entries,) + recorder.unclaimed()
