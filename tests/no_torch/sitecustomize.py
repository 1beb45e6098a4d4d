"""Outside the slow tier torch can be found but not imported (tests/tiers.py).

tests/tiers.py copies this file into a session directory that it puts first on PYTHONPATH while a
fast test runs, so every Python process such a test starts runs it as its `sitecustomize`, and
uses the same `RefuseTorch` in the pytest process itself. `importlib.util.find_spec("torch")`
still answers (gbbot reads torch's graph-break registry through it); executing torch raises, and
the attempt is written down, so the test fails even when the code under test swallows the error.
Standalone on purpose: a child process cannot import the tests package.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys

ATTEMPTS = "attempts.jsonl"
HINT = "torch cannot start outside the slow tier: a test that needs it belongs under tests/e2e/ and imports it inside the test"


def is_torch(name):
    return name == "torch" or name.startswith("torch.")


class _Refusing(importlib.abc.Loader):
    def __init__(self, name, record):
        self.name = name
        self.record = record

    def create_module(self, spec):
        self.record(self.name)
        raise ImportError(f"import {self.name}: {HINT}", name=self.name)

    def exec_module(self, module):
        raise ImportError(f"import {self.name}: {HINT}", name=self.name)


class RefuseTorch(importlib.abc.MetaPathFinder):
    """Finds torch where it is installed, with a loader that refuses to run it."""

    def __init__(self, record):
        self.record = record

    def find_spec(self, name, path=None, target=None):
        if not is_torch(name):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Refusing(name, self.record)
        return spec


def _write_down(name):
    entry = {"pid": os.getpid(), "argv": sys.argv, "module": name}
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), ATTEMPTS), "a") as log:
        log.write(json.dumps(entry) + "\n")


def _chain_next_sitecustomize():
    """Run the sitecustomize that comes after this one on sys.path (a virtualenv's, or gbbot's
    fast-mode shim when that was not first), as gbbot's own shim does."""
    here = os.path.dirname(os.path.abspath(__file__))
    entries = [os.path.abspath(e or ".") for e in sys.path]
    for entry in entries[entries.index(here) + 1 :] if here in entries else ():
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_no_torch_chained_sitecustomize", candidate)
            if spec and spec.loader:
                spec.loader.exec_module(importlib.util.module_from_spec(spec))
            return


if __name__ != "tests.no_torch.sitecustomize":  # a child process's sitecustomize, not an import
    sys.meta_path.insert(0, RefuseTorch(_write_down))
    _chain_next_sitecustomize()
