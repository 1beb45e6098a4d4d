"""`/gb-fix` on a PR whose fixes mix a guard at the break's line and a compile-site setting in
another file and in the `compile:` option of a `model:` entry (gbbot compiles `net` itself): the
push stage re-derives both from the pinned commit (the compile site found again from the frame,
the entry's option from the configuration, the same way the fix job found them) and pushes one
commit with both; and when one fix cannot be re-derived, the others are pushed and the reply
names the one left out and why.
Real torch, the three stages as gbbot-fix.yml runs them, real git over smart HTTP, the GitHub
stand-in."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import git
from tests.e2e.action.test_gb_fix import breaks_at
from tests.gb_fix_world import BRANCH, FixedOnce, World, artifact_copy, copied, fixed_once
from tests.step_project import author_repository

CONFIG = """\
version: 1
entrypoints:
  - name: step
    call: entry:step
  - {name: net, model: 'model:Net', inputs: [{tensor: [2, 4]}]}
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


def make_pr(tmp: Path) -> tuple[Path, str, str]:
    bare, work, base = author_repository(tmp, {".gbbot.yml": CONFIG, "model.py": BASE_MODEL, "entry.py": ENTRY})
    git(work, "checkout", "-qb", BRANCH)
    (work / "model.py").write_text(HEAD_MODEL)
    git(work, "commit", "-qam", "print and scale")
    git(work, "push", "-q", str(bare), "main", BRANCH)
    return bare, base, git(work, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def once(tmp_path_factory: pytest.TempPathFactory) -> FixedOnce:
    """The PR and one fix job for it, shared by the module's tests (each gets its own copy)."""
    return fixed_once(tmp_path_factory.mktemp("gb-fix-sites"), make_pr)


@pytest.fixture
def world(once: FixedOnce, tmp_path: Path) -> Iterator[World]:
    with copied(once, tmp_path) as fresh:  # fixes are pushed only for lines the PR changed
        yield fresh


def _fix_job(world: World, once: FixedOnce, tmp: Path) -> tuple[dict, Path]:
    payload = world.comment("/gb-fix")
    assert world.authorize(payload).outputs["allowed"] == "true"
    return payload, artifact_copy(once, tmp)


def test_a_guard_and_a_setting_in_another_file_are_pushed_as_one_verified_commit(
    world: World, once: FixedOnce, tmp_path: Path
) -> None:
    payload, artifact = _fix_job(world, once, tmp_path)
    pushed = world.push(payload, world.head, artifact)
    tip = world.branch_tip()
    assert pushed.outputs["fix-commit"] == tip and git(world.bare, "rev-parse", f"{tip}^") == world.head
    assert git(world.bare, "diff", "--name-only", world.head, tip).split() == [".gbbot.yml", "entry.py", "model.py"]
    entry = git(world.bare, "show", f"{tip}:entry.py")
    assert "torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(Net()))(torch.randn(2, 4))" in entry
    config = git(world.bare, "show", f"{tip}:.gbbot.yml")
    assert (
        "  - {name: net, model: 'model:Net', inputs: [{tensor: [2, 4]}], compile: {dynamo: {capture_scalar_outputs: true}}}\n"
        in config
    )
    assert "if not torch.compiler.is_compiling():" in git(world.bare, "show", f"{tip}:model.py")
    assert git(world.bare, "log", "-1", "--format=%s", tip) == "gbbot: fix 2 graph breaks"
    assert len(breaks_at(world, world.head)) == 4 and breaks_at(world, tip) == []
    (reply,) = world.replies()
    assert "with 2 verified fix(es)" in reply and "not pushed" not in reply
    assert world.reactions(payload)[-1] == "rocket"


def test_a_fix_that_cannot_be_rederived_is_named_and_the_others_are_pushed(
    world: World, once: FixedOnce, tmp_path: Path
) -> None:
    payload, artifact = _fix_job(world, once, tmp_path)
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
    assert "with 1 verified fix(es). 1 verified fix(es) not pushed" in reply
    left_out = reply.split("**Not pushed**", 1)[1].split("\n\n", 1)[0]
    assert "`GB0124` `model.py:13`" in left_out
    assert "its hunks are not what the recipe makes of the PR" in left_out
    assert "`GB0059`" not in left_out  # the print's guard was pushed
    assert world.reactions(payload)[-1] == "rocket"
