#!/usr/bin/python3
"""Describe a PyTorch model for aegis's memory estimator (the aegis-model/1 JSON).

One forward pass with a forward hook on every leaf module records, per layer
and in forward order, the elements of the layer's output for ONE sample and the
parameter elements the layer owns; a torch function mode adds the functional
steps (torch.cat, +, pools) that containers run between their modules. The pass runs on the meta device when the
model allows it: meta tensors carry shapes but no storage, so even GPT-2 XL is
described in well under a second and without gigabytes of RAM. Models whose
forward needs real values fall back to a CPU pass with batch 1.

The per-sample figure is exact because the pass uses a batch of one: the
estimator multiplies by the job's batch size itself.

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

FORMAT = "aegis-model/1"
OPTIMIZERS = ("sgd", "sgd_momentum", "adam", "adamw", "rmsprop", "adagrad")
PRECISIONS = ("fp32", "amp_fp16", "amp_bf16", "fp16", "bf16")
DEVICES = ("auto", "meta", "cpu")

# Exit status for bad usage or bad input, as the other aegis commands use.
EXIT_BAD_INPUT = 2

# Largest model (parameter elements) rebuilt on CPU when its meta pass fails:
# 500M fp32 elements are 2 GB, about what a shared build machine can spare.
CPU_FALLBACK_MAX_ELEMENTS = 500 * 1000 * 1000


class DescribeError(Exception):
    """Bad input to the extractor: an unknown model, a bad option, a model
    whose forward pass fails. The message names what was wrong."""


def _torch():
    """Import torch late so that --help and the error paths work without it."""
    try:
        import torch
    except ImportError as err:
        raise DescribeError("PyTorch is not installed (Debian: apt install "
                            "python3-torch): %s" % err) from err
    return torch


def _atomic_types():
    """Modules that are one layer although they have children: their
    children's weights are used inside the parent's forward without calling
    the child, so hooks on the children would never fire."""
    torch = _torch()
    return (torch.nn.MultiheadAttention,)


def _layer_modules(module):
    """The modules that become layers: leaves, plus atomic modules (whose
    descendants are then skipped)."""
    atomic = _atomic_types()
    skip = set()
    layers = []
    for mod in module.modules():
        if id(mod) in skip:
            continue
        children = list(mod.children())
        if isinstance(mod, atomic):
            for sub in mod.modules():
                if sub is not mod:
                    skip.add(id(sub))
            layers.append(mod)
        elif not children:
            layers.append(mod)
    return layers, skip


def _containers_with_own_tensors(module, layers, skip):
    """Non-leaf modules that own parameters or buffers directly (a class
    token, a relative-position bias): they get a params-only entry when
    entered, so that every parameter is counted."""
    layer_ids = {id(m) for m in layers}
    out = []
    for mod in module.modules():
        if id(mod) in layer_ids or id(mod) in skip:
            continue
        if any(p is not None for p in mod._parameters.values()) or \
           any(b is not None for b in mod._buffers.values()):
            out.append(mod)
    return out


def _tensors_in(value):
    """Every tensor in a module's output: tensors, tuples, lists, dicts
    (Hugging Face outputs are dicts) and namedtuples, recursively."""
    torch = _torch()
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors_in(item)


# Functional steps recorded when a container's forward calls them (inside a
# leaf module they are that module's own work): the ones that make a new
# tensor of activations, such as Inception's branch pools and concatenations
# or MobileNet's residual sums. Views, constants and in-place variants are
# left out (an in-place call returns its input and would count 0 anyway).
FUNCTIONAL_STEPS = frozenset([
    "cat", "concat", "stack", "add", "sub", "mul", "matmul", "bmm",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d",
    "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "relu", "relu6", "leaky_relu", "elu", "gelu", "silu", "mish",
    "sigmoid", "tanh", "hardswish", "hardsigmoid", "softmax",
    "log_softmax", "dropout", "interpolate", "layer_norm", "batch_norm",
])


def _new_elements(inputs, output):
    """Elements of the output tensors that are not input tensors: an output
    that is an input (nn.Identity, an in-place ReLU) adds no memory."""
    given = {id(t) for t in _tensors_in(inputs)}
    return sum(t.numel() for t in _tensors_in(output) if id(t) not in given)


class _Recorder:
    """Collects layer entries as hooks fire. Parameters and buffers are
    claimed by identity the first time a layer that owns them runs, so shared
    (tied) weights are counted once, at first use. depth counts the leaf
    layers running now, so that functional calls inside them are not
    recorded twice."""

    def __init__(self):
        self.layers = []
        self.depth = 0
        self._claimed = set()

    def _claim(self, tensors):
        params = buffers = 0
        for tensor, trainable in tensors:
            if tensor is None or id(tensor) in self._claimed:
                continue
            self._claimed.add(id(tensor))
            if trainable:
                params += tensor.numel()
            else:
                buffers += tensor.numel()
        return params, buffers

    @staticmethod
    def _owned(mod, recurse):
        for param in mod.parameters(recurse=recurse):
            yield param, param.requires_grad
        for buf in mod.buffers(recurse=recurse):
            yield buf, False

    def _append(self, kind, activations, params=0, buffers=0):
        entry = {"type": kind, "activations": activations, "params": params}
        if buffers:
            entry["buffers"] = buffers
        self.layers.append(entry)

    def enter_layer(self, _mod, _inputs):
        self.depth += 1

    def on_layer(self, mod, inputs, output):
        self.depth -= 1
        params, buffers = self._claim(self._owned(mod, recurse=True))
        self._append(type(mod).__name__, _new_elements(inputs, output),
                     params, buffers)

    def on_container(self, mod, _inputs):
        # Only the container's own tensors: its children report themselves.
        params, buffers = self._claim(self._owned(mod, recurse=False))
        if params or buffers:
            self._append(type(mod).__name__, 0, params, buffers)

    def on_function(self, name, inputs, output):
        if self.depth == 0 and name in FUNCTIONAL_STEPS:
            self._append(name, _new_elements(inputs, output))


def _function_mode(recorder):
    """A torch function mode that reports each functional call to
    recorder.on_function; torch runs the call itself with the mode off."""
    from torch.overrides import TorchFunctionMode

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            output = func(*args, **kwargs)
            recorder.on_function(getattr(func, "__name__", ""),
                                 (args, kwargs), output)
            return output
    return Mode()


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


def _is_meta(module):
    tensors = list(module.parameters()) + list(module.buffers())
    return bool(tensors) and all(t.is_meta for t in tensors)


def _meta_copy(module):
    """A copy of module with every parameter and buffer on the meta device.
    Module.to('meta') would replace shared parameters by distinct copies and
    so untie tied weights; here each original tensor maps to one meta tensor."""
    torch = _torch()
    clone = copy.deepcopy(module)
    made = {}
    for mod in clone.modules():
        for table in (mod._parameters, mod._buffers):
            for name, tensor in table.items():
                if tensor is None:
                    continue
                if id(tensor) not in made:
                    meta = torch.empty_like(tensor, device="meta")
                    if isinstance(tensor, torch.nn.Parameter):
                        meta = torch.nn.Parameter(
                            meta, requires_grad=tensor.requires_grad)
                    made[id(tensor)] = meta
                table[name] = made[id(tensor)]
    return clone


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


def _record(module, example_input):
    """Run one forward pass with hooks; return the layer entries."""
    torch = _torch()
    layers, skip = _layer_modules(module)
    recorder = _Recorder()
    handles = [m.register_forward_pre_hook(recorder.enter_layer)
               for m in layers]
    handles += [m.register_forward_hook(recorder.on_layer) for m in layers]
    handles += [m.register_forward_pre_hook(recorder.on_container)
                for m in _containers_with_own_tensors(module, layers, skip)]
    was_training = module.training
    # Train mode: the layers a training step runs (dropout, auxiliary heads)
    # are the ones to describe. Batch norm alone runs in eval mode: its
    # output shape is the same, and with one sample its train-mode statistics
    # are undefined wherever a feature map is 1x1 (EfficientNet on CIFAR).
    module.train()
    for mod in module.modules():
        if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm):
            mod.eval()
    try:
        with torch.no_grad(), _function_mode(recorder):
            if isinstance(example_input, dict):
                module(**example_input)
            elif isinstance(example_input, (tuple, list)):
                module(*example_input)
            else:
                module(example_input)
    finally:
        for handle in handles:
            handle.remove()
        module.train(was_training)
    return recorder.layers


def _check_one_sample(example_input):
    tensors = list(_tensors_in(example_input))
    if not tensors:
        raise DescribeError("example_input holds no tensor")
    if tensors[0].dim() == 0 or tensors[0].shape[0] != 1:
        raise DescribeError(
            "example_input must hold ONE sample (leading batch dimension 1), "
            "got shape %s" % (tuple(tensors[0].shape),))
    return sum(t.numel() for t in tensors)


def _check_choice(name, value, choices):
    if value not in choices:
        raise DescribeError("%s %r is not one of: %s"
                            % (name, value, ", ".join(choices)))


def describe(module, example_input, batch_size, optimizer="adam",
             precision="fp32", model=None, input_elements=None, source=None,
             device="auto"):
    """Return the aegis-model/1 description (a dict) of a torch nn.Module.

    example_input: what module(...) takes for ONE sample (a tensor, a tuple of
    positional tensors or a dict of keyword tensors, leading dimension 1).
    device: "meta" runs the pass on meta tensors (a tie-preserving copy of the
    module when it is not already on meta), "cpu" runs it as given, "auto"
    tries meta and falls back to CPU when the forward pass needs real values.
    input_elements defaults to the elements of example_input (tokens for
    text). The module itself is left unchanged."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise DescribeError("batch_size must be an integer >= 1, got %r"
                            % (batch_size,))
    _check_choice("optimizer", optimizer, OPTIMIZERS)
    _check_choice("precision", precision, PRECISIONS)
    _check_choice("device", device, DEVICES)
    sample_elements = _check_one_sample(example_input)
    if input_elements is None:
        input_elements = sample_elements
    layers = None
    if device in ("auto", "meta"):
        runner = module if _is_meta(module) else _meta_copy(module)
        meta_input = _map_tensors(example_input,
                                  lambda t: t.to("meta"))
        try:
            layers = _record(runner, meta_input)
        except (NotImplementedError, RuntimeError, ValueError) as err:
            if device == "meta" or _is_meta(module):
                raise DescribeError("the forward pass does not run on the "
                                    "meta device: %s" % err) from err
    if layers is None:
        cpu_input = _map_tensors(example_input, lambda t: t.to("cpu"))
        layers = _record(module, cpu_input)
    desc = {"format": FORMAT,
            "model": model if model is not None else type(module).__name__,
            "batch_size": batch_size,
            "optimizer": optimizer,
            "precision": precision,
            "input_elements": int(input_elements)}
    if source:
        desc["source"] = source
    desc["layers"] = layers
    return desc


def example_input_for(spec, input_shape=None, seq_len=None, device="meta"):
    """The one-sample input a model spec takes: an image tensor
    (1, C, H, W) or a row of token ids (1, N)."""
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
    shape = input_shape if input_shape is not None else spec.input_shape
    return torch.zeros((1,) + tuple(shape), device=device)


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
    ("eager" or "fused") applies to the transformer builders only."""
    import aegis_models
    _check_choice("device", device, DEVICES)
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
                            *args, model=name, source=source, device="cpu")
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
        [--input-shape C,H,W | --seq-len N] [--num-classes N]
        [--attention eager|fused] [--device auto|meta|cpu] [-o FILE]
    /usr/bin/python3 python/aegis_describe.py --list [--json]

DESCRIPTION
    Builds MODEL, runs one forward pass on a single sample with a forward
    hook on every leaf module, and writes the model description JSON
    (format aegis-model/1) that `aegis estimate` reads: per layer, in forward
    order, the torch.nn class name, the output elements for one sample and
    the trainable parameter elements (shared weights counted once, at first
    use; non-trainable tensors such as batch-norm statistics as "buffers").

    MODEL is a builder of python/aegis_models.py (bert_base, bert_large,
    gpt2_large, gpt2_xl, xlnet_base, xlnet_large, llama3_width_8layer,
    xception, unet_resnet34, mnist_cnn) or a torchvision classification or
    segmentation model name (resnet50, vgg16, efficientnet_b0, ...).
    --list prints them all with their default input, optimizer, precision
    and attention kind.

    The pass runs on the meta device (shapes only: no memory, milliseconds)
    and falls back to a CPU pass with batch 1 when the model needs real
    values. Functional steps that a container's forward calls between its
    modules (torch.cat, +, F.avg_pool2d, F.relu, F.interpolate, ...) are
    layers too, named by the function; views, constants and in-place calls
    are not.

OPTIONS
    --batch-size B      Per-GPU batch size written to the description
                        (integer >= 1). Required.
    --optimizer NAME    sgd, sgd_momentum, adam, adamw, rmsprop or adagrad.
                        Default: the model's catalog optimizer (torchvision
                        models: adam).
    --precision NAME    fp32, amp_fp16, amp_bf16, fp16 or bf16. Default: the
                        model's catalog precision (fp32, llama3: bf16).
    --input-shape C,H,W Image size of one sample for image models (default
                        3,224,224; inception_v3 3,299,299; mnist_cnn 1,28,28).
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
    -o, --output FILE   Write the JSON to FILE instead of standard output.
    --list              List the model names and exit: name, default input,
                        optimizer, precision, attention kind, what it is.
    --json              With --list: one JSON object per model and line.
    -h, --help          Show this manual and exit.

EXIT STATUS
    0 on success, 1 when the output cannot be written, 2 for bad usage or
    bad input (an unknown model, a bad option value, a model whose forward
    pass fails on the given input).

EXAMPLES
    python/aegis_describe.py resnet50 --batch-size 32 -o resnet50.json
    python/aegis_describe.py resnet18 --batch-size 64 --num-classes 100 \\
        --input-shape 3,32,32 --optimizer adamw
    python/aegis_describe.py gpt2_xl --batch-size 2 --seq-len 512

    From Python, for any nn.Module:
        import aegis_describe
        desc = aegis_describe.describe(model, torch.zeros(1, 3, 224, 224),
                                       batch_size=32, optimizer="sgd")
        open("m.json", "w").write(aegis_describe.to_json(desc))
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


def _shape(text):
    try:
        dims = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            "%r is not C,H,W (three integers)" % text)
    if len(dims) != 3 or min(dims) < 1:
        raise argparse.ArgumentTypeError(
            "%r is not C,H,W (three integers >= 1)" % text)
    return dims


def _parse(argv):
    parser = _Parser(prog="aegis_describe.py", add_help=True)
    parser.add_argument("model", nargs="?")
    parser.add_argument("--batch-size", type=_positive_int)
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
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
