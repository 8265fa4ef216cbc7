#!/usr/bin/env python3
"""check_py_help.py SCRIPT... -- each Python script's argparse --help says
what the script does and what every argument is: a positional argument or
option listed bare (`  aegis`, `  --root ROOT`) tells a user nothing of what
to give, and a description cut at a docstring's first line (`... split
over`) leaves the sentence unfinished.

Runs `SCRIPT --help` with this interpreter and reads argparse's layout:
under each "...:" heading, an entry is a line indented two spaces; its
description follows on that line (after two spaces or more) or on the
next, indented deeper. The description is the paragraph after the usage
lines; it must end with a full stop, which a docstring's first line cut
mid-sentence does not. Exit status 1 when the description or any entry's
is missing or unfinished.
"""
import re
import subprocess
import sys


def bare_entries(help_text):
    """The entries of an argparse help text without a description."""
    lines = help_text.split("\n")
    bare, in_section = [], False
    for i, line in enumerate(lines):
        if re.match(r"^\S.*:$", line):  # "options:", "positional arguments:"
            in_section = True
            continue
        if not in_section or not re.match(r"^  \S", line):
            continue
        if re.match(r"^  \S.*?\s{2,}\S", line):
            continue  # its description on the same line
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if not re.match(r"^   +\S", nxt):
            bare.append(line.strip())
    return bare


def description_problem(help_text):
    """Why the paragraph after the usage lines is no finished description,
    or None."""
    paragraphs = re.split(r"\n\s*\n", help_text.strip())
    first = paragraphs[1] if len(paragraphs) > 1 else ""
    if not first or re.match(r"^\S.*:\n  \S", first):
        return "no description"
    if not first.rstrip().endswith("."):
        return "description '%s' is no finished sentence" % (
            " ".join(first.split()))
    return None


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: check_py_help.py SCRIPT...")
    failed = False
    for script in sys.argv[1:]:
        run = subprocess.run([sys.executable, script, "--help"],
                             capture_output=True, text=True, timeout=30,
                             env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"})
        if run.returncode != 0:
            print("%s --help: exit %d: %s" % (script, run.returncode,
                                              run.stderr.strip()))
            failed = True
            continue
        problem = description_problem(run.stdout)
        if problem:
            print("%s --help: %s" % (script, problem))
            failed = True
        for entry in bare_entries(run.stdout):
            print("%s --help: '%s' has no description" % (script, entry))
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
