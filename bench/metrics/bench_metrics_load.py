#!/usr/bin/env python3
"""bench_metrics_load.py -- whether scrapers of /metrics stall aegisd.

  bench_metrics_load.py AEGISD AEGIS TESTNVML [--jobs N] [--window S]
  (cmake target bench-metrics-load runs it)

aegisd runs on 3 test GPUs, all drained, with --jobs (10,000) queued jobs
that cannot start, and metrics_listen on a loopback port. Root times
`aegis gpus` (the whole command: start, request, answer) back to back in
windows of --window seconds: with no client of /metrics (the reference),
and while --scrapers (64) clients loop `GET /metrics` as fast as they can
and --hogs (64) clients send a GET and never read (each replaced by a
fresh one every 5 s, so that 64 are always open); --rounds pairs of
windows, interleaved so that a drift of the machine's load falls on both
alike. Printed: the p99 of `aegis
gpus` loaded over idle (goal <= 2x) and aegisd's RSS growth under load
over its RSS before (goal < 50 MB).
"""
import argparse
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

from aegisd_run import Aegisd, add_binaries

GET = b"GET /metrics HTTP/1.1\r\nHost: bench\r\n\r\n"
PROCS = 4  # scraper processes; their threads share the scrapers


def rss_mb(pid):
    """aegisd's resident memory, MB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def scrape(port):
    """One whole GET /metrics: the page's bytes, or 0 on an error."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(GET)
            n = 0
            while True:
                b = s.recv(1 << 16)
                if not b:
                    return n
                n += len(b)
    except OSError:
        return 0


def scraper_proc(port, threads, stop, counts):
    """threads scrapers looping until stop is set; counts[0] += scrapes
    answered, counts[1] += failed ones."""
    def loop():
        ok = bad = 0
        while not stop.is_set():
            if scrape(port):
                ok += 1
            else:
                bad += 1
        with counts.get_lock():
            counts[0] += ok
            counts[1] += bad
    ts = [threading.Thread(target=loop) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def hog(port):
    """A client that sends a GET and never reads."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(GET)
    except OSError:
        pass
    return s


def hogs_proc(port, n, stop):
    """n clients that never read, each replaced every 5 s."""
    socks = [hog(port) for _ in range(n)]
    i = 0
    while not stop.wait(5.0 / n):
        socks[i].close()
        socks[i] = hog(port)
        i = (i + 1) % n
    for s in socks:
        s.close()


def start_clients(port, a, stop, counts):
    """The scraper processes and the process of clients that never read,
    started; they run until stop is set."""
    per = [a.scrapers // PROCS + (i < a.scrapers % PROCS)
           for i in range(PROCS)]
    procs = [multiprocessing.Process(target=scraper_proc,
                                     args=(port, n, stop, counts))
             for n in per if n]
    procs.append(multiprocessing.Process(target=hogs_proc,
                                         args=(port, a.hogs, stop)))
    for p in procs:
        p.start()
    time.sleep(1)  # the clients connect
    return procs


def time_gpus(aegis, env, window, pid, peak):
    """Seconds each `aegis gpus` took over window seconds, back to back;
    peak[0] keeps aegisd's highest RSS seen."""
    times, end = [], time.time() + window
    while time.time() < end:
        t0 = time.perf_counter()
        subprocess.run([aegis, "gpus"], env=env, check=True,
                       capture_output=True, timeout=120)
        times.append(time.perf_counter() - t0)
        peak[0] = max(peak[0], rss_mb(pid))
    return times


def p99(xs):
    return statistics.quantiles(xs, n=100)[98] if len(xs) > 1 else xs[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_binaries(ap, "the aegis CLI (submits, times `gpus`)")
    ap.add_argument("--jobs", type=int, default=10000,
                    help="queued jobs (default: %(default)s)")
    ap.add_argument("--window", type=float, default=15,
                    help="seconds `aegis gpus` is timed in each window, "
                         "idle or loaded (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=2,
                    help="idle and loaded window pairs, interleaved "
                         "(default: %(default)s)")
    ap.add_argument("--scrapers", type=int, default=64,
                    help="clients looping GET /metrics (default: "
                         "%(default)s)")
    ap.add_argument("--hogs", type=int, default=64,
                    help="clients that never read (default: %(default)s)")
    a = ap.parse_args()
    for name in ("aegisd", "aegis", "nvml"):
        setattr(a, name, os.path.abspath(getattr(a, name)))

    d = Aegisd(a.aegisd, a.aegis, a.nvml, prefix="aegis-bench-mload-")
    env, pid, port, aegis = d.env, d.pid, d.port, d.aegis
    stop = multiprocessing.Event()
    procs = []
    try:
        for g in range(3):
            aegis("drain", str(g))
        name = "bench-" + "x" * 60
        ids = aegis("submit", "--name", name, "--array",
                    f"0-{a.jobs - 1}", "--", "true").split()
        page = scrape(port)
        counts = multiprocessing.Array("q", 2)
        idle, loaded, before, peak = [], [], rss_mb(pid), [0.0]
        for _ in range(a.rounds):  # interleaved: the machine's drift
            idle += time_gpus(a.aegis, env, a.window, pid, [0.0])
            procs = start_clients(port, a, stop, counts)
            loaded += time_gpus(a.aegis, env, a.window, pid, peak)
            stop.set()
            for p in procs:
                p.join(30)
            stop.clear()
        grown = peak[0] - before
        ratio = p99(loaded) / p99(idle)
        print(f"setup:  aegisd on 3 drained GPUs, {len(ids)} queued jobs; "
              f"/metrics is {page} bytes")
        print(f"idle:   `aegis gpus` x{len(idle)}: p50 "
              f"{1000 * statistics.median(idle):.1f} ms, p99 "
              f"{1000 * p99(idle):.1f} ms")
        print(f"loaded: `aegis gpus` x{len(loaded)}: p50 "
              f"{1000 * statistics.median(loaded):.1f} ms, p99 "
              f"{1000 * p99(loaded):.1f} ms, with {a.scrapers} scrapers "
              f"({counts[0] / (a.rounds * a.window):.0f} pages/s, "
              f"{counts[1]} failed) and {a.hogs} clients that never read")
        print(f"p99 loaded / idle: {ratio:.2f}x (goal <= 2x)")
        print(f"aegisd RSS: {before:.1f} MB before, peak {peak[0]:.1f} MB "
              f"loaded: +{grown:.1f} MB (goal < 50 MB), "
              f"{peak[0] / before:.2f}x")
    finally:
        stop.set()
        for p in procs:
            if p.is_alive():
                p.kill()
        d.stop()


if __name__ == "__main__":
    sys.exit(main())
