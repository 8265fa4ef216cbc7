#!/usr/bin/env python3
"""bench_scale.py -- one aegisd with a long queue, against a short one.

  bench_scale.py AEGISD AEGIS TESTNVML FAKEGPU [--jobs N] [--ref N]
                 [--users N] [--submits N] [--runs N]
  (cmake target bench-scale runs it)

aegisd runs on 16 test GPUs, each held by one running job of 30000 MiB
(of 40960), and a queue of --jobs jobs (100,000 by default) from --users
users (500): each asks 12 to 24 GB on one or two GPUs, which fits beside
no running job, so the queue only grows, as on a busy server where every
GPU is taken. The users are uids 200000 on, with no login, that the
benchmark submits as (setpriv, as root: aegisd takes a client's uid from
the socket). The same is measured with a queue of --ref jobs (1,000), on
a fresh aegisd, and each figure printed as a ratio against it:

- the scheduling pass's p99, from the aegis_scheduling_pass_seconds
  histogram of /metrics over the measuring (as Prometheus'
  histogram_quantile reads it: interpolated within its bucket); every
  submit runs a pass, and so does each second's tick. Goal: <= 10x;
- the wall time of `aegis ls` and `aegis ls --all` (root's, which shows
  every job's command), text to /dev/null, median of --runs: <= 20x.
  So does `aegis ls -u USER` of the last user, whose jobs are the last
  queued (aegisd finds them through its index on users, before the
  limit).
  They list 1000 jobs at most (ls's default --limit); the time of the
  whole list, `aegis ls --limit 0`, is printed too, once, without a goal;
- one-job submits per second, each a fresh `aegis submit` of root's,
  --submits of them in a row: >= 0.5x;
- aegisd's resident memory (VmRSS) at the end: <= 20x.

It exits 1 when a goal is missed.
"""
import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

# the /metrics benchmarks' helpers: free_port()
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "metrics"))
from aegisd_run import free_port  # noqa: E402

GPUS = 16
GPU_MIB = 40960
HOG_MIB = 30000
UID0 = 200000
HIST = "aegis_scheduling_pass_seconds_bucket"
# aegisd serves one rendering of /metrics for this long (metrics_cache_s,
# set to its least): the histogram is read once it has passed, so that it
# counts every pass before the read
CACHE_S = 0.1


def histogram(url):
    """The pass histogram's cumulative counts by upper bound."""
    time.sleep(2 * CACHE_S)
    with urllib.request.urlopen(url, timeout=600) as r:
        text = r.read().decode()
    buckets = {}
    for m in re.finditer(HIST + r'\{le="([^"]+)"\} (\S+)', text):
        buckets[float(m.group(1))] = float(m.group(2))
    if not buckets:
        raise SystemExit("bench-scale: no " + HIST + " in /metrics")
    return buckets


def quantile(q, before, after):
    """The q quantile of the passes between two histograms, interpolated
    within its bucket as Prometheus' histogram_quantile does."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0) for b in bounds]
    total = counts[-1]
    if total <= 0:
        return float("nan"), 0
    rank, lower, below = q * total, 0.0, 0.0
    for b, c in zip(bounds, counts):
        if c >= rank:
            if b == float("inf"):
                return lower, total
            return lower + (b - lower) * (rank - below) / (c - below), total
        lower, below = b, c
    return lower, total


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Server:
    """A fresh aegisd in its own folder, its GPUs held by HOG_MIB jobs."""

    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="aegis-bench-scale-")
        os.chmod(self.tmp, 0o755)
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/metrics"
        self.env = dict(os.environ, AEGIS_SOCKET=f"{self.tmp}/aegis.sock",
                        AEGIS_TEST_GPUS=f"{GPUS}x{GPU_MIB}",
                        AEGIS_TEST_GPU_DIR=f"{self.tmp}/gpu",
                        AEGIS_NVML_LIBRARY=a.nvml)
        os.mkdir(f"{self.tmp}/gpu", 0o777)
        os.chmod(f"{self.tmp}/gpu", 0o777)
        with open(f"{self.tmp}/aegis.yaml", "w") as f:
            f.write(f"window_samples: 2\nobserve_s: 1\n"
                    f"metrics_listen: 127.0.0.1:{port}\n"
                    f"metrics_cache_s: {CACHE_S}\n")
        subprocess.run([a.aegisd, "--socket", self.env["AEGIS_SOCKET"],
                        "--state-dir", f"{self.tmp}/state", "--config",
                        f"{self.tmp}/aegis.yaml"], env=self.env, check=True)
        self.pid = int(open(f"{self.tmp}/state/aegisd.lock").read())

    def aegis(self, *args, uid=None):
        pre = [] if uid is None else ["setpriv", f"--reuid={uid}",
                                      f"--regid={uid}", "--clear-groups"]
        return subprocess.run([*pre, self.a.aegis, *args], env=self.env,
                              cwd=self.tmp, check=True, capture_output=True,
                              text=True).stdout

    def hold_gpus(self):
        """Every GPU runs one job of HOG_MIB, seen active."""
        self.aegis("submit", "--mem", str(HOG_MIB), "--array",
                   f"0-{GPUS - 1}", "--", self.a.fake, "--mib", str(HOG_MIB),
                   "--smact", "0.02", "--seconds", "86400")
        deadline = time.time() + 120
        while time.time() < deadline:
            ls = self.aegis("ls", "--json")
            if ls.count('"active":true') == GPUS:
                return
            time.sleep(0.2)
        raise SystemExit("bench-scale: the GPUs' jobs never all ran")

    def queue(self, jobs, users):
        """jobs queued jobs, spread over users users: one array submit each."""
        for u in range(users):
            n = jobs // users + (u < jobs % users)
            if n == 0:
                continue
            mib = 12000 + 4000 * (u % 4)
            gpus = 2 if u % 5 == 0 else 1
            self.aegis("submit", "--mem", str(mib), "--gpus", str(gpus),
                       "--array", f"0-{n - 1}", "--", self.a.fake, "--mib",
                       str(mib), "--seconds", "60", uid=UID0 + u)

    def stop(self):
        """No queued job may start once the GPUs' jobs end: all drained."""
        try:
            for g in range(GPUS):
                self.aegis("drain", str(g))
            ids = [str(i) for i in range(1, GPUS + 1)]
            self.aegis("cancel", *ids)
            subprocess.run([self.a.aegis, "wait", *ids], env=self.env,
                           capture_output=True, timeout=120)
        finally:
            os.kill(self.pid, signal.SIGTERM)
            shutil.rmtree(self.tmp, ignore_errors=True)


def timed(fn, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(a, jobs):
    """The figures of one aegisd with jobs queued."""
    s = Server(a)
    try:
        s.hold_gpus()
        t0 = time.time()
        s.queue(jobs, a.users)
        filled = time.time() - t0
        queued = s.aegis("ls", "--json").count('"state":"queued"')
        before = histogram(s.url)
        t0 = time.perf_counter()
        for i in range(a.submits):
            s.aegis("submit", "--mem", "20000", "--", a.fake, "--mib",
                    "20000", "--seconds", "60")
        rate = a.submits / (time.perf_counter() - t0)
        ls = timed(lambda: s.aegis("ls"), a.runs)
        ls_all = timed(lambda: s.aegis("ls", "--all"), a.runs)
        last = str(UID0 + a.users - 1)  # its jobs: the last ids queued
        ls_user = timed(lambda: s.aegis("ls", "-u", last), a.runs)
        p99, passes = quantile(0.99, before, histogram(s.url))
        rss = rss_mib(s.pid)
        whole = timed(lambda: s.aegis("ls", "--limit", "0"), 1)
        return {"queued": queued, "filled_s": filled, "passes": passes,
                "p99": p99, "ls": ls, "ls_all": ls_all, "ls_user": ls_user,
                "rate": rate,
                "rss": rss, "whole": whole}
    finally:
        s.stop()


ROWS = [  # key, label, unit, scale, goal as (<=|>=, ratio)
    ("p99", "scheduling pass p99", "ms", 1e3, ("<=", 10)),
    ("ls", "aegis ls", "s", 1, ("<=", 20)),
    ("ls_all", "aegis ls --all", "s", 1, ("<=", 20)),
    ("ls_user", "aegis ls -u USER", "s", 1, ("<=", 20)),
    ("rate", "submits per second", "/s", 1, (">=", 0.5)),
    ("rss", "aegisd RSS", "MiB", 1, ("<=", 20)),
]


def report(ref, big):
    print(f"aegisd on {GPUS} test GPUs, each held by one running job; "
          f"{ref['queued']} and {big['queued']} jobs queued")
    print(f"filling the queue took {ref['filled_s']:.1f} s and "
          f"{big['filled_s']:.1f} s; passes measured: {ref['passes']:.0f} and "
          f"{big['passes']:.0f}")
    print(f"{'':22s} {ref['queued']:>12d} {big['queued']:>12d} "
          f"{'ratio':>8s}  goal")
    missed = 0
    for key, label, unit, scale, (op, goal) in ROWS:
        ratio = big[key] / ref[key]
        ok = ratio <= goal if op == "<=" else ratio >= goal
        missed += not ok
        print(f"{label:22s} {ref[key] * scale:9.3f} {unit:3s}"
              f"{big[key] * scale:9.3f} {unit:3s}{ratio:8.2f}x  {op} {goal}x "
              f"{'ok' if ok else 'MISSED'}")
    print(f"{'aegis ls --limit 0':22s} {ref['whole']:9.3f} s  "
          f"{big['whole']:9.3f} s  {big['whole'] / ref['whole']:8.2f}x  "
          "(the whole list, once; no goal)")
    return missed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("aegisd", help="the aegisd binary to measure")
    ap.add_argument("aegis", help="the aegis CLI, which submits and lists")
    ap.add_argument("nvml", help="the test NVML library (aegis-testnvml) "
                    "that gives aegisd its 16 GPUs")
    ap.add_argument("fake", help="the aegis-fakegpu program the jobs run")
    ap.add_argument("--jobs", type=int, default=100000,
                    help="jobs queued in the long queue (default: "
                         "%(default)s)")
    ap.add_argument("--ref", type=int, default=1000,
                    help="jobs queued in the reference (default: "
                         "%(default)s)")
    ap.add_argument("--users", type=int, default=500,
                    help="users the queued jobs belong to (default: "
                         "%(default)s)")
    ap.add_argument("--submits", type=int, default=200,
                    help="one-job submits timed (default: %(default)s)")
    ap.add_argument("--runs", type=int, default=5,
                    help="runs of each ls, median taken (default: "
                         "%(default)s)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("bench-scale: needs root, to submit as its users")
        return 77
    for name in ("aegisd", "aegis", "nvml", "fake"):
        setattr(a, name, os.path.abspath(getattr(a, name)))
    ref = measure(a, a.ref)
    big = measure(a, a.jobs)
    return 1 if report(ref, big) else 0


if __name__ == "__main__":
    sys.exit(main())
