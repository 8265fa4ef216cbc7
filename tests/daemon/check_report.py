"""check_report.py CSV JSON daemon|sim -- validates a report CSV against
the documented schema (README "Energy and CO2 reports"; ACCT_COLUMNS in
src/daemon/acct.c) and checks that the totals equal the sums of its rows.

daemon: CSV from `aegis report --csv`, JSON from `aegis report --json`;
        the overall total and each user's total are checked.
sim:    CSV from `aegis sim --report-csv`, JSON from `aegis sim --json`;
        each policy's "jobs_total" is checked against its rows.
"""
import csv
import json
import math
import re
import sys

# name, type, required: the schema, in column order
SCHEMA = [
    ("timestamp", "iso", True), ("project_name", "str", False),
    ("duration", "float", True), ("emissions", "float", True),
    ("emissions_rate", "float", True), ("gpu_power", "float", True),
    ("gpu_energy", "float", True), ("energy_consumed", "float", True),
    ("gpu_count", "int", True), ("pue", "float", True),
    ("job_id", "int", True), ("user", "str", True), ("state", "str", True),
    ("submit_s", "float", True), ("start_s", "float", False),
    ("end_s", "float", False), ("attempts", "int", True),
    ("queue_wait_s", "float", True), ("gpu_hours", "float", True),
    ("energy_j", "float", True), ("co2_g", "float", True),
    ("slowdown", "float", False), ("grid_intensity_g_per_kwh", "float", True),
]
STATES = {"daemon": {"done", "failed", "cancelled", "timeout", "queued",
                     "running"},
          "sim": {"done", "stopped", "timeout", "unfinished"}}


def close(a, b, what):
    assert math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6), (what, a, b)


def typed(row, mode):
    out = {}
    for name, kind, required in SCHEMA:
        cell = row[name]
        if cell == "":
            assert not required, ("empty required cell", name, row)
            out[name] = None
            continue
        if kind == "int":
            out[name] = int(cell)
        elif kind == "float":
            out[name] = float(cell)
            assert math.isfinite(out[name]) and out[name] >= 0, (name, cell)
        elif kind == "iso":
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", cell), cell
            out[name] = cell
        else:
            out[name] = cell
    assert out["state"] in STATES[mode], out["state"]
    # units: kWh, kg, J, g, s, h agree with each other
    close(out["energy_j"], out["gpu_energy"] * 3.6e6, "energy_j vs gpu_energy")
    close(out["energy_consumed"], out["gpu_energy"], "energy_consumed")
    close(out["co2_g"], out["emissions"] * 1000, "co2_g vs emissions")
    close(out["co2_g"], out["energy_consumed"] * out["pue"]
          * out["grid_intensity_g_per_kwh"], "co2_g formula")
    if out["duration"] > 0:
        close(out["emissions_rate"], out["emissions"] / out["duration"], "rate")
        close(out["gpu_power"], out["energy_j"] / out["duration"], "power")
    assert out["gpu_hours"] <= out["gpu_count"] * out["duration"] / 3600 + 1e-6
    if out["slowdown"] is not None:
        assert out["state"] == "done" and out["slowdown"] >= 1 - 1e-6, out
    if out["start_s"] is not None:
        assert out["start_s"] >= out["submit_s"] - 1e-6, out
    assert out["pue"] >= 1
    return out


def check_total(rows, total, what):
    assert total["jobs"] == len(rows), (what, total["jobs"], len(rows))
    for key, col in [("duration", "duration"), ("queue_wait_s", "queue_wait_s"),
                     ("gpu_hours", "gpu_hours"), ("energy_j", "energy_j"),
                     ("energy_consumed", "energy_consumed"),
                     ("co2_g", "co2_g"), ("emissions", "emissions")]:
        close(sum(r[col] for r in rows), total[key], (what, key))


def main():
    path, json_path, mode = sys.argv[1:4]
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        want = [c[0] for c in SCHEMA] + (["policy"] if mode == "sim" else [])
        assert header == want, ("header", header)
        rows = [typed(dict(zip(header, r)), mode) | {"policy": r[-1]}
                for r in reader]
        assert all(len(r) for r in rows)
    doc = json.load(open(json_path))
    if mode == "daemon":
        check_total(rows, doc["total"], "total")
        for u in doc["users"]:
            check_total([r for r in rows if r["user"] == u["user"]], u, u["user"])
        assert sum(u["jobs"] for u in doc["users"]) == len(rows)
    else:
        for p in doc["policies"]:
            mine = [r for r in rows if r["policy"] == p["policy"]]
            check_total(mine, p["jobs_total"], p["policy"])
            close(p["gpu_hours"], sum(r["gpu_hours"] for r in mine), "gpu_hours")
            # the jobs' shares never exceed what all GPUs drew (energy_j: 0.1 J)
            assert p["energy_j"] >= p["jobs_total"]["energy_j"] - 0.1, p["policy"]
    print("ok:", len(rows), "rows,", len(header), "columns")


main()
