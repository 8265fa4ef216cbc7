"""bench_feed.py -- what sharing one data pipeline buys collocated jobs.

N consumer processes each train a small CNN on CPU (torch, one thread) on
an ImageNet-like pipeline: JPEG decode of ~500x375 images (generated here),
RandomResizedCrop(224), flip, normalize, with PIL. The setups run in the
same run, one after the other:
  independent  each job has its own torch DataLoader
  aegis feed   one aegis_feed Producer runs the DataLoader once; the jobs
               are aegis_feed Consumers
  tensorsocket the same with TensorSocket's TensorProducer/TensorConsumer,
               imported from the checkout given with --tensorsocket PATH
               (it needs zmq and tornado); a shared setup that outlasts
               --setup-timeout (default: 3 times the independent one,
               at least 300 s) is killed and reported as hung
For each: aggregate samples/s with process start-up included (all samples
trained over the time from starting the processes to the last one's exit),
the same in steady state (from the moment every job has finished its first
batch to the moment the first job ends), and CPU-seconds per epoch (all
processes, producer and start-up included). The same run measures the CPU
cost per sample of loading alone (L) and training alone (T); sharing can at
best reach N(L+T)/(L+NT) times the independent throughput: the ceiling,
printed last with each shared setup's ratio to it (goal for the aegis feed,
start-up included: >= 0.80).

  /usr/bin/python3 bench/feed/bench_feed.py [--images 4096] [--epochs 1]
      [--tensorsocket PATH]
  (PYTHONPATH must name build/python; cmake target bench-feed does this)
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

BATCH = 32
CLASSES = 10


def make_images(folder, count):
    """JPEGs of about 500x375 with photo-like content: smooth gradients,
    shapes and noise, so decode cost is close to a real photo's."""
    import numpy as np
    from PIL import Image, ImageDraw
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for i in range(count):
        path = os.path.join(folder, "img%05d.jpg" % i)
        paths.append(path)
        if os.path.exists(path):
            continue
        w, h = int(rng.integers(440, 560)), int(rng.integers(330, 420))
        yy, xx = np.mgrid[0:h, 0:w]
        base = np.stack([(xx * rng.uniform(0.2, 0.6) + yy * rng.uniform(0, .4)
                          + rng.uniform(0, 255)) % 256 for _ in range(3)], -1)
        noise = rng.normal(0, 18, size=(h, w, 3))
        img = Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8))
        draw = ImageDraw.Draw(img)
        for _ in range(12):
            x0, y0 = int(rng.integers(0, w)), int(rng.integers(0, h))
            draw.ellipse([x0, y0, x0 + int(rng.integers(20, 150)),
                          y0 + int(rng.integers(20, 150))],
                         fill=tuple(int(c) for c in rng.integers(0, 255, 3)))
        img.save(path, quality=90)
    return paths


def make_loader(paths, seed):
    import torch
    from PIL import Image
    from torchvision import transforms
    tf = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])

    class Jpegs(torch.utils.data.Dataset):
        def __len__(self):
            return len(paths)

        def __getitem__(self, i):
            with Image.open(paths[i]) as im:
                return tf(im.convert("RGB")), i % CLASSES, i

    g = torch.Generator()
    g.manual_seed(seed)
    return torch.utils.data.DataLoader(Jpegs(), batch_size=BATCH,
                                       shuffle=True, num_workers=0,
                                       generator=g)


def make_model():
    import torch.nn as nn
    return nn.Sequential(
        nn.Conv2d(3, 16, 5, stride=4, padding=2), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, CLASSES))


class Trainer:
    def __init__(self):
        import torch
        self.torch = torch
        self.model = make_model()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.loss = torch.nn.CrossEntropyLoss()

    def step(self, x, y):
        self.opt.zero_grad()
        self.loss(self.model(x), y).backward()
        self.opt.step()


def import_tensorsocket(path):
    """TensorSocket's classes from the checkout at path, never aegis's
    stand-in that PYTHONPATH may also hold."""
    sys.path.insert(0, os.path.abspath(path))
    from tensorsocket.consumer import TensorConsumer
    from tensorsocket.producer import TensorProducer
    import tensorsocket
    if getattr(tensorsocket, "AEGIS_COMPAT", False):
        raise ImportError("%s holds no tensorsocket package" % path)
    return TensorProducer, TensorConsumer


def shared_loader(args):
    """The consumer side of a shared setup: an iterable of (x, y, ids)."""
    if args.mode == "feed":
        import aegis_feed
        return aegis_feed.Consumer(name=args.feed, as_torch=True)
    _, consumer = import_tensorsocket(args.tensorsocket)
    return consumer(args.port, args.port + 1, batch_size=BATCH)


def produce(args, loader):
    if args.mode == "producer":
        import aegis_feed
        producer = aegis_feed.Producer(loader, name=args.feed,
                                       min_consumers=args.consumers, ahead=4)
        producer.run(args.epochs)
        producer.close()
        return
    producer_class, _ = import_tensorsocket(args.tensorsocket)
    producer = producer_class(loader, args.port, args.port + 1,
                              producer_batch_size=1)
    for _ in range(args.epochs):
        for _ in producer:
            pass
    producer.join()


def worker(args):
    """One process of a setup; talks to the parent over stdin/stdout."""
    import torch
    torch.set_num_threads(1)
    paths = make_images(args.folder, args.images)
    mode = args.mode
    producing = mode in ("producer", "ts-producer")
    loader = make_loader(paths, seed=os.getpid()) \
        if mode not in ("feed", "ts-feed") else None
    trainer = Trainer() if not producing else None
    print("ready", flush=True)
    sys.stdin.readline()  # go
    cpu0 = time.process_time()
    stamps = []  # (monotonic time, samples so far) after each batch
    samples = 0
    if producing:
        produce(args, loader)
    else:
        if loader is None:
            loader = shared_loader(args)
        for _ in range(args.epochs):
            for x, y, _ in loader:
                trainer.step(x, y)
                samples += len(y)
                stamps.append((time.monotonic(), samples))
    print(json.dumps({"cpu": time.process_time() - cpu0, "stamps": stamps}),
          flush=True)


def spawn(args, mode):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", mode,
           "--images", str(args.images), "--epochs", str(args.epochs),
           "--folder", args.folder, "--feed", args.feed,
           "--consumers", str(args.consumers), "--port", str(args.port)]
    if args.tensorsocket:
        cmd += ["--tensorsocket", args.tensorsocket]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    return p


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def stop(procs):
    for p in procs:
        p.kill()
        p.communicate()


def finish(procs, t0, timeout):
    """Each worker's report (its last line: TensorSocket prints on stdout
    too), or why there is none (every worker killed) if one failed or the
    setup outlasted the deadline."""
    reports = []
    for p in procs:
        try:
            left = t0 + timeout - time.monotonic()
            out, _ = p.communicate(timeout=max(1, left))
        except subprocess.TimeoutExpired:
            stop(procs)
            return "hung: killed after %d s" % timeout
        if p.returncode != 0:
            stop(procs)
            return "failed: %s exited %d" % (p.args[3], p.returncode)
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def run_setup(args, modes, timeout):
    """(samples/s with start-up, samples/s steady, CPU-s per epoch, wall
    seconds), or why not (a string) if the setup failed or outlasted
    timeout seconds."""
    cpu0, t0 = children_cpu(), time.monotonic()
    procs = [spawn(args, m) for m in modes]
    for p in procs:  # everyone built its model and loader
        if p.stdout.readline().strip() != "ready":
            stop(procs)
            return "failed: %s did not start" % p.args[3]
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    reports = finish(procs, t0, timeout)
    if isinstance(reports, str):
        return reports
    wall = time.monotonic() - t0
    trainers = [r["stamps"] for r in reports if r["stamps"]]
    t_start = max(s[0][0] for s in trainers)
    t_end = min(s[-1][0] for s in trainers)
    done = 0
    for s in trainers:
        at_start = max((n for t, n in s if t <= t_start), default=0)
        at_end = max((n for t, n in s if t <= t_end), default=0)
        done += at_end - at_start
    # no steady state when a job ends before the last one starts (tiny runs)
    steady = done / (t_end - t_start) if t_end > t_start else float("nan")
    total = sum(s[-1][1] for s in trainers)
    cpu_per_epoch = (children_cpu() - cpu0) / args.epochs
    return total / wall, steady, cpu_per_epoch, wall


def cost_per_sample(args):
    """L and T: CPU seconds per sample of loading alone, training alone."""
    import torch
    torch.set_num_threads(1)
    paths = make_images(args.folder, args.images)
    loader = make_loader(paths, seed=1)
    batches, n = [], 0
    cpu0 = time.process_time()
    for x, y, _ in loader:
        batches.append((x, y))
        n += len(y)
        if n >= args.probe:
            break
    load = (time.process_time() - cpu0) / n
    trainer = Trainer()
    trainer.step(*batches[0])  # first step allocates
    cpu0 = time.process_time()
    for x, y in batches:
        trainer.step(x, y)
    train = (time.process_time() - cpu0) / n
    return load, train


def report(label, result):
    if isinstance(result, str):
        print("%-13s %s" % (label + ":", result))
        return
    print("%-13s %7.1f samples/s (start-up included), %7.1f steady; "
          "%6.1f CPU-s/epoch" % ((label + ":",) + result[:3]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--images", type=int, default=4096,
                    help="JPEGs in the data set, an epoch's samples "
                         "(default: %(default)s)")
    ap.add_argument("--epochs", type=int, default=1,
                    help="epochs each job trains (default: %(default)s)")
    ap.add_argument("--consumers", type=int, default=4,
                    help="training jobs N in each setup "
                         "(default: %(default)s)")
    ap.add_argument("--probe", type=int, default=160,
                    help="samples used to measure L and T "
                         "(default: %(default)s)")
    ap.add_argument("--folder", default="/tmp/aegis-feed-bench-images",
                    help="where the generated JPEGs are kept, and reused "
                         "by later runs (default: %(default)s)")
    ap.add_argument("--feed", default="bench-%d" % os.getpid(),
                    help="name of the shared aegis feed (default: "
                         "bench-PID)")
    ap.add_argument("--port", type=int, default=27000 + os.getpid() % 10000,
                    help="TensorSocket's data port; it also uses the next "
                         "one (default: 27000 + PID %% 10000)")
    ap.add_argument("--tensorsocket", metavar="PATH",
                    help="a TensorSocket checkout to run in the same "
                         "harness (default: none, that setup is skipped)")
    ap.add_argument("--setup-timeout", type=int,
                    help="seconds a shared setup may run before it counts "
                         "as hung (default: 3 x the independent one's, at "
                         "least 300)")
    ap.add_argument("--latency-bin", metavar="PATH",
                    help="the feed-latency binary, run last over 2000 "
                         "batches (default: not run)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.mode = args.worker
        return worker(args)

    make_images(args.folder, args.images)
    n = args.consumers
    print("bench_feed: %d jobs, %d images, batch %d, %d epochs, %d CPUs"
          % (n, args.images, BATCH, args.epochs, os.cpu_count()))
    load, train = cost_per_sample(args)
    print("L (load alone)  %.2f ms CPU/sample" % (load * 1e3))
    print("T (train alone) %.2f ms CPU/sample" % (train * 1e3))
    setups = [("independent", ["loader"] * n),
              ("aegis feed", ["producer"] + ["feed"] * n)]
    if args.tensorsocket:
        try:
            import_tensorsocket(args.tensorsocket)
            setups.append(("tensorsocket", ["ts-producer"] + ["ts-feed"] * n))
        except ImportError as e:
            print("tensorsocket: not run: %s" % e)
    else:
        print("tensorsocket: skipped (no checkout given: --tensorsocket PATH)")
    results = {}
    timeout = args.setup_timeout or 24 * 3600
    for label, modes in setups:
        results[label] = run_setup(args, modes, timeout)
        report(label, results[label])
        if label == "independent" and not isinstance(results[label], str) \
                and not args.setup_timeout:
            timeout = max(300, 3 * int(results[label][3]))
    ceiling = n * (load + train) / (load + n * train)
    print("sharing ceiling N(L+T)/(L+NT) = %.2f x independent" % ceiling)
    indep = results["independent"]
    for label, result in results.items():
        if label == "independent" or isinstance(indep, str) or \
                isinstance(result, str):
            continue
        ratio = result[0] / indep[0]
        goal = " (goal >= 0.80)" if label == "aegis feed" else ""
        print("%s/independent %.2f, of the ceiling %.2f%s; steady %.2f"
              % (label, ratio, ratio / ceiling, goal, result[1] / indep[1]))
    if args.latency_bin:
        out = subprocess.run([args.latency_bin, "2000"], check=True,
                             capture_output=True, text=True).stdout
        print(out.strip() + " (goal < 50 us)")


if __name__ == "__main__":
    main()
