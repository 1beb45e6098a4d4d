"""`gbbot parse` run whole: on a trace recorded here and now with real torch, and what it claims
about a report it did not run."""

from __future__ import annotations

import json

from gbbot.main import main

LIBRARY_CALLED_TWICE = """\
import torch
import fakelib


def f(x):
    x = fakelib.scale(x)
    x = x + 1
    x = fakelib.scale(x)
    return x


torch.compile(f, backend="eager")(torch.ones(3))  # run as plain Python: no kernels to build
"""


def test_a_repeat_whose_user_stack_dynamo_suppressed_folds_into_its_break(tmp_path, capsys):
    """Dynamo prints a third-party break's user stack once; repeats say "user stack suppressed"
    and name only the library line. `gbbot parse` of such a TORCH_LOGS text is one break, not two."""
    import os
    import subprocess
    import sys

    from tests.conftest import FAKE_SITE_PACKAGES

    (tmp_path / "s.py").write_text(LIBRARY_CALLED_TWICE)
    env = {**os.environ, "TORCH_LOGS": "graph_breaks", "PYTHONPATH": str(FAKE_SITE_PACKAGES)}
    run = subprocess.run([sys.executable, "s.py"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    (tmp_path / "log.txt").write_text(run.stdout + run.stderr)
    assert "user stack suppressed" in run.stderr  # the case under test really happened
    out = tmp_path / "report.json"
    assert main(["parse", str(tmp_path / "log.txt"), "--root", str(tmp_path), "--json", str(out), "-q",
                 "--fail-on", "none"]) == 0  # fmt: skip
    (brk,) = json.loads(out.read_text())["entrypoints"][0]["breaks"]
    assert (brk["gb_id"], brk["file"], brk["line"], brk["count"]) == ("GB0025", "s.py", 6, 3)
    assert brk["library_site"]["path"] == "fakelib/__init__.py"
