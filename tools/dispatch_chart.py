#!/usr/bin/python3
"""Compare `aegis sim`'s dispatch modes on real traces over several servers.

It makes the figure and table of docs/simulator.md#several-servers.

    tools/dispatch_chart.py [--aegis BIN] [--data DIR] [--svg FILE]

Replays philly, saturn and venus (60 jobs each) on 2 and 3 servers of
`aegis sim`'s default 3 GPUs under exclusive, aegis and aegis-plus, once
with --dispatch work and once with --dispatch slurm, and prints a Markdown
table of makespan and mean JCT under each. With --svg, also draws each
run's slurm figures relative to its work ones (1 = the same).
"""
import argparse
import json
import subprocess
import sys

TRACES = ("philly", "saturn", "venus")
SERVERS = (2, 3)
POLICIES = ("exclusive", "aegis", "aegis-plus")
DISPATCH = ("work", "slurm")


def run(aegis, data, trace, servers, dispatch):
    """The policies' JSON runs of one replay, by policy."""
    out = subprocess.run(
        [aegis, "sim", "--trace", f"{data}/traces/{trace}.csv",
         "--servers", str(servers), "--dispatch", dispatch,
         "--policy", ",".join(POLICIES), "--json"],
        check=True, capture_output=True, text=True).stdout
    return {p["policy"]: p for p in json.loads(out)["policies"]}


def svg(rows, path):
    """Horizontal bars of slurm / work per row: makespan and mean JCT."""
    colours = (("makespan_s", "#4a7bd0", "makespan"),
               ("mean_jct_s", "#e8903a", "mean JCT"))
    left, row_h = 170, 22
    worst = max(s[k] / w[k] for _, w, s in rows for k, _, _ in colours)
    scale = min(220.0, 330.0 / worst)
    height = 60 + row_h * len(rows)
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='560' "
           f"height='{height}' font-family='sans-serif' font-size='11'>",
           "<rect width='100%' height='100%' fill='white'/>",
           "<text x='4' y='16' font-size='13' font-weight='bold'>"
           "--dispatch slurm relative to --dispatch work</text>",
           "<text x='4' y='32'>real traces, servers of 3 GPUs; "
           "1 = the same (dashed line), lower is better</text>"]
    for i, (key, colour, label) in enumerate(colours):
        x = left + 110 * i
        out.append(f"<rect x='{x}' y='38' width='10' height='10' "
                   f"fill='{colour}'/><text x='{x + 14}' y='47'>{label}</text>")
    for r, (label, work, slurm) in enumerate(rows):
        y = 56 + row_h * r
        out.append(f"<text x='4' y='{y + 13}'>{label}</text>")
        for i, (key, colour, _) in enumerate(colours):
            ratio = slurm[key] / work[key]
            yb = y + 2 + 9 * i
            out.append(f"<rect x='{left}' y='{yb}' width='{ratio * scale:.1f}' "
                       f"height='8' fill='{colour}'/><text "
                       f"x='{left + ratio * scale + 3:.1f}' y='{yb + 7}' "
                       f"font-size='9'>{ratio:.3f}</text>")
    out.append(f"<line x1='{left + scale}' y1='52' x2='{left + scale}' "
               f"y2='{height - 4}' stroke='black' stroke-dasharray='3,3'/>")
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--aegis", metavar="BIN", default="build/src/cli/aegis",
                    help="the aegis binary that simulates "
                         "(default: %(default)s)")
    ap.add_argument("--data", metavar="DIR", default="data",
                    help="the folder whose traces/*.csv are replayed "
                         "(default: %(default)s)")
    ap.add_argument("--svg", metavar="FILE",
                    help="also write the figure there, as SVG "
                         "(default: no figure)")
    args = ap.parse_args()
    rows = []
    print("| trace | servers | policy | makespan s, work | slurm "
          "| mean JCT s, work | slurm |")
    print("|---|---|---|---|---|---|---|")
    for trace in TRACES:
        for servers in SERVERS:
            runs = {d: run(args.aegis, args.data, trace, servers, d)
                    for d in DISPATCH}
            for policy in POLICIES:
                work, slurm = runs["work"][policy], runs["slurm"][policy]
                rows.append((f"{trace} {servers}x3 {policy}", work, slurm))
                print(f"| {trace} | {servers} | {policy} "
                      f"| {work['makespan_s']:.0f} | {slurm['makespan_s']:.0f} "
                      f"| {work['mean_jct_s']:.0f} | {slurm['mean_jct_s']:.0f} |")
    if args.svg:
        svg(rows, args.svg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
