"""`/gb-fix` on a PR whose fixes mix a guard at the break's line and a compile-site setting in
another file: the push stage re-derives both from the pinned commit (the compile site found again
from the frame, the same way the fix job found it) and pushes one commit with both; and when one
fix cannot be re-derived, the others are pushed and the reply names the one left out and why.
Real torch, the three stages as gbbot-fix.yml runs them, real git over smart HTTP, the GitHub
stand-in."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import git
from tests.e2e.action.test_gb_fix import breaks_at
from tests.gb_fix_world import BRANCH, PR, World, open_pull, pull_files
from tests.git_http import GitHttpRemote
from tests.github_standin import ACTIONS_TOKEN
from tests.github_standin.fixtures import checked_standin
from tests.step_project import author_repository

CONFIG = """\
version: 1
entrypoints:
  - name: step
    call: entry:step
mode: fast
fail_on: new
"""
BASE_MODEL = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        y = self.proj(x)
        return y
"""
# The PR: a print (guarded at its line) and a scalar read from a tensor (a setting at the compile,
# which is in entry.py)
HEAD_MODEL = BASE_MODEL.replace(
    "        return y\n", '        print("step")\n        return y * (1.0 + y.abs().mean().item())\n'
)
ENTRY = """\
import torch

from model import Net


def step():
    torch.manual_seed(0)
    with torch.no_grad():
        return torch.compile(Net())(torch.randn(2, 4))
"""


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    bare, work, base = author_repository(tmp_path, {".gbbot.yml": CONFIG, "model.py": BASE_MODEL, "entry.py": ENTRY})
    git(work, "checkout", "-qb", BRANCH)
    (work / "model.py").write_text(HEAD_MODEL)
    git(work, "commit", "-qam", "print and scale")
    head = git(work, "rev-parse", "HEAD")
    git(work, "push", "-q", str(bare), "main", BRANCH)
    with GitHttpRemote(bare.parent, ACTIONS_TOKEN) as remote, checked_standin() as gh:
        gh.set_clone_url(remote.repo_url("octo-repo.git"))
        open_pull(gh, head, base)
        gh.set_pull_files(PR, pull_files(bare, base, head))  # fixes are pushed only for lines it changed
        yield World(tmp_path, gh, remote, bare, head, base)


def _fix_job(world: World) -> tuple[dict, Path]:
    payload = world.comment("/gb-fix")
    assert world.authorize(payload).outputs["allowed"] == "true"
    return payload, world.fix(payload, world.head)


def test_a_guard_and_a_setting_in_another_file_are_pushed_as_one_verified_commit(world: World) -> None:
    payload, artifact = _fix_job(world)
    pushed = world.push(payload, world.head, artifact)
    tip = world.branch_tip()
    assert pushed.outputs["fix-commit"] == tip and git(world.bare, "rev-parse", f"{tip}^") == world.head
    assert git(world.bare, "diff", "--name-only", world.head, tip).split() == ["entry.py", "model.py"]
    entry = git(world.bare, "show", f"{tip}:entry.py")
    assert "torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(Net()))(torch.randn(2, 4))" in entry
    assert "if not torch.compiler.is_compiling():" in git(world.bare, "show", f"{tip}:model.py")
    assert git(world.bare, "log", "-1", "--format=%s", tip) == "gbbot: fix 2 graph breaks"
    assert len(breaks_at(world, world.head)) == 2 and breaks_at(world, tip) == []
    (reply,) = world.replies()
    assert "with 2 verified fix(es)" in reply and "not pushed" not in reply
    assert world.reactions(payload)[-1] == "rocket"


def test_a_fix_that_cannot_be_rederived_is_named_and_the_others_are_pushed(world: World) -> None:
    payload, artifact = _fix_job(world)
    report_path = artifact / "report.json"
    report = json.loads(report_path.read_text())
    (setting,) = [f for f in report["extra"]["fixes"] if f["variant"] == "capture_scalar_outputs"]
    setting["hunks"][0]["replacement"][0] += "  # and something else"  # no recipe makes this
    report_path.write_text(json.dumps(report))
    world.push(payload, world.head, artifact)
    tip = world.branch_tip()
    assert tip != world.head
    assert git(world.bare, "diff", "--name-only", world.head, tip).split() == ["model.py"]
    assert git(world.bare, "log", "-1", "--format=%s", tip) == "gbbot: fix 1 graph break"
    (reply,) = world.replies()
    assert "with 1 verified fix(es). 1 verified fix(es) left out" in reply
    left_out = reply.split("**Verified but not pushed**", 1)[1].split("**Remaining**", 1)[0]
    assert "`GB0124` `model.py:13`" in left_out
    assert "its hunks are not what the recipe makes of the PR" in left_out
    assert "`GB0059`" not in left_out  # the print's guard was pushed
    assert world.reactions(payload)[-1] == "rocket"
