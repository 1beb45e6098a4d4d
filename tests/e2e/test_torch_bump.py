"""A pull request that moves torch: the bundled example with `torch==2.13.0` in requirements.txt on
main and `torch==2.14.1` on the PR. gbbot's environment holds 2.14.1 (.ci/run's second
environment), so the head's setup has nothing to install and the base's installs the CPU build of
2.13.0 into the base's own environment; each side's runs import their own torch. The eight break
patterns of the example were measured the same on both releases: the diff says torch moved and
0 new, 0 fixed.

Marked `torch_next`: only the next torch's tier selects it (tests/tiers.py deselects it elsewhere;
on torch 2.13.0 the head would install 2.14.1, a CUDA build of several GB).
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
from pathlib import Path

import pytest

from tests.cli_helpers import gbbot
from tests.conftest import git

pytestmark = pytest.mark.torch_next

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NEXT = "2.14.1"
# pip's index settings pass to the steps (the config allow-lists them): CI's CPU wheel index
SETUP = """\
setup:
  - pip install -r requirements.txt
pass_env: [PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS]
"""


@pytest.fixture(scope="module")
def bumped(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    assert importlib.metadata.version("torch").startswith(NEXT), "this tier's gbbot runs the next torch"
    repo = tmp_path_factory.mktemp("torch-bump") / "example"
    shutil.copytree(EXAMPLES, repo, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / ".gbbot.yml").write_text((repo / ".gbbot.yml").read_text() + SETUP)
    (repo / "requirements.txt").write_text("torch==2.13.0\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the example on torch 2.13.0")
    git(repo, "checkout", "-q", "-b", "bump")
    (repo / "requirements.txt").write_text(f"torch=={NEXT}\n")
    git(repo, "commit", "-q", "-am", f"torch {NEXT}")
    done = gbbot(repo, "diff", "--base", "main", "--setup", "--jobs", "1", "--fail-on", "none",
                 "--json", "diff.json", "--markdown", "diff.md")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads((repo / "diff.json").read_text()), (repo / "diff.md").read_text()


def test_a_torch_bump_reports_the_torch_change_and_no_break_change(bumped):
    report, md = bumped
    found = report["diff"]
    assert (found["new"], found["fixed"], found["hidden"], found["revealed"]) == ([], [], [], [])
    assert len(found["persisting"]) >= 6  # the example's breaks, seen on both sides
    moved = {p["name"]: (p["base"], p["head"]) for p in found["dependencies"]["packages"]}
    base, head = moved["torch"]
    assert base.startswith("2.13.0") and head.startswith(NEXT)
    assert report["torch_version"].startswith(NEXT) and report["packages"]["torch"] == head
    assert f"**torch {base} → {head}" in md and ": no change in graph breaks." in md
