#!/usr/bin/python3
"""Runs every query of the Grafana dashboard against a real Prometheus.

Usage: check_dashboard.py PROMETHEUS_URL DASHBOARD_JSON

Each panel's every target must return data, except the panels listed in
ABSENCE, which show a problem by having data and are empty on a healthy
server. Grafana's own variables are given the values Grafana would give
them over a short range. Exits 0 when all pass, 1 naming each that did not.
"""
import argparse
import json
import sys
import urllib.parse
import urllib.request

# Panels that show an absence: each is empty while all is well.
ABSENCE = {
    "GPUs down": "lists GPUs whose telemetry failed; the test GPUs never fail",
    "State not saved": "lists servers whose database writes fail; the test's never do",
}
# What Grafana puts in place of its variables over a few minutes' range.
VARIABLES = {"$__rate_interval": "1m", "$__range": "5m"}


def query(url, expr):
    """The result vector of the instant query expr, or raises."""
    q = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=10) as r:
        answer = json.load(r)
    if answer.get("status") != "success":
        raise RuntimeError(answer)
    return answer["data"]["result"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("prometheus", help="the Prometheus base URL, http://HOST:PORT")
    ap.add_argument("dashboard", help="the Grafana dashboard JSON")
    args = ap.parse_args()
    panels = json.load(open(args.dashboard))["panels"]
    failed = []
    for panel in panels:
        for target in panel["targets"]:
            expr = target["expr"]
            for name, value in VARIABLES.items():
                expr = expr.replace(name, value)
            try:
                result = query(args.prometheus, expr)
            except Exception as e:  # a bad expression: named, not raised
                failed.append(f"{panel['title']}: {expr}: {e}")
                continue
            if not result and panel["title"] not in ABSENCE:
                failed.append(f"{panel['title']}: {expr}: no data")
            print(f"{panel['title']}: {len(result)} series")
    unknown = set(ABSENCE) - {p["title"] for p in panels}
    failed += [f"{t}: listed as an absence, but no such panel" for t in unknown]
    for f in failed:
        print(f"FAIL: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
