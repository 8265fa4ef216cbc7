"""One whole-number check for every Python module (python/aegis_checks.py).

Each module had its own copy: aegis_feed said "combine 1.5: a whole
number, at least 1", aegis_downsample "Loss.ratio: 50.5 is not a whole
number", aegis_describe "batch_size must be an integer from 1 to 1000000,
got 2.5 (float)", aegis_pipeline "TrainingSet: seed must be a whole number
>= 0, not 2.5"; and they took different things: the pipeline's seed took
True, the feed's batch_size numpy's True_, the pipeline's seed and the
downsampler's thresholds only int and numpy's integers. Every argument
below is now refused, or taken, the same way, in the same words:

    NAME: VALUE is not a whole number (type T); it must be SPAN (NOTE)
    NAME: VALUE is out of range; it must be SPAN (NOTE)

ctest runs it with /usr/bin/python3, PYTHONPATH naming build/python (the
feed's extension) and python/; exit 77 (skip) without numpy or torch."""
import os
import sys

try:
    import numpy as np
    import torch
except ImportError:
    sys.exit(77)

import aegis_describe
import aegis_downsample
import aegis_feed
import aegis_pipeline
import aegis_tensorsocket

NOT_WHOLE = (2.5, "3", True, np.True_, [1])


def span(lo, hi):
    if hi is None:
        return "at least %d" % lo
    return "from %d to %d" % (lo, hi)


def not_whole(name, value, lo, hi, note=None):
    return "%s: %r is not a whole number (type %s); it must be %s%s" % (
        name, value, type(value).__name__, span(lo, hi),
        " (%s)" % note if note else "")


def out_of_range(name, value, lo, hi, note=None):
    return "%s: %r is out of range; it must be %s%s" % (
        name, value, span(lo, hi), " (%s)" % note if note else "")


def loader():
    return [(torch.zeros(4), torch.arange(4))]


class TinyModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.fc(x)


def training_set():
    """A TrainingSet without its files, for set_epoch."""
    return aegis_pipeline.TrainingSet.__new__(aegis_pipeline.TrainingSet)


FEED = "aegis-checks-%d" % os.getpid()
DT, DV = aegis_describe.DescribeTypeError, aegis_describe.DescribeValueError
MAX_BATCH = aegis_describe.MAX_BATCH_SIZE
BATCH_NOTE = "the largest batch aegis estimate takes"
# (name in the message, lo, hi, note, call(value), error for a value that
# is no whole number, error for one out of range)
ARGUMENTS = [
    ("combine", 1, None, None,
     lambda v: aegis_feed.Producer(loader(), name=FEED, combine=v),
     ValueError, ValueError),
    ("batch_size", 0, 2 ** 32 - 1, "0: whole producer batches",
     lambda v: aegis_feed.Consumer(name=FEED, batch_size=v, timeout=0),
     ValueError, ValueError),
    ("producer_batch_size", 1, None, None,
     lambda v: aegis_tensorsocket.TensorProducer(
         loader(), port=FEED, producer_batch_size=v),
     ValueError, ValueError),
    ("consumer_max_buffer_size", 1, None, None,
     lambda v: aegis_tensorsocket.TensorProducer(
         loader(), port=FEED, consumer_max_buffer_size=v),
     ValueError, ValueError),
    ("Loss.ratio", 0, 100, None, lambda v: aegis_downsample.Loss(v),
     ValueError, ValueError),
    ("Loss.ratio_max", 1, None, None,
     lambda v: aegis_downsample.Loss(0, v), ValueError, ValueError),
    ("set_epoch.epoch", 0, None, None,
     lambda v: aegis_downsample.Loss(50).set_epoch(v),
     ValueError, ValueError),
    ("downsampling_config.period", 0, None, None,
     lambda v: aegis_downsample.make({"strategy": "Loss", "ratio": 50,
                                      "period": v}),
     ValueError, ValueError),
    ("batch_size", 1, MAX_BATCH, BATCH_NOTE,
     lambda v: aegis_describe.describe_builder("resnet18", v), DT, DV),
    ("batch_size", 1, MAX_BATCH, BATCH_NOTE,
     lambda v: aegis_describe.describe(TinyModel(), torch.zeros(1, 2), v),
     DT, DV),
    ("input_elements", 0, aegis_describe.MAX_INPUT_ELEMENTS, None,
     lambda v: aegis_describe.describe(TinyModel(), torch.zeros(1, 2), 1,
                                       input_elements=v), DT, DV),
    ("seq_len", 1, None, None,
     lambda v: aegis_describe.describe_builder("gpt2_xl", 1, seq_len=v),
     DT, DV),
    ("num_classes", 1, None, None,
     lambda v: aegis_describe.describe_builder("resnet18", 1, num_classes=v),
     DT, DV),
    ("input_shape[1]", 1, None, None,
     lambda v: aegis_describe.describe_builder("resnet18", 1,
                                               input_shape=(3, v, 32)),
     DT, DV),
    ("TrainingSet: seed", 0, None, None,
     lambda v: aegis_pipeline.TrainingSet("/nonexistent/trainset",
                                          "/nonexistent/dataset", seed=v),
     ValueError, ValueError),
    ("set_epoch: epoch", 0, None, None,
     lambda v: training_set().set_epoch(v), ValueError, ValueError),
]


def said(call, value, error):
    """What call(value) raised (its class must be error), or why not."""
    try:
        call(value)
    except error as e:
        return str(e)
    except Exception as e:  # noqa: BLE001 -- reported, not hidden
        return "%s, not %s: %s" % (type(e).__name__, error.__name__, e)
    return "taken"


def test_the_same_words_everywhere():
    wrong = []
    for name, lo, hi, note, call, type_error, range_error in ARGUMENTS:
        cases = [(v, type_error, not_whole(name, v, lo, hi, note))
                 for v in NOT_WHOLE]
        for v in (lo - 1, np.int64(lo - 1)) + \
                 (() if hi is None else (hi + 1, 10 ** 30)):
            cases.append((v, range_error,
                          out_of_range(name, v, lo, hi, note)))
        for value, error, want in cases:
            got = said(call, value, error)
            if got != want:
                wrong.append("%s=%r:\n    want %s\n    got  %s"
                             % (name, value, want, got))
    assert not wrong, "\n".join(["%d refusals differ:" % len(wrong)] + wrong)


def test_what_is_taken():
    """numpy's integers are whole numbers everywhere (the downsampler's
    thresholds took only int), a bool nowhere."""
    configs = [{"strategy": "Loss", "ratio": 50}] * 2
    got = aegis_downsample.config_in_force(
        {"downsampling_list": configs,
         "downsampling_thresholds": [np.int64(5)]}, 0)
    assert got == configs[0], got
    assert aegis_downsample.Loss(np.int64(50), np.int32(100)).ratio == 50
    ts = training_set()
    ts.set_epoch(np.uint8(3))
    assert ts.epoch == 3 and type(ts.epoch) is int
    # and go on as ints: the source said "--input-shape 3,tensor(32),32",
    # a command that cannot run
    desc = aegis_describe.describe_builder(
        "resnet18", 1, input_shape=(3, torch.tensor(32), 32),
        num_classes=np.int64(10))
    assert desc["source"].endswith("--num-classes 10 --input-shape 3,32,32"), \
        desc["source"]


def test_one_module():
    """The checks are aegis_checks's, not a copy in the module at hand."""
    import aegis_checks
    for module in (aegis_feed, aegis_tensorsocket, aegis_downsample,
                   aegis_describe, aegis_pipeline):
        assert module.aegis_checks is aegis_checks, module.__name__


def main():
    failed = 0
    for test in (test_the_same_words_everywhere, test_what_is_taken,
                 test_one_module):
        try:
            test()
        except Exception as e:  # noqa: BLE001 -- every test reports
            failed += 1
            print("%s: FAILED: %s: %s" % (test.__name__, type(e).__name__, e))
        else:
            print("%s: ok" % test.__name__)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
