"""`/gb-fix` on a pull request whose branch already has breaks: the command fixes what the PR
added, and leaves the rest with why. The repository has a deepcopy and three prints that predate
the PR; the PR renames a module, removes a logger call from a block a loop calls (which reveals a
print after the loop, on a line it did not change) and adds one print in a function that had only
the deepcopy break. One commit removes exactly the added break; the reply names what was pushed
and what was left, and why; a second `/gb-fix` on the new head has nothing left to fix.

`autofix: true` scopes the same: the PR check of a second PR with the same head pushes the same
one fix to its own branch, and its comment says the others were left alone.

One PR, two commands, run once for the module (real torch, the three stages as gbbot-fix.yml runs
them, real git over smart HTTP, the GitHub stand-in); the tests read what they left."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.action_run import ActionRun, pull_request_event, run_action
from tests.conftest import git
from tests.e2e.action.test_gb_fix import breaks_at
from tests.gb_fix_world import BRANCH, PR, World, open_pull, pull_files
from tests.git_http import GitHttpRemote
from tests.github_standin import ACTIONS_TOKEN
from tests.github_standin.fixtures import checked_standin

CONFIG = """\
version: 1
entrypoints:
  - name: main
    call: entry:main
mode: fast
fail_on: new
autofix: true
"""
ENTRY = """\
import torch

from tinynet.net import Model, summarize
from tinynet.util import post, prep


def main():
    torch.manual_seed(0)
    x = torch.compile(prep)(torch.ones(2, 4))
    y = torch.compile(Model())(x)
    torch.compile(summarize)(y)
    return torch.compile(post)(y)
"""
# The logger in Block.forward, called from Model.forward's loop, sends Model.forward to eager on
# the base: its print after the loop is not traced there.
NET = """\
import logging

import torch

log = logging.getLogger("tinynet")


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        log.debug("block")
        return self.lin(x)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        print("model done")
        return x


def summarize(x):
    print("summary", x.shape)
    return x.sum()
"""
UTIL = """\
import copy

import torch


def prep(x):
    y = copy.deepcopy(x)
    return y * 2


def post(x):
    print("post", x.shape)
    return x + 1
"""
AUTOFIX_PR, AUTOFIX_BRANCH = 9, "feature-9"  # the same head, checked with autofix
ADDED = '    print("prep", y.shape)\n'
GUARDED = '    if not torch.compiler.is_compiling():\n        print("prep", y.shape)\n'


@dataclass
class Commands:
    world: World
    first: dict  # the first command's comment payload
    first_outputs: dict[str, str]  # its authorize stage's
    fix_log: str  # its fix stage's stderr
    report: dict  # its fix stage's report.json
    tip: str  # the branch after its push
    pushes: int  # the remote's pushes after it
    second: dict
    second_head: str  # the head the second command pinned
    second_fix_commit: str  # the second push stage's fix-commit output ("" when none)
    widened: dict  # a third command, `/gb-fix dry-run all`, on the new head
    widened_log: str  # its fix stage's stderr


def make_pr(tmp: Path) -> tuple[Path, str, str]:
    """The bare repository: main with the old breaks, the PR's branch; (bare, base, head)."""
    bare, work = tmp / "served" / "octo-repo.git", tmp / "author"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(bare))
    (work / "tinynet").mkdir(parents=True)
    git(work, "init", "-q", "-b", "main")
    files = {".gbbot.yml": CONFIG, "entry.py": ENTRY, "tinynet/__init__.py": "", "tinynet/net.py": NET}
    for path, text in {**files, "tinynet/util.py": UTIL}.items():
        (work / path).write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "tinynet")
    base = git(work, "rev-parse", "HEAD")
    git(work, "checkout", "-qb", BRANCH)
    git(work, "mv", "tinynet/util.py", "tinynet/helpers.py")
    (work / "entry.py").write_text(ENTRY.replace("tinynet.util", "tinynet.helpers"))
    (work / "tinynet/net.py").write_text(NET.replace('        log.debug("block")\n', ""))
    (work / "tinynet/helpers.py").write_text(UTIL.replace("    return y * 2\n", f"{ADDED}    return y * 2\n"))
    git(work, "add", "-A")
    git(work, "commit", "-qm", "helpers, a quieter block, a print in prep")
    git(work, "push", "-q", str(bare), "main", BRANCH, f"{BRANCH}:{AUTOFIX_BRANCH}")
    return bare, base, git(work, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def commands(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Commands]:
    tmp = tmp_path_factory.mktemp("gb-fix-scope")
    bare, base, head = make_pr(tmp)
    with GitHttpRemote(bare.parent, ACTIONS_TOKEN) as remote, checked_standin() as gh:
        gh.set_clone_url(remote.repo_url("octo-repo.git"))
        open_pull(gh, head, base)
        gh.set_pull_files(PR, pull_files(bare, base, head))
        world = World(tmp, gh, remote, bare, head, base)
        first = world.comment("/gb-fix")
        outputs = world.authorize(first).outputs
        artifact = world.fix(first, outputs["head-sha"], outputs["base-sha"])
        fix_log = world.runs[-1].stderr
        world.push(first, outputs["head-sha"], artifact)
        tip, pushes = world.branch_tip(), remote.pushes
        gh.state.pulls[PR].head_sha = tip  # GitHub follows the branch
        gh.set_pull_files(PR, pull_files(bare, base, tip))
        second = world.comment("/gb-fix")
        again = world.authorize(second).outputs
        pushed = world.push(second, again["head-sha"], world.fix(second, again["head-sha"], again["base-sha"]))
        widened = world.comment("/gb-fix dry-run all")
        wide = world.authorize(widened).outputs
        wide_artifact = world.fix(widened, wide["head-sha"], wide["base-sha"])
        widened_log = world.runs[-1].stderr
        world.push(widened, wide["head-sha"], wide_artifact)
        report = json.loads((artifact / "report.json").read_text())
        yield Commands(
            world,
            first,
            outputs,
            fix_log,
            report,
            tip,
            pushes,
            second,
            again["head-sha"],
            pushed.outputs.get("fix-commit", ""),
            widened,
            widened_log,
        )


def _where(found: list[dict]) -> list[tuple[str, int]]:
    return sorted((b["file"], b["line"]) for b in found)


def test_the_authorize_stage_pins_the_head_and_the_base(commands: Commands) -> None:
    world = commands.world
    assert commands.first_outputs["head-sha"] == world.head and commands.first_outputs["base-sha"] == world.base


def test_one_commit_on_the_pr_branch_removes_exactly_the_break_the_pr_added(commands: Commands) -> None:
    world, tip = commands.world, commands.tip
    assert tip != world.head and git(world.bare, "rev-parse", f"{tip}^") == world.head
    assert commands.pushes == 1
    assert git(world.bare, "diff", "--name-only", world.head, tip).split() == ["tinynet/helpers.py"]
    before = git(world.bare, "show", f"{world.head}:tinynet/helpers.py")
    assert git(world.bare, "show", f"{tip}:tinynet/helpers.py") == before.replace(ADDED, GUARDED).rstrip("\n")
    assert git(world.bare, "log", "-1", "--format=%s", tip) == "gbbot: fix 1 graph break"
    at_head = [b for e in commands.report["entrypoints"] for b in e["breaks"]]
    assert _where(at_head) == [
        ("tinynet/helpers.py", 7),
        ("tinynet/helpers.py", 8),
        ("tinynet/helpers.py", 13),
        ("tinynet/net.py", 25),
        ("tinynet/net.py", 30),
    ]
    # the guard adds a line above the rest of helpers.py; every other break is still there
    assert _where(breaks_at(world, tip)) == [
        ("tinynet/helpers.py", 7),
        ("tinynet/helpers.py", 14),
        ("tinynet/net.py", 25),
        ("tinynet/net.py", 30),
    ]


def test_the_fix_stage_verified_only_the_break_the_pr_added(commands: Commands) -> None:
    log = commands.fix_log
    assert "the breaks it added, on the lines it changed: 1 to verify, 4 left alone" in log
    assert "to verify: GB0059 tinynet/helpers.py:8" in log
    for where in ("tinynet/helpers.py:7", "tinynet/helpers.py:13", "tinynet/net.py:25", "tinynet/net.py:30"):
        assert f"left alone: GB{'4198' if where.endswith(':7') else '0059'} {where}: " in log
    fixes = commands.report["extra"]["fixes"]
    verified = [f for f in fixes if f["status"] == "verified"]
    assert [(f["file"], f["line"]) for f in verified] == [("tinynet/helpers.py", 8)]
    assert all((f["file"], f["line"]) == ("tinynet/helpers.py", 8) for f in fixes)  # nothing else was tried


def test_one_reply_names_what_was_pushed_and_what_was_left_and_why(commands: Commands) -> None:
    world = commands.world
    assert world.reactions(commands.first) == ["eyes", "rocket"]
    first = world.replies()[0]
    assert first.startswith("<!-- gbbot:gb-fix -->\n🚀 `/gb-fix`: pushed") and f"/commit/{commands.tip}" in first
    pushed = first.split("**Pushed**\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(pushed) == 1 and "`GB0059` `tinynet/helpers.py:8`" in pushed[0]
    assert "**Not pushed**" not in first
    left = first.split("**Not attempted**\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(left) == 4, first
    why = {line.split("`: ", 1)[0].rsplit("`", 1)[1]: line.split("`: ", 1)[1] for line in left}
    assert why["tinynet/net.py:25"].startswith("this pull request revealed it")
    assert "not on a line this pull request changed" in why["tinynet/net.py:25"]
    for old in ("tinynet/helpers.py:7", "tinynet/helpers.py:13", "tinynet/net.py:30"):
        assert why[old].startswith("it predates this pull request")
    assert all("`gbbot fix` locally" in reason and "audit's fix PR" in reason for reason in why.values())


def test_a_second_command_on_the_new_head_has_nothing_left_to_fix_and_commits_nothing(commands: Commands) -> None:
    world = commands.world
    assert commands.second_head == commands.tip
    assert world.branch_tip() == commands.tip and world.remote.pushes == commands.pushes
    assert commands.second_fix_commit == ""
    replies = world.replies()
    assert len(replies) == 3
    assert "nothing left to fix" in replies[1] and "pushed" not in replies[1].split("\n")[1]
    assert "tinynet/net.py:25" in replies[1].split("**Not attempted**", 1)[1]
    assert world.reactions(commands.second) == ["eyes", "+1"]


def test_all_widens_the_command_to_the_old_breaks_in_the_files_the_pr_changed(commands: Commands) -> None:
    world = commands.world
    assert "every break in the files it changed: 4 to verify, 0 left alone" in commands.widened_log
    assert world.branch_tip() == commands.tip and world.remote.pushes == commands.pushes  # a dry run
    reply = world.replies()[2]
    assert "dry run" in reply and "```diff" in reply
    in_patch = reply.split("**In the patch**\n", 1)[1].split("\n\n", 1)[0]
    for where in ("tinynet/helpers.py:7", "tinynet/net.py:25"):  # the old deepcopy, the revealed print
        assert f"`{where}`" in in_patch, reply
    assert "-    y = copy.deepcopy(x)" in reply and "+    y = x.detach().clone()" in reply


@dataclass
class Autofix:
    world: World
    check: ActionRun

    def tip(self) -> str:
        return git(self.world.bare, "rev-parse", f"refs/heads/{AUTOFIX_BRANCH}")


@pytest.fixture(scope="module")
def autofixed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Autofix]:
    tmp = tmp_path_factory.mktemp("autofix-scope")
    bare, base, head = make_pr(tmp)
    with GitHttpRemote(bare.parent, ACTIONS_TOKEN) as remote, checked_standin() as gh:
        gh.set_clone_url(remote.repo_url("octo-repo.git"))
        gh.add_pull(AUTOFIX_PR, head, head_ref=AUTOFIX_BRANCH)
        world = World(tmp, gh, remote, bare, head, base)
        workspace = world.checkout(head, "checkout")
        event = pull_request_event(AUTOFIX_PR, head, base)
        yield Autofix(world, run_action(workspace, tmp / "run", gh, "pull_request", event, ACTIONS_TOKEN, jobs="2"))


def test_autofix_pushes_only_the_fix_of_the_break_the_pr_added_and_says_what_it_left(autofixed: Autofix) -> None:
    world, done = autofixed.world, autofixed.check
    assert done.code == 1, done.stderr  # the head still has its new break: fail_on: new
    tip = autofixed.tip()
    assert done.outputs["fix-commit"] == tip and git(world.bare, "rev-parse", f"{tip}^") == world.head
    assert world.remote.pushes == 1
    assert git(world.bare, "diff", "--name-only", world.head, tip).split() == ["tinynet/helpers.py"]
    before = git(world.bare, "show", f"{world.head}:tinynet/helpers.py")
    assert git(world.bare, "show", f"{tip}:tinynet/helpers.py") == before.replace(ADDED, GUARDED).rstrip("\n")
    assert "autofix: 1 break(s) this PR added on the lines it changed; 4 left alone" in done.stderr
    (comment,) = world.gh.comments(AUTOFIX_PR)
    note = comment.body.split("**autofix**: pushed", 1)[1]
    assert "tinynet/helpers.py:8" in note and "tinynet/helpers.py:13" not in note
    assert "4 breaks predate this PR or are not on a line it changed, so autofix left them alone" in note
