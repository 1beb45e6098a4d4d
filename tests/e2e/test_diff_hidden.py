"""A break the head no longer traces because a new break makes its frame run eagerly is hidden, not
fixed. Real torch, real git."""

from __future__ import annotations

import json

from tests.cli_helpers import gbbot, write
from tests.conftest import git

BASE = """\
import torch

def step(x):
    for _ in range(2):
        x = x + 1
    print("step")
    return x

def main():
    return torch.compile(step)(torch.ones(2))
"""
HEAD = BASE.replace("        x = x + 1\n", "        x = x + 1\n        torch._dynamo.graph_break()\n")


def test_a_break_inside_a_frame_that_now_runs_eagerly_is_hidden_not_fixed(in_git_dir, tmp_path):
    write(in_git_dir, {"model.py": BASE, ".gbbot.yml": "version: 1\nentrypoints: [{name: m, call: 'model:main'}]\n"})
    git(in_git_dir, "add", "-A")
    git(in_git_dir, "commit", "-q", "-m", "base")
    git(in_git_dir, "checkout", "-q", "-b", "pr")
    write(in_git_dir, {"model.py": HEAD})
    git(in_git_dir, "commit", "-qam", "graph break in a loop")
    out = tmp_path / "report.json"
    md = tmp_path / "report.md"
    run = gbbot(in_git_dir, "diff", "--base", "main", "--json", str(out), "--markdown", str(md), tmp=tmp_path)
    assert run.returncode == 1, run.stderr
    data = json.loads(out.read_text())
    diff = data["diff"]
    (printed,) = diff["hidden_breaks"]
    assert printed["gb_id"] == "GB0059" and printed["code"] == 'print("step")'
    assert diff["fixed"] == [] and diff["hidden"] == [printed["fingerprint"]]
    (new,) = diff["new"]
    assert diff["hidden_by"] == {printed["fingerprint"]: new}
    assert data["counts"]["hidden"] == 1 and data["counts"]["fixed"] == 0
    text = md.read_text()
    assert "This PR adds **1** graph break and hides **1** (not fixed: its frame now runs eagerly)." in text
    assert "🙈 1 graph break hidden, not fixed" in text and "fixes" not in text.splitlines()[2]
    assert "1 new, 0 fixed, 1 hidden" in run.stdout
