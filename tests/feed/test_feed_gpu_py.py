"""CUDA IPC through the Python module, on a machine with a GPU: exits 77
(ctest: skipped) without torch, without CUDA in torch, or without a GPU.

The parent publishes dicts of torch CUDA tensors through a 3-slot ring
(ahead 2, plus one for an epoch marker); consumer processes (this file, run with `consume NAME BATCH_SIZE`) must get
torch CUDA tensors that are views of one mapping (no copy) with the right
values, and a numpy consumer of the feed must get a clear error."""
import json
import os
import subprocess
import sys

try:
    import torch
except ImportError:
    print("skipped: no torch")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: torch sees no GPU")
    sys.exit(77)

import aegis_feed

ROWS, BATCHES, EPOCHS = 128, 6, 2


def loader():
    dev = torch.device("cuda", 0)
    return [{"x": torch.full((ROWS, 3), float(i), device=dev),
             "ids": torch.arange(ROWS, device=dev) + i * ROWS,
             "host": torch.arange(ROWS) + i * ROWS}
            for i in range(BATCHES)]


def consume(name, batch_size):
    """Child: report ids per epoch, devices, and whether views alias."""
    c = aegis_feed.Consumer(name=name, batch_size=batch_size)
    report = {"epochs": [], "devices": set(), "aliased": True, "ok": True}
    for _ in range(EPOCHS):
        seen, prev_end = [], None
        for b in c:
            x, ids = b["x"], b["ids"]
            report["devices"].update({x.device.type, ids.device.type,
                                      b["host"].device.type})
            if prev_end is not None and int(ids[0]) % ROWS:
                report["aliased"] &= ids.data_ptr() == prev_end
            prev_end = ids.data_ptr() + ids.numel() * ids.element_size()
            report["ok"] &= bool(torch.all(x[:, 0].long() == ids // ROWS))
            report["ok"] &= bool(torch.equal(ids.cpu(), b["host"]))
            seen.extend(ids.tolist())
        report["epochs"].append(sorted(seen))
    report["devices"] = sorted(report["devices"])
    print(json.dumps(report))


def test_torch_cuda_round_trip(name):
    producer = aegis_feed.Producer(loader(), name=name, ahead=2, slots=2,
                                   min_consumers=2)
    kids = [subprocess.Popen([sys.executable, __file__, "consume", name,
                              str(bs)], stdout=subprocess.PIPE, text=True)
            for bs in (32, 0)]
    next(producer)  # the first batch creates the feed
    try:
        aegis_feed.Consumer(name=name, as_torch=False, timeout=5)
    except aegis_feed.FeedError as e:
        assert "numpy cannot read GPU memory" in str(e), e
    else:
        raise AssertionError("a numpy consumer attached to a CUDA feed")
    while True:  # the rest of epoch 0
        try:
            next(producer)
        except StopIteration:
            break
    producer.run(EPOCHS - 1)
    producer.close()
    for kid in kids:
        out, _ = kid.communicate(timeout=120)
        assert kid.returncode == 0
        report = json.loads(out)
        assert report["ok"] and report["aliased"], report
        assert report["devices"] == ["cpu", "cuda"], report["devices"]
        for ids in report["epochs"]:
            assert ids == list(range(ROWS * BATCHES))


def main():
    if sys.argv[1:2] == ["consume"]:
        consume(sys.argv[2], int(sys.argv[3]))
        return
    name = "pygpu%d" % os.getpid()
    test_torch_cuda_round_trip(name)
    leaked = [f for f in os.listdir("/dev/shm") if name in f]
    assert not leaked, leaked
    print("ok test_torch_cuda_round_trip")


if __name__ == "__main__":
    main()
