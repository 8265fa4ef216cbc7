#!/usr/bin/env python3
"""bench_metrics.py -- what aegisd's /metrics endpoint costs it, in CPU.

  bench_metrics.py AEGISD AEGIS TESTNVML FAKEGPU [--window S] [--rounds N]
  (cmake target bench-metrics runs it)

The cost is set against aegisd's own idle cost in the same run. aegisd
runs on 3 test GPUs with 50 jobs (most running, the rest queued) and
metrics_listen on a loopback port. Its CPU time (utime + stime of
/proc/PID/stat, all its threads) is read over windows of --window seconds,
idle and while scraped, interleaved over several rounds so that a drift of
the machine's load falls on both alike. Time is compressed: the scrapes
come every --every seconds (0.2 by default), not every 15 s, so that a
window holds a hundred of them and their cost stands well above the clock
tick (10 ms) that /proc counts in. aegisd keeps a rendering for
metrics_cache_s, set here to its least, 0.1 s, below the interval: each
scrape renders the state afresh, as one every 15 s does, so its cost
does not depend on how often it comes: the CPU per scrape, divided by
15 s, is the cost at Prometheus' usual 15 s interval. Goal: under 1% of a
core.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request

from aegisd_run import Aegisd, add_binaries

TICK = os.sysconf("SC_CLK_TCK")
JOBS = 50
INTERVAL_S = 15.0


def cpu_s(pid):
    """aegisd's CPU seconds so far (user + system, all threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_binaries(ap, "the aegis CLI, which submits the jobs")
    ap.add_argument("fake", help="the aegis-fakegpu program the jobs run")
    ap.add_argument("--window", type=float, default=20,
                    help="seconds per window, idle or scraped "
                         "(default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="idle and scraped window pairs, interleaved "
                         "(default: %(default)s)")
    ap.add_argument("--every", type=float, default=0.2,
                    help="seconds between scrapes (compressed time; "
                         "default: %(default)s)")
    a = ap.parse_args()
    for name in ("aegisd", "aegis", "nvml", "fake"):
        setattr(a, name, os.path.abspath(getattr(a, name)))

    d = Aegisd(a.aegisd, a.aegis, a.nvml, "metrics_cache_s: 0.1\n",
               "aegis-bench-metrics-")
    tmp, env, pid, aegis = d.tmp, d.env, d.pid, d.aegis
    url = f"http://127.0.0.1:{d.port}/metrics"
    ids = []
    try:
        with open(f"{tmp}/jobs.txt", "w") as f:
            for i in range(JOBS):
                f.write(f"{a.fake} --mib {2500 + 20 * i} --smact 0.02 "
                        "--seconds 3600\n")
        ids = aegis("submit", "--mem", "3500", "--array",
                    f"{tmp}/jobs.txt").split()
        # settled: as many jobs running for 5 s in a row (90 s at most)
        running, stable_since, deadline = -1, time.time(), time.time() + 90
        while time.time() < deadline and time.time() - stable_since < 5:
            jobs = json.loads(aegis("ls", "--json"))
            now_running = sum(j["state"] == "running" for j in jobs)
            if now_running != running:
                running, stable_since = now_running, time.time()
            time.sleep(0.5)
        body = urllib.request.urlopen(url, timeout=5).read()

        idle_cpu = scraped_cpu = 0.0
        scrapes = 0
        for _ in range(a.rounds):
            t0 = time.time()
            c0 = cpu_s(pid)
            time.sleep(a.window)
            idle_cpu += cpu_s(pid) - c0
            idle_s = time.time() - t0
            c0, t0 = cpu_s(pid), time.time()
            next_at = t0
            while time.time() - t0 < idle_s:
                with urllib.request.urlopen(url, timeout=5) as r:
                    r.read()
                    if r.status != 200:
                        raise SystemExit(f"scrape: HTTP {r.status}")
                scrapes += 1
                next_at += a.every
                time.sleep(max(0.0, next_at - time.time()))
            scraped_cpu += cpu_s(pid) - c0
        total_s = a.rounds * a.window
        idle_per_s = idle_cpu / total_s
        per_scrape = max(0.0, scraped_cpu - idle_cpu) / scrapes
        at_interval = per_scrape / INTERVAL_S
        print(f"setup:   aegisd on 3 GPUs, {len(ids)} jobs ({running} running, "
              f"{len(ids) - running} queued); /metrics is {len(body)} bytes")
        print(f"idle:    {idle_cpu:.2f} s CPU over {total_s:.0f} s = "
              f"{100 * idle_per_s:.3f}% of a core")
        print(f"scraped: {scraped_cpu:.2f} s CPU over {total_s:.0f} s with "
              f"{scrapes} scrapes (every {a.every} s): "
              f"{1000 * per_scrape:.3f} ms CPU per scrape")
        print(f"at a {INTERVAL_S:.0f} s interval: {100 * at_interval:.4f}% "
              f"of a core (goal < 1%), {at_interval / idle_per_s:.3f}x "
              f"aegisd's idle cost" if idle_per_s > 0 else "idle cost 0")
    finally:
        if ids:
            subprocess.run([a.aegis, "cancel", *ids], env=env,
                           capture_output=True)
            subprocess.run([a.aegis, "wait", *ids], env=env,
                           capture_output=True, timeout=60)
        d.stop()


if __name__ == "__main__":
    sys.exit(main())
