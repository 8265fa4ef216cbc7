"""The installed Python modules have every aegis module they import.

`cmake --install BUILD` (into a DESTDIR: the .deb is made of the same
install rules, pkg/deb.cmake) puts aegis's modules in one folder; each
`import aegis_...` in them, at the top or inside a function, must find
its module there, not only in the source tree the tests run from: the
package shipped aegis_pipeline without aegis_downsample (its downsampler()
failed with ModuleNotFoundError) and aegis_describe without aegis_record
(describe() failed so). Then each installed module is imported from that
folder alone.

usage: test_installed.py BUILD (ctest runs it with /usr/bin/python3)."""
import ast
import glob
import os
import subprocess
import sys
import tempfile

OURS = ("aegis_", "_aegis_feed", "tensorsocket")


def imported(path):
    """The top-level names of the modules a file imports (not relative
    ones), wherever in it."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            yield node.module.split(".")[0]


def modules_in(folder):
    """The importable names a folder holds: NAME.py, NAME.*.so, NAME/."""
    names = set()
    for entry in os.listdir(folder):
        path = os.path.join(folder, entry)
        if entry.endswith(".py"):
            names.add(entry[:-3])
        elif entry.endswith(".so"):
            names.add(entry.split(".")[0])
        elif os.path.isfile(os.path.join(path, "__init__.py")):
            names.add(entry)
    return names


def main():
    build = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["cmake", "--install", build],
                       env=dict(os.environ, DESTDIR=tmp), check=True,
                       stdout=subprocess.DEVNULL)
        found = glob.glob(os.path.join(tmp, "**", "aegis_describe.py"),
                          recursive=True)
        assert len(found) == 1, found
        folder = os.path.dirname(found[0])
        have = modules_in(folder)
        missing = []
        for path in sorted(glob.glob(os.path.join(folder, "**", "*.py"),
                                     recursive=True)):
            for name in sorted(set(imported(path))):
                if name.startswith(OURS) and name not in have:
                    missing.append("%s imports %s"
                                   % (os.path.relpath(path, folder), name))
        assert not missing, "not installed: " + "; ".join(missing)
        # each from the installed folder alone (torch and numpy from the
        # system's: a module that needs one the machine lacks is passed)
        ours = sorted(n for n in have if n.startswith(OURS))
        probe = ("import importlib, os, sys\n"
                 "folder = sys.argv[1]\n"
                 "for name in sys.argv[2:]:\n"
                 "    try:\n"
                 "        m = importlib.import_module(name)\n"
                 "    except ImportError as e:\n"
                 "        if (e.name or '').startswith(%r):\n"
                 "            raise\n"
                 "        print('%%s: needs %%s, not here' %% (name, e.name))\n"
                 "        continue\n"
                 "    assert m.__file__.startswith(folder), m.__file__\n"
                 "    print('%%s: ok' %% name)\n" % (OURS,))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("PYTHON")}
        env["PYTHONPATH"] = folder
        subprocess.run([sys.executable, "-c", probe, folder, *ours],
                       env=env, cwd=tmp, check=True)
    print("installed modules: ok (%d)" % len(ours))


if __name__ == "__main__":
    main()
