"""check_json.py OUT.json JOBS GPUS [GPUS_PER_SERVER] -- checks that an
`aegis sim --json` document holds together: one object, every policy has
every job once, attempts are ordered and on valid GPUs, a finished job's
last attempt did not crash, a job's GPUs lie on one server, exclusive never
shares a GPU, the summary figures (percentiles too) agree with the
jobs, and each job's waiting time by reason adds up to its wait."""
import json
import sys


def percentile(ordered, q):
    """numpy's default (linear) percentile of an ascending list."""
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    if lo + 1 >= len(ordered):
        return ordered[lo]
    return ordered[lo] + (ordered[lo + 1] - ordered[lo]) * (pos - lo)


def check_policy(p, jobs, gpus, per_server):
    name = p["policy"]
    assert len(p["jobs"]) == jobs, (name, len(p["jobs"]))
    assert sorted(j["index"] for j in p["jobs"]) == list(range(1, jobs + 1))
    ends, busy, totals = [], {}, {}
    for j in p["jobs"]:
        assert j["attempts"], (name, j["index"], "never ran")
        prev_end = j["submit_s"]
        for a in j["attempts"]:
            assert prev_end <= a["start_s"] <= a["end_s"], (name, j)
            prev_end = a["end_s"]
            assert all(0 <= g < gpus for g in a["gpus"]), (name, j)
            assert len({g // per_server for g in a["gpus"]}) == 1, (name, j)
            for g in a["gpus"]:
                busy.setdefault(g, []).append((a["start_s"], a["end_s"]))
        assert not j["attempts"][-1]["oom"], (name, j)
        ends.append(j["attempts"][-1]["end_s"])
        assert abs(j["jct_s"] - (ends[-1] - j["submit_s"])) < 0.01, j
        waits = j["wait_by_reason_s"]
        assert all(v > 0 for v in waits.values()), (name, j)
        assert abs(sum(waits.values()) - j["wait_s"]) < 0.01, (name, j)
        for k, v in waits.items():
            totals[k] = totals.get(k, 0) + v
    first = min(j["submit_s"] for j in p["jobs"])
    assert abs(p["makespan_s"] - (max(ends) - first)) < 0.01, name
    jct = sum(e - j["submit_s"] for e, j in zip(ends, p["jobs"])) / jobs
    assert abs(p["mean_jct_s"] - jct) < 0.01, (name, jct)
    jcts = sorted(e - j["submit_s"] for e, j in zip(ends, p["jobs"]))
    for key, q in (("p50_jct_s", 0.50), ("p95_jct_s", 0.95)):
        want = percentile(jcts, q)
        assert abs(p[key] - want) < 0.01, (name, key, p[key], want)
    assert p["ooms"] == sum(a["oom"] for j in p["jobs"] for a in j["attempts"])
    assert p["energy_j"] > 0, name
    assert set(totals) == set(p["total_wait_by_reason_s"]), name
    for k, v in totals.items():
        # each job's figure is printed to 0.001 s
        assert abs(p["total_wait_by_reason_s"][k] - v) < 0.001 * jobs, (name, k)
    if name == "exclusive":
        for g, spans in busy.items():
            spans.sort()
            for (s0, e0), (s1, e1) in zip(spans, spans[1:]):
                assert s1 >= e0 - 1e-6, ("exclusive shared gpu", g, e0, s1)
    return busy


def main():
    path, jobs, gpus = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    per_server = int(sys.argv[4]) if len(sys.argv) > 4 else gpus
    with open(path) as f:
        doc = json.load(f)
    assert list(doc) == ["policies"] and doc["policies"]
    used = set()
    for p in doc["policies"]:
        used |= set(check_policy(p, jobs, gpus, per_server))
    if gpus > per_server:
        assert any(g >= per_server for g in used), "second server unused"
    print("ok:", [p["policy"] for p in doc["policies"]])


if __name__ == "__main__":
    main()
