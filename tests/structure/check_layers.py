#!/usr/bin/env python3
"""check_layers.py -- the structure the code promises, checked from the
sources: which file calls functions defined in which (a call graph by
file, read with regular expressions, not a compiler: good enough for the
house style, where every definition starts at column 0).

Rules (issue 27):
  - core/core.c (job table, queues, events) defines no placement
    function, and core/place.c calls nothing of the queue walks above it
    (core/fifo.c, core/backfill.c);
  - the telemetry files form no circle: no file reaches itself through
    the functions it calls;
  - daemon/jobs*.c (the job table and its parts) has no branch on a
    lease's slurm_job, and calls no function defined in the handlers
    (daemon/handlers.c): the handlers register a hook instead.

Usage: check_layers.py SRC_DIR RULE..., each RULE core, telemetry or jobs.
Prints each break of the rules; exits 1 if any.
"""
import glob
import os
import re
import sys

DEF_START = re.compile(r"^(?!static\b|typedef\b|extern\b|#)[A-Za-z_][\w \*]*?"
                       r"\b([A-Za-z_]\w*)\(", re.M)
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def strip(text):
    """The source without comments and string literals."""
    return STRING.sub('""', COMMENT.sub(" ", text))


def definitions(text):
    """Names of the non-static functions the file defines."""
    names = set()
    for m in DEF_START.finditer(text):
        rest = text[m.end():]
        brace, semi = rest.find("{"), rest.find(";")
        if brace >= 0 and (semi < 0 or brace < semi):
            names.add(m.group(1))
    return names


# Any function definition at column 0, static or not.
ANY_DEF = re.compile(r"^(?:static\s+)?(?:inline\s+)?[A-Za-z_][\w \*]*?"
                     r"\b([A-Za-z_]\w*)\([^;{]*\)\s*\{", re.M)
PLACEMENT = re.compile(r"place|telemetry_(gates|admits)|candidate|take_best")


def read_files(paths):
    return {p: strip(open(p, encoding="utf-8").read()) for p in paths}


def call_graph(files):
    """file -> the other files whose non-static functions it calls."""
    owner = {}
    for path, text in files.items():
        for name in definitions(text):
            owner[name] = path
    graph = {}
    for path, text in files.items():
        called = {owner[n] for n in CALL.findall(text) if n in owner}
        graph[path] = called - {path}
    return graph


def find_circle(graph):
    """One circle of the graph as a list of files, or None."""
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return trail[trail.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, trail + [nxt])
                if found:
                    return found
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [node])
            if found:
                return found
    return None


def check_telemetry(src):
    files = read_files(sorted(glob.glob(os.path.join(src, "telemetry", "*.c"))))
    circle = find_circle(call_graph(files))
    if circle:
        names = " -> ".join(os.path.basename(p) for p in circle)
        return ["telemetry: the files call each other in a circle: " + names]
    return []


def check_core(src):
    core = os.path.join(src, "core")
    files = read_files([os.path.join(core, f) for f in
                        ("core.c", "place.c", "fifo.c", "backfill.c")])
    text = {os.path.basename(p): t for p, t in files.items()}
    problems = [f"core/core.c: defines {m.group(1)}(), which is placement "
                "(core/place.c's)"
                for m in ANY_DEF.finditer(text["core.c"])
                if PLACEMENT.search(m.group(1))]
    walks = definitions(text["fifo.c"]) | definitions(text["backfill.c"])
    for name in sorted(set(CALL.findall(text["place.c"])) & walks):
        problems.append(f"core/place.c: calls {name}() of the queue walks "
                        "above it (fifo.c, backfill.c)")
    return problems


def check_jobs(src):
    daemon = os.path.join(src, "daemon")
    jobs = read_files(sorted(glob.glob(os.path.join(daemon, "jobs*.c"))))
    handlers = definitions(read_files([os.path.join(daemon, "handlers.c")])
                           [os.path.join(daemon, "handlers.c")])
    problems = []
    for path, text in jobs.items():
        base = os.path.basename(path)
        for lineno, line in enumerate(text.splitlines(), 1):
            if "slurm_job" in line:
                problems.append(f"daemon/{base}:{lineno}: branches on "
                                f"slurm_job: {line.strip()}")
        for name in sorted(set(CALL.findall(text)) & handlers):
            problems.append(f"daemon/{base}: calls {name}() of "
                            "daemon/handlers.c")
    return problems


RULES = {"core": check_core, "telemetry": check_telemetry,
         "jobs": check_jobs}


def main():
    if len(sys.argv) < 3 or any(r not in RULES for r in sys.argv[2:]):
        sys.exit("usage: check_layers.py SRC_DIR RULE... (RULE: "
                 + " or ".join(RULES) + ")")
    problems = []
    for rule in sys.argv[2:]:
        problems += RULES[rule](sys.argv[1])
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
