"""The examples of docs/pipelines.md's Datasets section, run as written:
its first shell block (with `aegis dataset watch` stopped after one scan)
in a scratch home, then its Python block over a training set of that
dataset, which must read every sample of it; and the example of its
section "The embedding command" with a linear model over that dataset,
which must write one row of the model's outputs per key.

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
    print("docs/pipelines.md Datasets and embedding examples: ok")


def run_embedding(doc, dataset, keys, home):
    """The embedding section's example, as an embedding job runs it."""
    import numpy as np
    import torch
    import aegis_pipeline
    python = [b for lang, b in section_blocks(doc, "The embedding command")
              if lang == "python"][0]
    first = aegis_pipeline.Dataset(dataset).bytes(0)
    dim = len(aegis_pipeline.Dataset(dataset).default_parser()(first))
    model, out = os.path.join(home, "0.model"), os.path.join(home, "0.out")
    torch.save(torch.nn.Linear(dim, 3).state_dict(), model)
    env = dict(os.environ, AEGIS_EMBED_KEYS=keys, AEGIS_MODEL=model,
               AEGIS_EMBED_OUT=out, AEGIS_DATASET=dataset)
    done = subprocess.run([sys.executable, "-c", python], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = np.fromfile(out, "<f4")
    assert rows.size == 3 * len(range(0, 20000, 7)), rows.size


if __name__ == "__main__":
    main()
