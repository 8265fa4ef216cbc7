#!/usr/bin/python3
"""Turn Slurm accounting (`sacct --parsable2`) into an `aegis sim` trace.

    sacct --allusers --parsable2 --starttime 2026-06-01 --endtime 2026-06-08 \\
        --format JobIDRaw,User,Submit,ElapsedRaw,TimelimitRaw,AllocTRES,ReqTRES,TRESUsageInMax,TotalCPU,State \\
        > sacct.txt
    tools/sacct_trace.py sacct.txt > trace.csv
    aegis sim --trace trace.csv --gpus 8 --policy all

Reads the '|'-separated output with its header line (fields in any order,
others ignored) and writes one trace row per job that held GPUs and ran,
in submit order, with the per-job columns of docs/simulator.md ("Per-job
columns"):

    job_index      JobIDRaw of the job's own line (no '.' in it)
    submit_time_s  Submit, in seconds after the earliest Submit kept
    user           User
    num_gpus       gres/gpu=N of AllocTRES; where the site tracks GPUs by
                   type only (gres/gpu:a100=N, no gres/gpu), the sum of those
    duration_s     ElapsedRaw
    time_limit_s   TimelimitRaw (minutes) x 60; empty when not a number
                   (UNLIMITED, Partition_Limit) or over a year, the longest
                   limit the simulator takes (aegisd's --time bound)
    mem_mib        gres/aegis_mem=N of ReqTRES (the job's --aegis-mem, as
                   cli_filter.lua asks Slurm for it) / num_gpus; empty
                   without it
    peak_mib       the largest gres/gpumem of TRESUsageInMax over the job's
                   steps (Slurm sums it over the job's GPUs; AutoDetect=nvml
                   gathers it) / num_gpus; empty without it
    load_cpus      TotalCPU / ElapsedRaw: the cores the job kept busy

A job that held no GPU (no gres/gpu in AllocTRES) or never ran (ElapsedRaw
0) is left out; so is one with neither mem_mib nor peak_mib, which the
simulator could not size, and the count of those is said on stderr.
With a State field, a job that had not ended when sacct ran (RUNNING,
PENDING, REQUEUED, SUSPENDED, ...: any State but those of ENDED) is left
out too, counted by state on stderr: its ElapsedRaw is the run so far,
not its duration. Without the field every job is taken as ended.
Standard library only.
"""
import argparse, csv, datetime, math, sys

FIELDS = ("JobIDRaw", "User", "Submit", "ElapsedRaw", "TimelimitRaw",
          "AllocTRES", "ReqTRES", "TRESUsageInMax", "TotalCPU")
# The bound of a trace's times (s) and memory (MiB), as of a catalog's
# (src/sim/job_columns.c): past it aegis sim refuses the trace.
BIG = 1e12
# The longest time_limit_s a trace may hold (TRACE_MAX_LIMIT_S, src/sim/
# trace.h): a year. A longer limit is none to a replay.
MAX_LIMIT_S = 365 * 86400
# The states of a job that has ended (Slurm's sacct(1), JOB STATE CODES);
# every other one (PENDING, RUNNING, REQUEUED, REQUEUE_HOLD, SUSPENDED,
# STOPPED, RESIZING, COMPLETING, ..., or one a later Slurm adds) is a job
# whose ElapsedRaw may still grow, so it is left out rather than guessed.
ENDED = {"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED",
         "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "TIMEOUT"}
UNITS = {"": 1, "K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40, "P": 2 ** 50}


class BadInput(Exception):
    pass


def tres(text, name):
    """The value of name in a TRES list ('cpu=4,gres/gpu=2,...'), or None."""
    for part in text.split(","):
        key, _, value = part.partition("=")
        if key == name:
            return value
    return None


def gpu_count(text, where):
    """The GPUs of an AllocTRES list: gres/gpu=N, or where a site tracks
    them by type only (gres/gpu:a100=N, ...), the sum of the types."""
    untyped = tres(text, "gres/gpu")
    if untyped is not None:
        return whole(untyped, where, "gres/gpu")
    return sum(whole(value, where, key)
               for key, _, value in (p.partition("=") for p in text.split(","))
               if key.startswith("gres/gpu:"))


def size_bytes(value, where, what):
    """A TRES size ('30000M', '2G', '1234' bytes) in bytes: finite and
    not negative, as sacct prints them ('1e400G' would be inf)."""
    unit = value[-1:] if value[-1:].isalpha() else ""
    try:
        size = float(value[:len(value) - len(unit)]) * UNITS[unit.upper()]
    except (KeyError, ValueError):
        size = math.nan
    if not (math.isfinite(size) and size >= 0):
        raise BadInput(f"{where}: {what} '{value}' is not a size")
    if size > BIG * 2 ** 20:
        raise BadInput(f"{where}: {what} '{value}' is over 10^12 MiB, "
                       "the most a trace holds")
    return size


def cpu_seconds(text, where):
    """TotalCPU, [D-][HH:]MM:SS[.fff], in seconds."""
    days, _, clock = text.rpartition("-")
    parts = clock.split(":")
    try:
        if not 2 <= len(parts) <= 3:
            raise ValueError
        seconds = sum(float(p) * 60 ** i for i, p in enumerate(reversed(parts)))
        return seconds + 86400 * int(days or 0)
    except ValueError:
        raise BadInput(f"{where}: TotalCPU '{text}' is not [D-][HH:]MM:SS")


def submit_time(text, where):
    """Submit as sacct prints it (2026-06-01T10:00:00), a naive date:
    only differences count, so the time zone does not matter."""
    try:
        return datetime.datetime.fromisoformat(text)
    except ValueError:
        raise BadInput(f"{where}: Submit '{text}' is not YYYY-MM-DDTHH:MM:SS")


def number(text, where, what):
    """A finite number of at least 0 (sacct prints no other in these
    fields: 'nan' or '1e400' would reach the trace as nan or inf)."""
    try:
        value = float(text)
    except ValueError:
        raise BadInput(f"{where}: {what} '{text}' is not a number")
    if not math.isfinite(value) or value < 0:
        raise BadInput(f"{where}: {what} '{text}' is not a number of at least 0")
    if value > BIG:
        raise BadInput(f"{where}: {what} '{text}' is over 10^12, the most "
                       "a trace holds")
    return value


def whole(text, where, what):
    """A whole number of at least 0, as sacct writes counts and ids."""
    # ASCII digits: isdigit() takes '²', which int() refuses
    if not (text.isascii() and text.isdigit()) or len(text) > 20:
        raise BadInput(f"{where}: {what} '{text}' is not a whole number")
    return int(text)


def utf8_lines(f, name, read):
    """The lines of the binary file f as text; a line that is not UTF-8 is
    named (decoding the file whole would name a block, not a line).
    read[0] counts the lines handed out."""
    for line, raw in enumerate(f, 1):
        read[0] = line
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BadInput(f"{name}:{line}: not UTF-8 text")


def read_rows(f, name):
    """(line number, row) of every line after the header."""
    read = [0]
    reader = csv.DictReader(utf8_lines(f, name, read), delimiter="|",
                            quoting=csv.QUOTE_NONE)
    missing = [k for k in FIELDS if k not in (reader.fieldnames or ())]
    if missing:
        raise BadInput(f"{name}:1: missing field {', '.join(missing)} "
                       f"(sacct --format {','.join(FIELDS)})")
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error:
            # a carriage return inside a line, say
            raise BadInput(f"{name}:{read[0]}: not one line of "
                           "sacct --parsable2 output")
        # csv keys fields past the header's under None, and gives
        # None to those a short line lacks
        if None in row or None in row.values():
            raise BadInput(f"{name}:{reader.line_num}: not the "
                           f"{len(reader.fieldnames)} fields of the header")
        yield reader.line_num, row


def job_of(row, where):
    """The trace figures of a job's own line, or None for one left out."""
    gpus = gpu_count(row["AllocTRES"], where)
    elapsed = number(row["ElapsedRaw"] or "0", where, "ElapsedRaw")
    if gpus == 0 or elapsed == 0:
        return None
    whole(row["JobIDRaw"], where, "JobIDRaw")
    limit = row["TimelimitRaw"]
    limit_s = number(limit, where, "TimelimitRaw") * 60 if limit.isdigit() else None
    mem = tres(row["ReqTRES"], "gres/aegis_mem")
    return {"job_index": row["JobIDRaw"], "submit": submit_time(row["Submit"], where),
            "user": row["User"],
            "num_gpus": gpus, "duration_s": elapsed,
            "time_limit_s": limit_s if limit_s and limit_s <= MAX_LIMIT_S else None,
            "mem_mib": number(mem, where, "gres/aegis_mem") / gpus if mem else None,
            "load_cpus": cpu_seconds(row["TotalCPU"], where) / elapsed
            if row["TotalCPU"] else None,
            "peak_bytes": None}


def not_ended(row):
    """The job's State when it had not ended, else None; a row without
    the field is taken as ended. sacct writes 'CANCELLED by UID', so the
    first word is the state."""
    state = (row.get("State") or "").split(" ", 1)[0]
    return None if "State" not in row or state in ENDED else state or "(empty)"


def read_jobs(f, name, running):
    """The jobs of the sacct output, their steps' peaks folded in; those
    left out as not ended are kept in running, job id: state."""
    jobs = {}
    for line, row in read_rows(f, name):
        where = f"{name}:{line}"
        jobid, _, step = row["JobIDRaw"].partition(".")
        if not step:
            # a job's last record (sacct --duplicates writes one a
            # requeue, oldest first) says whether it ended: an earlier
            # record is stale, whether it ended or not
            state = not_ended(row)
            running.pop(jobid, None)
            if state:
                running[jobid] = state
                jobs.pop(jobid, None)
                continue
            job = job_of(row, where)
            if job:
                jobs[jobid] = job
            continue
        used = tres(row["TRESUsageInMax"], "gres/gpumem")
        if used and jobid in jobs:
            peak = jobs[jobid]["peak_bytes"] or 0
            jobs[jobid]["peak_bytes"] = max(peak, size_bytes(used, where,
                                                            "gres/gpumem"))
    return list(jobs.values())


def fmt(value):
    return "" if value is None else f"{value:.6g}"


def seconds(value):
    """A time as sacct gives it, whole seconds, written whole: six
    significant digits made a month's 2,000,001 s '2e+06'."""
    return "" if value is None else f"{value:.15g}"


def write_trace(jobs, out):
    start = min(j["submit"] for j in jobs)
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["job_index", "submit_time_s", "user", "num_gpus", "duration_s",
                "time_limit_s", "mem_mib", "peak_mib", "load_cpus"])
    for j in sorted(jobs, key=lambda j: (j["submit"], int(j["job_index"]))):
        peak = j["peak_bytes"] and j["peak_bytes"] / 2 ** 20 / j["num_gpus"]
        w.writerow([j["job_index"], seconds((j["submit"] - start).total_seconds()),
                    j["user"], j["num_gpus"],
                    seconds(j["duration_s"]), seconds(j["time_limit_s"]), fmt(j["mem_mib"]),
                    fmt(peak), fmt(j["load_cpus"])])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sacct", help="sacct --parsable2 output ('-': standard input)")
    args = ap.parse_args()
    running = {}
    try:
        with (sys.stdin.buffer if args.sacct == "-"
              else open(args.sacct, "rb")) as f:
            jobs = read_jobs(f, args.sacct, running)
    except OSError as e:
        sys.exit(f"sacct_trace: {args.sacct}: {e.strerror}")
    except BadInput as e:
        sys.exit(f"sacct_trace: {e}")
    if running:
        counts = {}
        for state in running.values():
            counts[state] = counts.get(state, 0) + 1
        states = ", ".join(f"{s} {n}" for s, n in sorted(counts.items()))
        print(f"sacct_trace: left out {len(running)} jobs that had "
              f"not ended when sacct ran ({states})", file=sys.stderr)
    sized = [j for j in jobs if j["mem_mib"] is not None or j["peak_bytes"]]
    if len(sized) < len(jobs):
        print(f"sacct_trace: left out {len(jobs) - len(sized)} GPU jobs with "
              "neither gres/aegis_mem nor gres/gpumem", file=sys.stderr)
    if not sized:
        sys.exit(f"sacct_trace: {args.sacct}: no GPU job that ran and is sized")
    write_trace(sized, sys.stdout)


if __name__ == "__main__":
    main()
