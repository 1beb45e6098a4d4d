"""`autofix: true` end to end: a real pull_request payload, the PR check run as the one-job
workflow runs it (a full clone of the PR's head), real torch, real git pushing over smart HTTP to a
remote that checks the token on every request, and the GitHub stand-in for the PR and the sticky
comment."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gbbot.deliver import commit as fix_commit
from tests.action_run import ActionRun, pull_request_event, run_action
from tests.cli_helpers import gbbot_here
from tests.conftest import git
from tests.gb_fix_world import basic, checkout
from tests.git_http import GitHttpRemote
from tests.github_standin import ACTIONS_TOKEN, FORK_PR_TOKEN, GitHubStandin
from tests.github_standin.fixtures import checked_standin
from tests.step_project import CONFIG, MODEL, author_repository, with_line

PR = 9
BRANCH = "feature-9"
WITH_PRINT = with_line('print("step", x)')
GBBOT = {"GIT_AUTHOR_NAME": "gbbot", "GIT_AUTHOR_EMAIL": fix_commit.AUTHOR_EMAIL}
# The first line a fix run prints at its end ("gbbot fix: 1 break: 1 verified"), never the fix
# column of the breaks table ("gbbot fix: print")
FIX_RAN = re.compile(r"^gbbot fix: \d+ breaks?: ", re.M)


@dataclass
class Pr:
    tmp: Path
    gh: GitHubStandin
    remote: GitHttpRemote
    bare: Path
    base: str
    head: str

    @property
    def url(self) -> str:
        return self.remote.repo_url("octo-repo.git")

    def checkout(self, sha: str, name: str) -> Path:
        return checkout(self.url, self.tmp / name, sha)

    def check(self, fork: bool = False) -> ActionRun:
        """The PR check on the head the PR event names, with the token the workflow gives it."""
        token = FORK_PR_TOKEN if fork else ACTIONS_TOKEN
        event = pull_request_event(PR, self.head, self.base, fork)
        workspace = self.checkout(self.head, "checkout")
        return run_action(workspace, self.tmp / "run", self.gh, "pull_request", event, token, jobs="2")

    def tip(self) -> str:
        return git(self.bare, "rev-parse", f"refs/heads/{BRANCH}")

    def comment(self) -> str:
        (comment,) = self.gh.comments(PR)
        return comment.body


def make_pr(tmp: Path, config: str, gbbot_commits: bool = False) -> tuple[Path, str, str]:
    """A bare repository: main, and the PR's branch adding a print to the compiled function (in
    two gbbot fix commits when `gbbot_commits`). (bare, base sha, head sha)."""
    bare, work, base = author_repository(tmp, {".gbbot.yml": config, "model.py": MODEL})
    git(work, "checkout", "-qb", BRANCH)
    if gbbot_commits:
        (work / "notes.txt").write_text("an earlier fix\n")
        git(work, "add", "-A")
        subprocess.run(["git", "commit", "-qm", "gbbot: fix 1 graph break"], cwd=work, env=_as_gbbot(), check=True)
    (work / "model.py").write_text(WITH_PRINT)
    message = "gbbot: fix 1 graph break" if gbbot_commits else "print the step"
    subprocess.run(["git", "commit", "-qam", message], cwd=work, env=_as_gbbot() if gbbot_commits else None, check=True)
    git(work, "push", "-q", str(bare), "main", BRANCH)
    return bare, base, git(work, "rev-parse", "HEAD")


def _as_gbbot() -> dict[str, str]:
    return {**os.environ, **GBBOT}


@pytest.fixture
def pr(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Pr]:
    """A same-repository PR; `@pytest.mark.parametrize("pr", [(config, gbbot_commits)], indirect=True)`."""
    config, gbbot_commits = getattr(request, "param", (CONFIG + "autofix: true\n", False))
    bare, base, head = make_pr(tmp_path, config, gbbot_commits)
    with GitHttpRemote(bare.parent, ACTIONS_TOKEN) as remote, checked_standin() as gh:
        gh.set_clone_url(remote.repo_url("octo-repo.git"))
        gh.add_pull(PR, head, head_ref=BRANCH)
        yield Pr(tmp_path, gh, remote, bare, base, head)


def breaks_at(pr: Pr, sha: str) -> list[dict]:
    tree = pr.checkout(sha, f"recheck-{sha[:7]}")
    gbbot_here(tree, "check", "--json", "r.json")
    report = json.loads((tree / "r.json").read_text())
    return [b for e in report["entrypoints"] for b in e["breaks"]]


def test_autofix_pushes_one_commit_that_fixes_the_new_break_and_says_so(pr: Pr) -> None:
    done = pr.check()
    assert done.code == 1, done.stderr  # the head still has the break: fail_on: new
    tip = pr.tip()
    assert tip != pr.head and pr.remote.pushes == 1 and done.outputs["fix-commit"] == tip
    assert git(pr.bare, "rev-parse", f"{tip}^") == pr.head  # on top of the pinned head, not forced
    assert git(pr.bare, "diff", "--name-only", pr.head, tip).split() == ["model.py"]
    email, subject = git(pr.bare, "log", "-1", "--format=%ae|%s", tip).split("|")
    assert fix_commit.is_fix_commit(email, subject)  # the next autofix counts it
    assert "if not torch.compiler.is_compiling():" in git(pr.bare, "show", f"{tip}:model.py")
    assert breaks_at(pr, pr.head) and breaks_at(pr, tip) == []
    body = pr.comment()
    assert "**autofix**: pushed" in body and f"https://github.com/octo-org/octo-repo/commit/{tip}" in body
    assert "model.py:6" in body and "New graph breaks" in body
    assert FIX_RAN.search(done.stdout + done.stderr)  # what the tests below find missing
    assert ACTIONS_TOKEN not in done.stdout + done.stderr


@pytest.mark.parametrize("pr", [(CONFIG, False)], indirect=True)
def test_without_autofix_nothing_is_pushed(pr: Pr) -> None:
    done = pr.check()
    assert done.code == 1, done.stderr
    assert pr.tip() == pr.head and pr.remote.pushes == 0
    assert "autofix" not in pr.comment() and "autofix" not in done.stderr + done.stdout


def test_a_forks_pr_gets_no_push_and_no_fix_run(pr: Pr) -> None:
    pull = pr.gh.state.pulls[PR]
    pull.head_repo_fork = True
    done = pr.check(fork=True)
    assert done.code == 1, done.stderr
    assert pr.tip() == pr.head and pr.remote.pushes == 0
    log = done.stdout + done.stderr
    assert "autofix: nothing was pushed: this PR comes from a fork" in log
    assert "verifying" not in log and not FIX_RAN.search(log)  # no fix was even computed


def test_a_head_that_moved_during_the_check_gets_no_push_and_the_comment_says_so(pr: Pr) -> None:
    later = pr.checkout(pr.head, "later-author")
    (later / "notes.txt").write_text("a later commit\n")
    git(later, "add", "-A")
    git(later, "commit", "-qm", "later")
    moved = git(later, "rev-parse", "HEAD")
    git(later, "-c", f"http.extraheader={basic(ACTIONS_TOKEN)}", "push", "-q", pr.url, f"HEAD:{BRANCH}")
    pr.gh.state.pulls[PR].head_sha = moved
    pushes = pr.remote.pushes
    done = pr.check()
    assert pr.tip() == moved and pr.remote.pushes == pushes and "fix-commit" not in done.outputs
    body = pr.comment()
    assert "nothing was pushed" in body and f"moved from {pr.head[:7]} to {moved[:7]}" in body


@pytest.mark.parametrize("pr", [(CONFIG + "autofix: true\n", True)], indirect=True)
def test_a_branch_ending_in_two_gbbot_fix_commits_gets_no_autofix(pr: Pr) -> None:
    done = pr.check()
    assert done.code == 1, done.stderr
    assert pr.tip() == pr.head and pr.remote.pushes == 0
    assert "last two commits are gbbot fix commits" in pr.comment()
    assert not FIX_RAN.search(done.stderr + done.stdout)  # stopped before any fix was computed
