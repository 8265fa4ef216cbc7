"""Shared set-up of the extractor tests: argv is the project root (then the
measurement data folder, default data/); python/ goes on sys.path; no PyTorch means skip (77)."""
import os
import sys

SKIP = 77

ROOT = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else \
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else \
    os.path.join(ROOT, "data")
sys.path.insert(0, os.path.join(ROOT, "python"))

try:
    import torch  # noqa: F401
    import torchvision  # noqa: F401
except ImportError:
    print("skipped: PyTorch or torchvision is not installed")
    sys.exit(SKIP)


def run_tests():
    """Run the calling module's unittest cases; exit 0 or 1."""
    import unittest
    main = sys.modules["__main__"]
    suite = unittest.defaultTestLoader.loadTestsFromModule(main)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)
