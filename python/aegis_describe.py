#!/usr/bin/python3
"""Describe a PyTorch model for aegis's memory estimator (the aegis-model/1 JSON).

One training-mode forward pass (aegis_record.py) records, per layer and in
forward order, the elements of the layer's output for ONE sample, the
parameter elements it uses and what autograd keeps of it for backward; a
torch function mode adds the functional steps (torch.cat, +, pools, a
weight handed to F.linear) that containers run between their modules. The
pass runs on the meta device when the model allows it: meta tensors carry
shapes but no storage, so even GPT-2 XL is described in well under a second
and without gigabytes of RAM (a module with real weights is copied
structurally, its weights replaced by meta tensors, never copied). Models
whose forward needs real values fall back to a CPU pass (one or two
samples) on the module itself, said out loud, and run twice to see whether
the description depends on the input's values (labels and masks included).

The figures are per sample: the estimator multiplies by the job's batch
size itself. For a job of two samples or more the pass runs on two and
halves them, because a batch of one takes views where a larger batch
copies, and tensors of the whole step are then not counted once a sample.

Importable (describe, describe_builder, to_json) and a command line tool; run
it with --help for the manual.
"""

import argparse
import contextlib
import copy
import json
import os
import signal
import sys

import aegis_checks

FORMAT = "aegis-model/1"
OPTIMIZERS = ("sgd", "sgd_momentum", "adam", "adamw", "rmsprop", "adagrad")
PRECISIONS = ("fp32", "amp_fp16", "amp_bf16", "fp16", "bf16")
DEVICES = ("auto", "meta", "cpu")

# Exit status for bad usage or bad input, as the other aegis commands use.
EXIT_BAD_INPUT = 2

# Largest model (parameter elements) rebuilt on CPU when its meta pass fails:
# 500M fp32 elements are 2 GB, about what a shared build machine can spare.
CPU_FALLBACK_MAX_ELEMENTS = 500 * 1000 * 1000

# Largest batch size: `aegis estimate` refuses a description above it (a
# typo, not a training job; src/estimate/desc.c), so it is refused here
# first, where the user typed it.
MAX_BATCH_SIZE = 1000 * 1000

# Largest input_elements `aegis estimate` takes (2^40 elements, as every
# count of a description: src/estimate/desc.c).
MAX_INPUT_ELEMENTS = 2 ** 40


class DescribeError(Exception):
    """Bad input to the extractor: an unknown model, a bad option, a model
    whose forward pass fails. The message names what was wrong."""


class DescribeTypeError(DescribeError, TypeError):
    """An argument of the wrong type (batch_size=True): a TypeError, as
    Python's own checks raise, and a DescribeError, as all bad input here."""


class DescribeValueError(DescribeError, ValueError):
    """An argument out of range (batch_size=0): a ValueError, and a
    DescribeError."""


def _torch():
    """Import torch late so that --help and the error paths work without it."""
    try:
        import torch
    except ImportError as err:
        raise DescribeError("PyTorch is not installed (Debian: apt install "
                            "python3-torch): %s" % err) from err
    return torch


def _is_meta(module):
    tensors = list(module.parameters()) + list(module.buffers())
    return bool(tensors) and all(t.is_meta for t in tensors)


def _meta_copy(module):
    """A structural copy of module with every parameter and buffer on the
    meta device: the real weights are never copied (deepcopy is handed a
    meta tensor for each of them), and a tensor shared by several modules
    (tied weights) maps to one meta tensor, where Module.to('meta') would
    untie them."""
    torch = _torch()
    memo = {}
    for tensor in list(module.parameters()) + list(module.buffers()):
        if id(tensor) in memo:
            continue
        meta = torch.empty_like(tensor, device="meta")
        if isinstance(tensor, torch.nn.Parameter):
            meta = torch.nn.Parameter(meta,
                                      requires_grad=tensor.requires_grad)
        memo[id(tensor)] = meta
    return copy.deepcopy(module, memo)


def _map_tensors(value, fn):
    torch = _torch()
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, dict):
        return {k: _map_tensors(v, fn) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_map_tensors(v, fn) for v in value)
    if isinstance(value, list):
        return [_map_tensors(v, fn) for v in value]
    return value


@contextlib.contextmanager
def meta_init():
    """Build modules inside this block with their parameters and buffers on
    the meta device: construction allocates nothing and initialisers do no
    work. Tied weights stay tied (the same Parameter object is registered)."""
    torch = _torch()
    module_cls = torch.nn.Module
    plain_param = module_cls.register_parameter
    plain_buffer = module_cls.register_buffer
    made = {}

    def to_meta(tensor):
        if tensor is None or tensor.is_meta:
            return tensor
        if id(tensor) not in made:
            meta = torch.empty_like(tensor, device="meta")
            if isinstance(tensor, torch.nn.Parameter):
                meta = torch.nn.Parameter(meta,
                                          requires_grad=tensor.requires_grad)
            # Keep the original alive so its id is not reused meanwhile.
            made[id(tensor)] = (tensor, meta)
        return made[id(tensor)][1]

    def register_parameter(self, name, param):
        plain_param(self, name, to_meta(param))

    def register_buffer(self, name, tensor, persistent=True):
        plain_buffer(self, name, to_meta(tensor), persistent)

    module_cls.register_parameter = register_parameter
    module_cls.register_buffer = register_buffer
    try:
        yield
    finally:
        module_cls.register_parameter = plain_param
        module_cls.register_buffer = plain_buffer


def _train_for_description(module):
    """Train mode: the layers a training step runs (dropout, auxiliary
    heads) are the ones to describe. Batch norm alone runs in eval mode: its
    output shape is the same, and with one sample its train-mode statistics
    are undefined wherever a feature map is 1x1 (EfficientNet on CIFAR).
    Returns what restores every module's own flag."""
    torch = _torch()
    flags = [(mod, mod.training) for mod in module.modules()]
    module.train()
    for mod in module.modules():
        if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm):
            mod.eval()

    def restore():
        for mod, training in flags:
            mod.training = training
    return restore


def _record(module, example_input):
    """One recorded training-mode forward pass (aegis_record.record); the
    module's train/eval flags and the random number generator are left as
    they were."""
    import aegis_record
    torch = _torch()
    restore = _train_for_description(module)
    rng = torch.random.get_rng_state()
    try:
        return aegis_record.record(module, example_input)
    finally:
        restore()
        torch.random.set_rng_state(rng)


def _first_argument(example_input):
    if isinstance(example_input, dict):
        return next(iter(example_input.values()), None)
    if isinstance(example_input, tuple):
        return example_input[0] if example_input else None
    return example_input


def _check_one_sample(example_input):
    """The example's elements; DescribeError unless it is one sample: its
    first argument a tensor with leading dimension 1, or a list of one
    tensor (the images of a detection model, model([image], [target]))."""
    import aegis_record
    torch = _torch()
    tensors = list(aegis_record.tensors_in(example_input))
    if not tensors:
        raise DescribeError("example_input holds no tensor")
    first = _first_argument(example_input)
    if isinstance(first, list):
        if len(first) != 1:
            raise DescribeError(
                "example_input must hold ONE sample: its first argument is "
                "a list of %d items (give one image)" % len(first))
    else:
        if not isinstance(first, torch.Tensor):
            first = tensors[0]
        if first.dim() == 0 or first.shape[0] != 1:
            raise DescribeError(
                "example_input must hold ONE sample (leading batch "
                "dimension 1), got shape %s%s"
                % (tuple(first.shape), _time_major_hint(first.shape)))
    return sum(t.numel() for t in tensors)


def _time_major_hint(shape):
    """What to do where the example looks time-major, (seq, 1, feature):
    the default of nn.LSTM, nn.GRU and nn.Transformer without
    batch_first=True. describe takes the batch on dimension 0 only (it
    doubles the example there for a job of two or more), so the model is
    described through a wrapper that takes batch-first input; its
    transpose is a view and adds nothing to the description."""
    if len(shape) < 2 or shape[1] != 1:
        return ""
    batch_first = (1, shape[0]) + tuple(shape[2:])
    return (": it looks time-major (seq, batch, ...), the default of "
            "nn.LSTM/nn.GRU/nn.Transformer without batch_first=True, but "
            "describe takes the batch on dimension 0 only: describe a "
            "wrapper whose forward(x) returns self.model(x.transpose(0, 1)), "
            "with an example of shape %s (docs/estimator.md, 'Describing a "
            "model')" % (batch_first,))


def _other_values(tensor):
    """A tensor of the same shape, dtype and device with other values:
    floats from a normal distribution, integers among those the tensor
    holds or 0 and 1 (any vocabulary has those), booleans at random."""
    torch = _torch()
    gen = torch.Generator().manual_seed(20261201)
    if tensor.is_floating_point():
        return torch.randn(tensor.shape, generator=gen).to(tensor.dtype)
    if tensor.dtype == torch.bool:
        return torch.randint(0, 2, tensor.shape, generator=gen).bool()
    high = max(int(tensor.max()) + 1, 2) if tensor.numel() else 2
    return torch.randint(0, high, tensor.shape, generator=gen).to(
        tensor.dtype)


def _other_labels(tensor):
    """Other values for a tensor of a later argument: labels, masks and
    indices (integers, booleans) get them, as memory may follow them
    (hidden[labels != -100]); floats (a detection target's boxes, whose
    order the model checks) stay as they are."""
    if tensor.is_floating_point():
        return tensor
    return _other_values(tensor)


def _with_other_values(example_input, all_arguments=True):
    """The example with other values in its first argument (images,
    token ids) and, with all_arguments, in the integer and boolean
    tensors of the others (labels, masks)."""
    first = _first_argument(example_input)
    other = _map_tensors(first, _other_values)
    rest = _other_labels if all_arguments else (lambda t: t)
    if isinstance(example_input, dict):
        key = next(iter(example_input))
        changed = {k: _map_tensors(v, rest)
                   for k, v in example_input.items()}
        return dict(changed, **{key: other})
    if isinstance(example_input, tuple):
        return (other,) + _map_tensors(example_input[1:], rest)
    return other


def _doubled(example_input):
    """The example at batch 2: every tensor whose leading dimension is 1
    twice; None where the first argument is a list (detection's images,
    which the model batches itself)."""
    torch = _torch()
    if isinstance(_first_argument(example_input), list):
        return None

    def twice(tensor):
        if tensor.dim() and tensor.shape[0] == 1:
            return torch.cat([tensor, tensor])
        return tensor
    return _map_tensors(example_input, twice)


_PER_SAMPLE_FIELDS = ("activations", "saved", "saved_bytes", "masks")


def _per_sample(entries, samples):
    """Entries of a pass over several samples, per sample (rounded up)."""
    if samples == 1:
        return entries
    out = []
    for entry in entries:
        entry = dict(entry)
        for field in _PER_SAMPLE_FIELDS:
            if field in entry:
                entry[field] = -(-entry[field] // samples)
        out.append(entry)
    return out


_PARAMETER_NAMES_SHOWN = 8


def _unused_entry(unused, warnings):
    """The entry, and a warning, for the module's tensors that the forward
    pass did not use: they are on the GPU all the same."""
    names, params, buffers = unused
    if names:
        shown = ", ".join(names[:_PARAMETER_NAMES_SHOWN])
        more = len(names) - _PARAMETER_NAMES_SHOWN
        warnings.append(
            "%d trainable tensor(s) of %d elements in all were not used by "
            "the forward pass (counted as weights all the same): %s%s"
            % (len(names), params, shown,
               " and %d more" % more if more > 0 else ""))
    if not params and not buffers:
        return None
    entry = {"type": "unused", "activations": 0, "params": params}
    if buffers:
        entry["buffers"] = buffers
    entry["saved"] = 0
    return entry


def _later_labels(example_input):
    """Whether an argument after the first holds an integer or boolean
    tensor (labels, masks), which other values change too."""
    import aegis_record
    if isinstance(example_input, dict):
        later = list(example_input.values())[1:]
    elif isinstance(example_input, tuple):
        later = list(example_input[1:])
    else:
        return False
    return any(not t.is_floating_point()
               for t in aegis_record.tensors_in(later))


def _record_other_values(module, example_input):
    """The pass on other values of every argument, and whether the later
    arguments got them too (none of them holds labels or masks: the first
    alone did); where the model rejects those (a later argument it
    checks), the pass on other values of the first only."""
    try:
        return (_record(module, _with_other_values(example_input)),
                _later_labels(example_input))
    except Exception:  # any failure of a forward we do not own
        first_only = _with_other_values(example_input, False)
        return _record(module, first_only), False


def _differs_in_first(module, example_input, result, other, all_changed):
    """Of two passes that differ, the one on other values of the first
    argument alone, where that one differs from the example's too: else
    the later arguments (labels, masks) made the difference, and None.
    Where the model rejects the first argument's other values alone, the
    pass on all of them stands for it, as the larger is then described."""
    if all_changed:
        try:
            other = _record(module, _with_other_values(example_input, False))
        except Exception:  # any failure of a forward we do not own
            return other
    return other if other[0] != result[0] else None


def _layers_on_cpu(module, example_input, warnings, why):
    """The CPU pass, said out loud (why, how long), and run again on other
    input values: where the passes differ, the description depends on the
    values and the warnings say so. Where the first argument's values
    (images, token ids) make the difference, the larger pass is described:
    an all-zeros example may keep nothing that real data keeps. Where only
    the later arguments' do, the example's is: labels and masks hold the
    data's proportions (how many tokens are labelled or padded), which
    values at random do not (all tokens labelled made a masked language
    model's activations 1.22 times those of its example)."""
    import time
    started = time.monotonic()
    cpu_input = _map_tensors(example_input, lambda t: t.to("cpu"))
    result = _record(module, cpu_input)
    samples = _first_argument(cpu_input)
    batch = samples.shape[0] if hasattr(samples, "shape") else 1
    try:
        other, all_changed = _record_other_values(module, cpu_input)
    except Exception as err:  # any failure of a forward we do not own
        # The example ran: its pass is the description, though whether it
        # depends on the values is unknown (counts that must be >= 0, ids
        # that must be sorted, refuse values drawn at random).
        warnings.append(_cpu_pass_said(
            batch, time.monotonic() - started,
            "1 pass: the example; the forward refused other values of the "
            "same shape (%s), so whether the description depends on the "
            "input's values is not known" % _first_line(err), why))
        return result
    differs = other[0] != result[0]
    first = None
    if differs:
        first = _differs_in_first(module, cpu_input, result, other,
                                  all_changed)
    passes = 3 if differs and all_changed else 2
    warnings.append(_cpu_pass_said(
        batch, time.monotonic() - started,
        "%d passes: the example and other values" % passes, why))
    if not differs:
        return result
    if first is None:
        warnings.append(
            "the description depends on the example input's values: other "
            "labels or masks (its later arguments) of the same shape ran "
            "different layers or sizes (%d layers against %d); the "
            "example's pass is described, so its labels and masks should "
            "be like the training data's" % (len(other[0]), len(result[0])))
        return result
    larger = first if _pass_size(first[0]) > _pass_size(result[0]) else result
    warnings.append(
        "the description depends on the example input's values: another "
        "input of the same shape ran different layers or sizes (%d layers "
        "against %d); the larger of the two passes is described (%s)"
        % (len(first[0]), len(result[0]),
           "the other input's" if larger is first else "the example's"))
    return larger


def _cpu_pass_said(batch, seconds, passes, why):
    """The warning that the description comes from the CPU: on how many
    samples, how long, which passes, why."""
    return ("described by a forward pass on the CPU with batch %d (%.1f s, "
            "%s), %s" % (batch, seconds, passes, why))


def _pass_size(layers):
    """What a pass keeps for backward, then what it computes: the order of
    two passes' memory."""
    return (sum(layer.get("saved", 0) for layer in layers),
            sum(layer.get("activations", 0) for layer in layers))


def _failed_in(err, module):
    """Where in module err was raised: ", in its layer NAME (TYPE)", the
    innermost of its submodules whose forward the traceback runs through,
    or "" where none of them is on it (module's own forward, an input
    refused before it ran)."""
    names = {id(mod): name for name, mod in module.named_modules() if name}
    inner = None
    tb = err.__traceback__
    while tb is not None:
        # a frame's f_locals copies every local: read its "self" only
        code = tb.tb_frame.f_code
        if code.co_argcount and code.co_varnames[0] == "self":
            me = tb.tb_frame.f_locals.get("self")
            inner = me if id(me) in names else inner
        tb = tb.tb_next
    if inner is None:
        return ""
    return ", in its layer %s (%s)" % (names[id(inner)],
                                        type(inner).__name__)


def _why_not_meta(err):
    """Why the CPU pass is taken, for its warning: the meta pass failed,
    or it ran but could not be faithful (aegis_record.MetaPassUnfaithful
    says why, and no operation needed real values)."""
    import aegis_record
    if isinstance(err, aegis_record.MetaPassUnfaithful):
        return "because %s" % err
    return ("because the pass on the meta device failed (%s): an "
            "operation needs real values, so the description may "
            "depend on them" % _first_line(err))


def _one_pass(module, example_input, device, warnings, name):
    """The recorded pass on meta or, where that fails and device allows,
    on the CPU (said in warnings). A forward pass that fails where no
    fallback is left is a DescribeError naming the model (name) and the
    layer it failed in."""
    why = "as asked (device cpu)"
    if device in ("auto", "meta"):
        runner = module
        try:
            # the copy too: a module of tensors that are no graph leaves
            # (torch.nn.utils.weight_norm's) cannot be deep-copied
            runner = module if _is_meta(module) else _meta_copy(module)
            meta_input = _map_tensors(example_input, lambda t: t.to("meta"))
            return _record(runner, meta_input)
        except Exception as err:  # any failure of a forward we do not own
            if device == "meta" or _is_meta(module):
                raise DescribeError("the forward pass does not run on the "
                                    "meta device%s: %s"
                                    % (_failed_in(err, runner), err)) from err
            why = _why_not_meta(err)
    try:
        return _layers_on_cpu(module, example_input, warnings, why)
    except Exception as err:  # any failure of a forward we do not own
        raise DescribeError("%s's forward pass failed on the example input "
                            "on the CPU%s: %s: %s"
                            % (name, _failed_in(err, module),
                               type(err).__name__, err)) from err


def _per_sample_pass(module, example_input, batch_size, device, warnings,
                     name):
    """The pass, per sample. A job of two samples or more is described
    from a pass over two, halved: some operators make a view of a batch
    of one where they copy a larger batch (a transpose made contiguous),
    and tensors of the step rather than of a sample (index tables, masks)
    are then spread over the batch instead of counted once a sample.
    Where the pass over two fails, one sample it is, said in warnings."""
    doubled = _doubled(example_input) if batch_size >= 2 else None
    if doubled is not None:
        try:
            result = _one_pass(module, doubled, device, warnings, name)
            return (_per_sample(result[0], 2),) + tuple(result[1:])
        except Exception as err:  # any failure of a forward we do not own
            warnings.append("described from one sample: the pass over two "
                            "failed (%s)" % _first_line(err))
    return _one_pass(module, example_input, device, warnings, name)


def _warn_checkpointing(layers, warnings):
    """Says that activation checkpointing was seen and how it is counted."""
    import aegis_record
    for layer in layers:
        if layer["type"] == aegis_record.CHECKPOINT_RECOMPUTE:
            warnings.append(
                "activation checkpointing: the checkpointed segments keep "
                "only their inputs in forward, and backward runs each again; "
                "the largest one's recomputed tensors (%d elements a sample) "
                "are counted as the layer %s"
                % (layer["saved"], aegis_record.CHECKPOINT_RECOMPUTE))


def _checked(name, value, lo, hi=None, note=None):
    """value as an int: DescribeTypeError for a bool (True would pass as 1)
    or a non-integer (3.7 was cut to 3), DescribeValueError outside lo..hi
    (aegis_checks.check_whole, naming `name`)."""
    return aegis_checks.check_whole(name, value, lo, hi, note=note,
                                    not_whole=DescribeTypeError,
                                    out_of_range=DescribeValueError)


def _checked_batch_size(batch_size):
    """batch_size as an int from 1 to MAX_BATCH_SIZE (_checked)."""
    return _checked("batch_size", batch_size, 1, MAX_BATCH_SIZE,
                    "the largest batch aegis estimate takes")


def _check_choice(name, value, choices):
    if value not in choices:
        raise DescribeError("%s %r is not one of: %s"
                            % (name, value, ", ".join(choices)))


def _first_line(err):
    text = str(err).strip().splitlines()
    line = text[0] if text else type(err).__name__
    return line if len(line) <= 160 else line[:157] + "..."


def describe(module, example_input, batch_size, optimizer="adam",
             precision="fp32", model=None, input_elements=None, source=None,
             device="auto"):
    """Return the aegis-model/1 description (a dict) of a torch nn.Module.

    example_input: what module(...) takes for ONE sample: a tensor with
    leading dimension 1, a tuple of positional arguments or a dict of
    keyword ones. A list of one image as the first argument is one sample
    too: a detection model is described as it trains,
    describe(model, ([image], [target]), ...). A time-major model (nn.LSTM,
    nn.GRU, nn.Transformer without batch_first=True: input (seq, batch,
    feature)) is described through a wrapper whose forward(x) returns
    model(x.transpose(0, 1)), with an example of shape (1, seq, feature):
    the batch is dimension 0 here, always.
    device: "meta" runs the pass on meta tensors (a structural copy of the
    module, no weights copied, unless it is on meta already), "cpu" on the
    module itself (one or two samples), "auto" tries meta and falls back to
    CPU when the forward pass needs real values. A CPU pass runs twice, on the
    example and on other values of the same shape, to see whether the
    description depends on them.
    input_elements (an integer from 0 to MAX_INPUT_ELEMENTS, else
    DescribeTypeError or DescribeValueError) defaults to the elements of
    example_input (tokens for text). The module is left as it was: weights, train/eval flag of every
    submodule, random number generator.
    The description's "warnings" (absent when there are none) say what its
    footing is: a CPU fallback (why, how long), a dependence on the input's
    values, trainable tensors the forward pass never used.
    batch_size is an integer from 1 to MAX_BATCH_SIZE (aegis estimate's
    limit): a bool or another type raises DescribeTypeError (a TypeError),
    a size out of range DescribeValueError (a ValueError); both are
    DescribeErrors. A module that is no nn.Module raises
    DescribeTypeError; a forward pass that fails (where device leaves no
    fallback) raises DescribeError naming the layer it failed in."""
    if not isinstance(module, _torch().nn.Module):
        raise DescribeTypeError("module must be a torch.nn.Module, got %s"
                                % type(module).__name__)
    batch_size = _checked_batch_size(batch_size)
    _check_choice("optimizer", optimizer, OPTIMIZERS)
    _check_choice("precision", precision, PRECISIONS)
    _check_choice("device", device, DEVICES)
    sample_elements = _check_one_sample(example_input)
    input_elements = (sample_elements if input_elements is None
                      else _checked("input_elements", input_elements, 0,
                                    MAX_INPUT_ELEMENTS))
    if model is None:
        model = type(module).__name__
    warnings = []
    result = _per_sample_pass(module, example_input, batch_size, device,
                              warnings, model)
    layers = list(result[0])
    _warn_checkpointing(layers, warnings)
    unused = _unused_entry(result[1:], warnings)
    if unused:
        layers.append(unused)
    desc = {"format": FORMAT,
            "model": model,
            "batch_size": batch_size,
            "optimizer": optimizer,
            "precision": precision,
            "input_elements": int(input_elements)}
    if source:
        desc["source"] = source
    if warnings:
        desc["warnings"] = warnings
    desc["layers"] = layers
    return desc


def example_input_for(spec, input_shape=None, seq_len=None, device="meta"):
    """The one-sample input a model spec takes, as its documentation calls
    it in training: token ids (1, N); an image (1, C, H, W); a clip
    (1, C, T, H, W); two frames (optical flow); or, for detection, a list
    of one (C, H, W) image and a list of its target."""
    import aegis_models
    torch = _torch()
    if spec.input_kind == "tokens":
        if input_shape is not None:
            raise DescribeError("%s takes tokens: use --seq-len, not "
                                "--input-shape" % spec.name)
        length = seq_len if seq_len is not None else spec.seq_len
        return torch.zeros((1, length), dtype=torch.long, device=device)
    if seq_len is not None:
        raise DescribeError("%s takes images: use --input-shape, not "
                            "--seq-len" % spec.name)
    shape = tuple(input_shape if input_shape is not None
                  else spec.input_shape)
    dims = 4 if spec.input_kind == "video" else 3
    if len(shape) != dims:
        raise DescribeError("%s takes %s: --input-shape needs %s" % (
            spec.name, "clips" if dims == 4 else "images",
            "C,T,H,W" if dims == 4 else "C,H,W"))
    if spec.input_kind == "detection":
        target = aegis_models.detection_target(spec.name, shape)
        return ([torch.zeros(shape, device=device)],
                [{k: v.to(device) for k, v in target.items()}])
    image = torch.zeros((1,) + shape, device=device)
    if spec.input_kind == "flow":
        return (image, torch.zeros_like(image))
    return image


def command_line(name, optimizer=None, precision=None, input_shape=None,
                 seq_len=None, num_classes=None, attention=None):
    """The aegis_describe.py command (less --batch-size) that makes a
    description: written to its "source" so that any file can be remade."""
    parts = ["aegis_describe.py", name]
    if num_classes is not None:
        parts.append("--num-classes %d" % num_classes)
    if input_shape is not None:
        parts.append("--input-shape %s" % ",".join(str(d)
                                                    for d in input_shape))
    if seq_len is not None:
        parts.append("--seq-len %d" % seq_len)
    if optimizer is not None:
        parts.append("--optimizer %s" % optimizer)
    if precision is not None:
        parts.append("--precision %s" % precision)
    if attention is not None:
        parts.append("--attention %s" % attention)
    return " ".join(parts)


def describe_builder(name, batch_size, optimizer=None, precision=None,
                     input_shape=None, seq_len=None, num_classes=None,
                     device="auto", attention=None):
    """Describe a model by name (a builder of aegis_models or a torchvision
    model). Unset options take the model's catalog defaults; attention
    ("eager" or "fused") applies to the transformer builders only;
    input_shape's sizes, seq_len and num_classes are whole numbers of at
    least 1 (else DescribeTypeError or DescribeValueError). The
    model is built on the meta device; only where its meta pass fails is
    it built for real, on CPU, and described there (auto)."""
    import aegis_models
    # before a model is built, and outside the meta pass's fallback, which
    # would build it again on CPU to be refused the same
    batch_size = _checked_batch_size(batch_size)
    _check_choice("device", device, DEVICES)
    # the checked values as ints go on: a 0-d tensor or a numpy integer is
    # a whole number, but as such it wrote "tensor(64)" into the source
    seq_len = None if seq_len is None else _checked("seq_len", seq_len, 1)
    num_classes = None if num_classes is None else \
        _checked("num_classes", num_classes, 1)
    if input_shape is not None and not isinstance(input_shape, (tuple, list)):
        raise DescribeTypeError("input_shape must be a tuple of integers, got "
                                "%s" % type(input_shape).__name__)
    if input_shape is not None:
        input_shape = tuple(_checked("input_shape[%d]" % i, dim, 1)
                            for i, dim in enumerate(input_shape))
    source = command_line(name, optimizer, precision, input_shape, seq_len,
                          num_classes, attention)
    try:
        spec = aegis_models.lookup(name)
        args = (batch_size, optimizer or spec.optimizer,
                precision or spec.precision)
        desc = None
        if device in ("auto", "meta"):
            with meta_init():
                module = spec.build(num_classes, attention)
            desc = _describe_on_meta(
                module, example_input_for(spec, input_shape, seq_len, "meta"),
                args, source, fallback=device == "auto")
        if desc is None:
            module = spec.build(num_classes, attention)
            desc = describe(module, example_input_for(spec, input_shape,
                                                      seq_len, "cpu"),
                            *args, model=name, source=source, device=device)
    except aegis_models.ModelError as err:
        raise DescribeError(str(err)) from err
    desc["model"] = name
    return desc


def _describe_on_meta(module, example, args, source, fallback):
    """The description from a meta pass; None where the pass fails and the
    model is small enough for the CPU fallback the caller then takes."""
    try:
        return describe(module, example, *args, source=source, device="meta")
    except DescribeError as err:
        size = sum(p.numel() for p in module.parameters())
        if fallback and size <= CPU_FALLBACK_MAX_ELEMENTS:
            return None
        raise DescribeError("%s (%d parameter elements; the CPU fallback "
                            "takes at most %d)"
                            % (err, size, CPU_FALLBACK_MAX_ELEMENTS)) from err


def to_json(desc):
    """The description as text: one key per line and one layer per line, so
    that diffs of committed files stay readable. Deterministic."""
    if not isinstance(desc, dict) or not isinstance(desc.get("layers"), list):
        raise DescribeTypeError("to_json: not a description (a dict with its "
                                "layers), got %s" % type(desc).__name__)
    lines = ["{"]
    for key, value in desc.items():
        if key == "layers":
            continue
        lines.append("  %s: %s," % (json.dumps(key), json.dumps(value)))
    lines.append('  "layers": [')
    rows = ["    " + json.dumps(layer) for layer in desc["layers"]]
    lines.append(",\n".join(rows))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


HELP = """\
NAME
    aegis_describe.py - describe a PyTorch model for the aegis memory estimator

SYNOPSIS
    /usr/bin/python3 python/aegis_describe.py MODEL --batch-size B
        [--optimizer NAME] [--precision NAME]
        [--input-shape C,H,W | --input-shape C,T,H,W | --seq-len N]
        [--num-classes N]
        [--attention eager|fused] [--device auto|meta|cpu] [-o FILE]
    /usr/bin/python3 python/aegis_describe.py --list [--json]

DESCRIPTION
    Builds MODEL, runs one training-mode forward pass on a single sample
    with a forward hook on every leaf module and autograd's
    saved-tensor hooks, and writes the model description JSON (format
    aegis-model/1) that `aegis estimate` reads: per layer, in forward
    order, the torch.nn class name, the output elements for one sample,
    the trainable parameter elements (shared weights counted once, at first
    use, wherever used: a weight handed to a function counts too;
    non-trainable tensors such as batch-norm statistics as "buffers"), and
    what autograd keeps of the layer for backward: "saved" floating-point
    elements (in-place activations' copies, attention probabilities and
    recurrent gates included), "saved_bytes" of other tensors (pooling
    indices), "masks" (dropout's, a byte each on a GPU). Parameters no
    layer used are listed as an "unused" layer and named in a warning.

    MODEL is a builder of python/aegis_models.py (bert_base, bert_large,
    gpt2_large, gpt2_xl, xlnet_base, xlnet_large, llama3_width_8layer,
    xception, unet_resnet34, mnist_cnn) or a torchvision model name:
    classification and segmentation (resnet50, swin_t, fcn_resnet50, ...)
    take an image, video models (r3d_18, mvit_v2_s, ...) a clip, optical
    flow models (raft_small, raft_large) two frames, and detection models
    (fasterrcnn_resnet50_fpn, maskrcnn_resnet50_fpn, ssd300_vgg16, ...)
    are called as they train, model([image], [target]), with one box (and
    a mask or keypoints where the model needs them); their own transform
    resizes the image. --list prints them all with their default input,
    optimizer, precision and attention kind.

    The pass runs on the meta device (shapes only: no memory, milliseconds)
    and falls back to a CPU pass (on the same one or two samples) when the
    model needs real values (detection models always do). The fallback is
    said on stderr and in the description's "warnings" (why, how long); it
    runs twice, on the example and on other values (of the first argument
    and of every integer or boolean tensor of the others: labels, masks),
    and warns when the two differ: the description then depends on the
    input's values (where the forward refuses the other values, the
    example's pass alone, said). Functional steps that a container's forward calls
    between its modules (torch.cat, +, F.avg_pool2d, F.relu, F.interpolate,
    F.linear with a tied weight, ...) are layers too, named by the
    function, and so is any other function there that uses a parameter or
    makes a tensor autograd keeps.

    With --batch-size 2 or more the pass runs on two samples and its
    figures are halved (a batch of one makes views where a larger batch
    copies). A forward that runs torch.autocast itself is described on the
    CPU, with the dtypes autocast gives, its weight copies left to the
    estimate's weights. torch.utils.checkpoint segments are warned about,
    and the largest one's recomputation during backward is a layer
    "checkpoint_recompute".

OPTIONS
    --batch-size B      Per-GPU batch size written to the description:
                        an integer from 1 to 1000000, the largest that
                        aegis estimate takes. Required.
    --optimizer NAME    sgd, sgd_momentum, adam, adamw, rmsprop or adagrad.
                        Default: the model's catalog optimizer (torchvision
                        models: adam).
    --precision NAME    fp32, amp_fp16, amp_bf16, fp16 or bf16. Default: the
                        model's catalog precision (fp32, llama3: bf16).
    --input-shape C,H,W Image size of one sample for image models (default
                        3,224,224; inception_v3 3,299,299; mnist_cnn
                        1,28,28; detection 3,800,800, ssd300 3,300,300);
                        C,T,H,W for video models (default 3,16,112,112;
                        s3d and mvit 3,16,224,224); each frame's C,H,W for
                        optical flow (default 3,368,496).
    --seq-len N         Tokens per sample for text models (default 512).
    --num-classes N     Classifier outputs (default: the model's own).
    --attention KIND    Transformer builders only. eager: the attention
                        scores, their softmax and its dropout are layers
                        (transformers' "eager" attention keeps them for
                        backward); fused: one ScaledDotProduct layer
                        whose only activation is the context (PyTorch's
                        fused kernels). Default: what the catalog job ran:
                        fused for BERT, GPT-2 and Llama, eager for XLNet.
    --device WHERE      auto (default): meta, else CPU; meta: meta only, fail
                        if the model cannot run there; cpu: CPU only.
    -o, --output FILE   Write the JSON to FILE (a layer a line) instead of
                        standard output (one line, as aegis estimate -
                        reads a pipe).
    --list              List the model names and exit: name, default input,
                        optimizer, precision, attention kind, what it is.
    --json              With --list: one JSON object per model and line.
    -h, --help          Show this manual and exit.

EXIT STATUS
    0 on success, 1 when the output cannot be written, 2 for bad usage or
    bad input (an unknown model, a bad option value such as a --batch-size
    out of 1 to 1000000, a model whose forward pass fails on the given
    input).

EXAMPLES
    python/aegis_describe.py resnet50 --batch-size 32 -o resnet50.json
    python/aegis_describe.py resnet18 --batch-size 64 --num-classes 100 \\
        --input-shape 3,32,32 --optimizer adamw
    python/aegis_describe.py gpt2_xl --batch-size 2 --seq-len 512

    From Python, for any nn.Module (the module is left as it was; its
    weights are not copied):
        import aegis_describe
        desc = aegis_describe.describe(model, torch.zeros(1, 3, 224, 224),
                                       batch_size=32, optimizer="sgd")
        open("m.json", "w").write(aegis_describe.to_json(desc))
    batch_size is an int from 1 to 1000000 (aegis_describe.MAX_BATCH_SIZE):
    describe raises a TypeError for a bool or a float, a ValueError out of
    range, each naming batch_size (and each an aegis_describe.DescribeError).
    A detection model, as it trains:
        desc = aegis_describe.describe(model, ([image], [target]), 4)
    A time-major model (nn.LSTM or nn.GRU without batch_first=True, input
    (seq, batch, feature)): the example's batch is its dimension 0, so
    describe a wrapper that takes batch-first input (its transpose is a
    view, which adds nothing to the description):
        class BatchFirst(torch.nn.Module):
            def __init__(self, model):
                super().__init__()
                self.model = model
            def forward(self, x):
                return self.model(x.transpose(0, 1))
        desc = aegis_describe.describe(BatchFirst(model),
                                       torch.zeros(1, 35, 128), 32)
"""


class _Parser(argparse.ArgumentParser):
    """argparse with the aegis exit status (2) and our manual as --help."""

    def error(self, message):
        raise DescribeError(message)

    def print_help(self, file=None):
        (file or sys.stdout).write(HELP)


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % text)
    if value < 1:
        raise argparse.ArgumentTypeError("%r must be >= 1" % text)
    return value


def _batch_size(text):
    """--batch-size, refused out of the range aegis estimate takes."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % text)
    if not 1 <= value <= MAX_BATCH_SIZE:
        raise argparse.ArgumentTypeError(
            "%s is out of range: 1 to %d (the largest batch aegis estimate "
            "takes)" % (text, MAX_BATCH_SIZE))
    return value


def _shape(text):
    try:
        dims = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            "%r is not C,H,W or C,T,H,W (integers)" % text)
    if len(dims) not in (3, 4) or min(dims) < 1:
        raise argparse.ArgumentTypeError(
            "%r is not C,H,W or C,T,H,W (integers >= 1)" % text)
    return dims


def _parse(argv):
    parser = _Parser(prog="aegis_describe.py", add_help=True)
    parser.add_argument("model", nargs="?")
    parser.add_argument("--batch-size", type=_batch_size)
    parser.add_argument("--optimizer", choices=OPTIMIZERS)
    parser.add_argument("--precision", choices=PRECISIONS)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--input-shape", type=_shape)
    group.add_argument("--seq-len", type=_positive_int)
    parser.add_argument("--num-classes", type=_positive_int)
    parser.add_argument("--attention", choices=("eager", "fused"))
    parser.add_argument("--device", choices=DEVICES, default="auto")
    parser.add_argument("-o", "--output")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not args.list:
        if args.model is None:
            raise DescribeError("missing MODEL (see --list)")
        if args.batch_size is None:
            raise DescribeError("missing --batch-size")
    return args


def _list_models(out, as_json):
    import aegis_models
    for spec in aegis_models.all_specs():
        if as_json:
            out.write(json.dumps({
                "name": spec.name, "input_kind": spec.input_kind,
                "input_shape": spec.input_shape, "seq_len": spec.seq_len,
                "optimizer": spec.optimizer, "precision": spec.precision,
                "attention": spec.attention,
                "description": spec.description}) + "\n")
            continue
        if spec.input_kind == "tokens":
            given = "seq-len %d" % spec.seq_len
        else:
            given = "input %s" % ",".join(str(d) for d in spec.input_shape)
        out.write("%-22s %-16s %-6s %-5s %-6s %s\n" % (
            spec.name, given, spec.optimizer, spec.precision,
            spec.attention or "-", spec.description))


def main(argv=None):
    # Die quietly when the reader of a listing goes away (| head).
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        args = _parse(sys.argv[1:] if argv is None else argv)
        if args.list:
            _list_models(sys.stdout, args.json)
            return 0
        desc = describe_builder(args.model, args.batch_size, args.optimizer,
                                args.precision, args.input_shape,
                                args.seq_len, args.num_classes, args.device,
                                args.attention)
    except DescribeError as err:
        sys.stderr.write("aegis_describe: %s\n" % err)
        return EXIT_BAD_INPUT
    except (RuntimeError, ValueError, TypeError) as err:
        # A forward pass that rejects the input shape, for example.
        sys.stderr.write("aegis_describe: %s failed on the given input: %s\n"
                         % (args.model, err))
        return EXIT_BAD_INPUT
    for warning in desc.get("warnings", []):
        sys.stderr.write("aegis_describe: warning: %s\n" % warning)
    text = to_json(desc)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as out:
                out.write(text)
        except OSError as err:
            sys.stderr.write("aegis_describe: cannot write %s: %s\n"
                             % (args.output, err))
            return 1
    else:
        # one line: what `aegis estimate -` reads from a pipe
        sys.stdout.write(json.dumps(desc) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
