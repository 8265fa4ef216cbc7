#!/usr/bin/env python3
"""man_pages.py -- write aegis's manual pages from their one source each.

    tools/man_pages.py --aegis BIN --aegisd BIN --config aegis.yaml \\
        [--dipp BIN] --version V --out DIR

The source of each page is what the user also sees elsewhere, so the two
cannot drift apart:

  aegis.1, aegis-COMMAND.1  `aegis --help` and `aegis COMMAND --help` (the
                            commands are the ones `aegis --help` lists)
  aegisd.8                  `aegisd --help`
  aegis.yaml.5              the example configuration that is installed as
                            /etc/aegis/aegis.yaml: its comments and keys
  dipp.1, dipp-COMMAND.1    `dipp --help` and `dipp COMMAND --help`

A command whose help sends the reader on to its subcommands' own
(`aegis dataset SUBCOMMAND --help`, `dipp ground COMMAND --help`) gets a
section per subcommand in its page, from that subcommand's --help.

A help text is either laid out like a manual page (NAME, SYNOPSIS, ...
headings at the margin, text indented) or a usage text (`usage:` lines,
then paragraphs); both are read. Within a section, a paragraph becomes
filled text, a list of `TERM  description` lines a tagged list, and
anything else (examples) is kept as laid out. Run at build time (CMake
target man-pages); standard library only.
"""
import argparse
import os
import re
import subprocess
import sys

WHATIS_AEGIS = "share the GPUs of a server among deep-learning training jobs"
WHATIS_DIPP = "a modular image-processing pipeline for a CubeSat payload"
HEADING = re.compile(r"^[A-Z][A-Z0-9 ]*$")
ITEM = re.compile(r"^(\S.{0,30}?)\s{2,}(\S.*)$")
USAGE = re.compile(r"^[Uu]sage:")


def roff(text):
    """Text escaped for roff: backslashes, dashes typed as minus signs (so
    options copy and paste), a leading dot or quote made literal."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def dedent(lines):
    depth = min((len(l) - len(l.lstrip()) for l in lines if l.strip()),
                default=0)
    return [l[depth:].rstrip() for l in lines]


def blocks(lines):
    """Runs of non-blank lines."""
    run = []
    for line in lines + [""]:
        if line.strip():
            run.append(line)
        elif run:
            yield run
            run = []


def is_list(block):
    """TERM  text lines, each maybe followed by deeper-indented lines; a
    lone option (`--json`) may have its text on the next lines."""
    if not (ITEM.match(block[0]) or block[0].startswith("-")):
        return False
    for line in block:
        at_margin = not line[0].isspace()
        if at_margin and not (ITEM.match(line) or
                              (line.startswith("-") and " " * 2 not in line)):
            return False
    return True


def render_list(block):
    out = []
    for line in block:
        if line[0].isspace():
            out.append(roff(line.strip()))
            continue
        m = ITEM.match(line)
        term, text = (m.group(1), m.group(2)) if m else (line.strip(), "")
        head, _, rest = term.partition(" ")
        out += [".TP", "\\fB%s\\fR%s" % (roff(head), " " + roff(rest)
                                          if rest else "")]
        if text:
            out.append(roff(text))
    return out


def split_paragraph(block):
    """A block whose text at the margin runs straight into an indented
    list of options (`Runs each ...` then `  --modules DIR  folder`), as
    two blocks; any other block (a YAML example) as it is."""
    n = next((i for i, l in enumerate(block) if l[0].isspace()), len(block))
    rest = dedent(block[n:])
    if 0 < n < len(block) and rest[0].startswith("--") and is_list(rest):
        return [block[:n], rest]
    return [block]


def render_body(lines):
    """Roff for one section's text; an example is indented."""
    out = []
    for whole in blocks(lines):
        for block in split_paragraph(dedent(whole)):
            out += render_block(block)
    return out


def render_block(block):
    """Roff for one block: a list, a paragraph, or an example."""
    if is_list(block):
        return render_list(block)
    if all(not l[0].isspace() for l in block):
        return [".PP"] + [roff(l) for l in block]
    return [".PP", ".RS 4", ".nf"] + [roff(l) for l in block] + [".fi", ".RE"]


def sections(help_text):
    """[(HEADING, lines)] of a help text in either layout."""
    lines = help_text.rstrip("\n").split("\n")
    if not USAGE.match(lines[0]):
        found, current = [], None
        for line in lines:
            if HEADING.match(line):
                current = (line, [])
                found.append(current)
            elif current:
                current[1].append(line)
        return found
    synopsis, rest = [], lines
    while rest and (USAGE.match(rest[0]) or
                    (rest[0][:1].isspace() and rest[0].strip())):
        synopsis.append(USAGE.sub("      ", rest[0]))
        rest = rest[1:]
    return [("SYNOPSIS", synopsis), ("DESCRIPTION", rest)]


def render_part(heading, lines, level=".SH"):
    """Roff for one (HEADING, lines) of sections(), under a heading of
    level (.SH, or .SS within a subcommand's section)."""
    out = ["%s %s" % (level, heading)]
    if heading == "SYNOPSIS":
        return out + [".nf"] + [roff(l) for l in dedent(lines) if l] + [".fi"]
    return out + render_body(lines)


def page(name, section, version, whatis, parts, see_also, subs=()):
    """A whole page: header, NAME, the parts, a section for each of subs
    ((subcommand, its parts)), SEE ALSO."""
    out = ['.TH "%s" "%s" "" "aegis %s" "aegis manual"'
           % (name.upper(), section, version),
           # no hyphenation, ragged right: names and options stay whole
           ".nh", ".ad l",
           ".SH NAME", "%s \\- %s" % (roff(name), roff(whatis))]
    for heading, lines in parts:
        if heading != "NAME":
            out += render_part(heading, lines)
    for sub, sub_parts in subs:
        out.append(".SH %s" % roff(sub.upper()))
        for heading, lines in sub_parts:
            if heading != "NAME":
                out += render_part(heading, lines, ".SS")
    if see_also:
        out += [".SH SEE ALSO", ", ".join("\\fB%s\\fR(%s)" % s
                                          for s in see_also)]
    return "\n".join(out) + "\n"


def help_of(argv):
    run = subprocess.run(argv + ["--help"], capture_output=True, text=True,
                         timeout=30)
    if run.returncode != 0 or not run.stdout.strip():
        raise RuntimeError("%s --help: exit %d" % (" ".join(argv),
                                                   run.returncode))
    return run.stdout


def whatis_of(parts, fallback):
    """The text after ' - ' of a NAME section, else fallback."""
    for heading, lines in parts:
        if heading == "NAME":
            text = " ".join(l.strip() for l in lines if l.strip())
            return text.split(" - ", 1)[1] if " - " in text else fallback
    return fallback


def commands(top_help, tool):
    """{command: description} from the Commands: list of a tool's --help.
    An entry starts two spaces in with the command's name; its description
    is what follows two or more spaces on that line (`  ls  list jobs`) or
    the deeper-indented lines under it (`  run --modules DIR ...` then the
    text)."""
    found, listing, name = {}, False, None
    for line in top_help.split("\n"):
        entry = re.match(r"^  ([a-z][a-z-]*)(.*)$", line)
        if line.rstrip().endswith("Commands:"):
            listing = True
        elif not listing or (not line.strip() and not found):
            continue
        elif entry:
            name = entry.group(1)
            text = re.search(r"\s{2,}(\S.*)$", entry.group(2))
            found[name] = text.group(1) if text else ""
        elif line.startswith("   ") and name:
            found[name] = (found[name] + " " + line.strip()).strip()
        else:
            break
    if not found:
        raise RuntimeError("%s --help lists no commands" % tool)
    return found


SUBCOMMAND_HELP = re.compile(r"(SUBCOMMAND|COMMAND) --help")
SUBCOMMAND = re.compile(r"^  ([a-z][a-z-]*)(\s|$)")


def subcommands(help_text):
    """The subcommands a command's help lists (entries two spaces in,
    options excluded), when it sends the reader to their own --help;
    else none."""
    if not SUBCOMMAND_HELP.search(help_text):
        return []
    found = [m.group(1) for m in map(SUBCOMMAND.match, help_text.split("\n"))
             if m]
    return list(dict.fromkeys(found))


def tool_pages(out_dir, tool, binary, version, whatis, see_also):
    """TOOL.1 from `BIN --help`, and TOOL-COMMAND.1 from `BIN COMMAND
    --help` for each command the first lists."""
    top = help_of([binary])
    cmds = commands(top, tool)
    write(out_dir, tool + ".1", page(
        tool, 1, version, whatis, sections(top),
        see_also + [(tool + "-" + c, 1) for c in cmds]))
    for cmd, summary in cmds.items():
        text = help_of([binary, cmd])
        parts = sections(text)
        subs = [(sub, sections(help_of([binary, cmd, sub])))
                for sub in subcommands(text)]
        write(out_dir, "%s-%s.1" % (tool, cmd), page(
            "%s-%s" % (tool, cmd), 1, version, whatis_of(parts, summary),
            parts, [(tool, 1)], subs))


def config_parts(path):
    """The example configuration as a page's body: each comment a
    paragraph, followed by the keys (with their defaults) it is about. The
    file's first line ("FILE -- what it is") is left to the NAME."""
    with open(path) as f:
        lines = [l.rstrip("\n") for l in f][1:]
    body, in_keys = [], False
    for line in lines:
        text = re.sub(r"^#\s?", "", line)
        # a key, or a commented-out example of one (`# sharing:`)
        key = not line.startswith("#") or \
            re.match(r"^[a-z_]+:( |$)", text) or text.startswith("  ")
        if not line.strip():
            body += [".fi", ".RE"] if in_keys else []
            body.append(".PP")
            in_keys = False
        elif key and not in_keys:
            body += [".RS 4", ".nf", roff(line)]
            in_keys = True
        elif not key and in_keys:
            body += [".fi", ".RE", ".PP", roff(text)]
            in_keys = False
        else:
            body.append(roff(line if key else text))
    return body + ([".fi", ".RE"] if in_keys else [])


def write(out_dir, name, text):
    with open(os.path.join(out_dir, name), "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--aegis", required=True, metavar="BIN",
                    help="the built aegis, whose --help texts make aegis.1 "
                         "and aegis-COMMAND.1")
    ap.add_argument("--aegisd", required=True, metavar="BIN",
                    help="the built aegisd, whose --help makes aegisd.8")
    ap.add_argument("--dipp", metavar="BIN",
                    help="the built dipp, whose --help texts make dipp.1 "
                         "and dipp-COMMAND.1 (none when not given)")
    ap.add_argument("--config", required=True, metavar="FILE",
                    help="the example aegis.yaml, whose comments and keys "
                         "make aegis.yaml.5")
    ap.add_argument("--config-path", default="/etc/aegis/aegis.yaml",
                    metavar="PATH",
                    help="where the configuration is installed, as "
                         "aegis.yaml.5 names it (default: %(default)s)")
    ap.add_argument("--version", required=True,
                    help="the aegis version each page's footer names")
    ap.add_argument("--out", required=True, metavar="DIR",
                    help="where the pages are written; the *.1, *.5 and "
                         "*.8 files already there are removed first")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for old in os.listdir(args.out):
        if re.search(r"\.[158]$", old):
            os.remove(os.path.join(args.out, old))
    try:
        tool_pages(args.out, "aegis", args.aegis, args.version, WHATIS_AEGIS,
                   [("aegisd", 8), ("aegis.yaml", 5)])
        if args.dipp:
            tool_pages(args.out, "dipp", args.dipp, args.version, WHATIS_DIPP,
                       [])
        daemon = sections(help_of([args.aegisd]))
        write(args.out, "aegisd.8", page(
            "aegisd", 8, args.version, whatis_of(daemon, "the aegis daemon"),
            daemon, [("aegis", 1), ("aegis.yaml", 5)]))
        yaml = page("aegis.yaml", 5, args.version, "configuration of aegisd",
                    [("SYNOPSIS", [args.config_path])], [])
        yaml += "\n".join([".SH DESCRIPTION"] + config_parts(args.config) + [
            ".PP", roff("Check a changed file with `aegisd --check-config "
                        "%s`; aegisd reads it at start and again on SIGHUP "
                        "(`systemctl reload aegisd`)." % args.config_path),
            ".SH FILES", roff(args.config_path),
            ".SH SEE ALSO", "\\fBaegisd\\fR(8), \\fBaegis\\-sim\\fR(1)"]) \
            + "\n"
        write(args.out, "aegis.yaml.5", yaml)
    except (OSError, RuntimeError, subprocess.SubprocessError) as err:
        sys.stderr.write("man_pages: %s\n" % err)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
