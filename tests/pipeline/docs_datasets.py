"""The examples of docs/pipelines.md's Datasets section, run as written:
its first shell block (with `aegis dataset watch` stopped after one scan)
in a scratch home, then its Python block over a training set of that
dataset, which must read every sample of it; and the example of its
section "The embedding command" with a linear model over that dataset,
which must write one row of the model's outputs per key; and the
evaluation command of its section "Evaluation", which must write one
row of 4 scores (the classes) per key in the binary predictions format.

usage: docs_datasets.py AEGIS DOCS_PIPELINES_MD (PYTHONPATH names python/)
"""
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib


def section_blocks(path, heading):
    """The fenced code blocks (language, text) of one `## ` section."""
    with open(path) as f:
        text = f.read()
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end > 0 else None]
    return re.findall(r"```(\w+)\n(.*?)```", section, re.S)


def run_shell(block, aegis, home):
    """The block with `aegis` the build's, and watch scanning once."""
    prelude = (f'aegis() {{ if [ "$1 $2" = "dataset watch" ]; then '
               f'"{aegis}" "$@" --once; else "{aegis}" "$@"; fi; }}\n')
    env = dict(os.environ, HOME=home)
    env.pop("AEGIS_STATE_HOME", None)
    env.pop("XDG_STATE_HOME", None)
    out = subprocess.run(["bash", "-euc", prelude + block], env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def write_trainset(path, keys):
    body = struct.pack("<8sQQII", b"AEGTSET1", len(keys), 1, 0, 0)
    body += b"".join(struct.pack("<QfI", k, 1.0, 0) for k in keys)
    with open(path, "wb") as f:
        f.write(body + struct.pack("<I", zlib.crc32(body)))


def main():
    aegis, doc = sys.argv[1], sys.argv[2]
    blocks = section_blocks(doc, "Datasets")
    shell = [b for lang, b in blocks if lang == "sh"][0]
    python = [b for lang, b in blocks if lang == "python"][0]
    with tempfile.TemporaryDirectory() as home:
        out = run_shell(shell, aegis, home)
        assert "20000 samples" in out, out
        dataset = os.path.join(home, ".local/state/aegis/datasets/clicks")
        trainset = os.path.join(home, "t.tset")
        write_trainset(trainset, range(0, 20000, 7))
        counting = python.replace("        ...", "        seen.append(len(label))")
        env = dict(os.environ, AEGIS_TRAINSET=trainset,
                   AEGIS_DATASET=dataset)
        script = "seen = []\n" + counting + \
            "\nassert sum(seen) == 3 * len(range(0, 20000, 7)), seen\n"
        done = subprocess.run([sys.executable, "-c", script], env=env,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        run_embedding(doc, dataset, trainset, home)
        run_evaluation(doc, dataset, trainset, home)
    print("docs/pipelines.md Datasets, embedding and evaluation examples: "
          "ok")


def run_model_example(doc, heading, dataset, outputs, env):
    """The python block of a section run as its job would run it, with a
    linear model of the dataset's features to outputs values saved where
    AEGIS_MODEL says; the file it wrote."""
    import torch
    import aegis_pipeline
    python = [b for lang, b in section_blocks(doc, heading)
              if lang == "python"][0]
    first = aegis_pipeline.Dataset(dataset).bytes(0)
    dim = len(aegis_pipeline.Dataset(dataset).default_parser()(first))
    torch.save(torch.nn.Linear(dim, outputs).state_dict(), env["AEGIS_MODEL"])
    done = subprocess.run([sys.executable, "-c", python],
                          env=dict(os.environ, AEGIS_DATASET=dataset, **env),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def run_embedding(doc, dataset, keys, home):
    """The embedding section's example, as an embedding job runs it."""
    import numpy as np
    out = os.path.join(home, "0.out")
    run_model_example(doc, "The embedding command", dataset, 3, {
        "AEGIS_EMBED_KEYS": keys, "AEGIS_EMBED_OUT": out,
        "AEGIS_MODEL": os.path.join(home, "0.model")})
    rows = np.fromfile(out, "<f4")
    assert rows.size == 3 * len(range(0, 20000, 7)), rows.size


def run_evaluation(doc, dataset, keys, home):
    """The evaluation section's example, as an evaluation job runs it: a
    binary predictions file of 4 scores a key, the keys in order."""
    import numpy as np
    out = os.path.join(home, "0.pred")
    run_model_example(doc, "Evaluation", dataset, 4, {
        "AEGIS_EVAL_KEYS": keys, "AEGIS_EVAL_OUT": out,
        "AEGIS_MODEL": os.path.join(home, "0.model")})
    raw = open(out, "rb").read()
    magic, count, width, zero = struct.unpack_from("<8sQII", raw)
    want = list(range(0, 20000, 7))
    assert (magic, count, width, zero) == (b"AEGPRED1", len(want), 4, 0)
    rows = np.frombuffer(raw, [("key", "<u8"), ("s", "<f4", (4,))], offset=24)
    assert rows["key"].tolist() == want and np.isfinite(rows["s"]).all()


if __name__ == "__main__":
    main()
