"""The world a `/gb-fix` test runs in: a repository with a PR branch on a real git remote over
smart HTTP (tests/git_http.py), the GitHub stand-in knowing the PR and who may push, and the
workflow's three jobs run in sequence as gbbot-fix.yml runs them: `authorize` in an empty
workspace, `fix` in a checkout of the pinned commit with no token, `push` in a fresh checkout of
the pinned commit with the fix job's artifact downloaded into it."""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.action_run import ActionRun, run_action, webhook
from tests.conftest import git
from tests.git_http import GitHttpRemote
from tests.github_standin import ACTIONS_TOKEN, GitHubStandin
from tests.github_standin.fixtures import checked_standin
from tests.step_project import author_repository

PR = 7
BRANCH = "feature-7"
ADMIN, READER = "octo-admin", "octo-reader"
CONFIG = """\
version: 1
entrypoints:
  - name: step
    call: model:step
  - name: env
    call: envdump:dump
mode: fast
fail_on: new
"""
MODEL = """\
import torch


def f(x):
    x = x + 1
    print("step", x)
    return x * 2


def step():
    return torch.compile(f)(torch.ones(3))
"""
# An entrypoint that writes down the environment it was given, to show what reached PR code.
ENVDUMP = """\
import json
import os
import tempfile

import torch


def g(x):
    return x + 1


def dump():
    path = os.path.join(tempfile.gettempdir(), "gb-fix-envdump.json")
    with open(path, "w") as out:
        json.dump(dict(os.environ), out)
    return torch.compile(g)(torch.ones(2))
"""


def basic(token: str) -> str:
    return "AUTHORIZATION: basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


@dataclass
class World:
    tmp: Path
    gh: GitHubStandin
    remote: GitHttpRemote
    bare: Path
    head: str
    base: str
    runs: list[ActionRun] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.remote.repo_url("octo-repo.git")

    def checkout(self, sha: str, name: str) -> Path:
        return checkout(self.url, self.tmp / name, sha)

    def comment(self, body: str, login: str = ADMIN, user_type: str = "User", action: str = "created") -> dict:
        """A real issue_comment payload for a comment the stand-in holds (reactions land on it)."""
        posted = self.gh.add_comment(PR, body, login)
        payload = webhook("issue_comment.created")
        payload["action"] = action
        payload["issue"]["number"] = PR
        payload["comment"].update(id=posted.id, body=body)
        payload["comment"]["user"].update(login=login, type=user_type)
        return payload

    def stage(self, name: str, workspace: Path, payload: dict, token: str, **inputs: str) -> ActionRun:
        done = run_action(
            workspace,
            self.tmp / f"run-{name}-{len(self.runs)}",
            self.gh,
            "issue_comment",
            payload,
            token,
            gb_fix=name,
            **inputs,
        )
        self.runs.append(done)
        assert done.code == 0, done.stderr
        return done

    def authorize(self, payload: dict) -> ActionRun:
        workspace = self.tmp / f"authorize-{len(self.runs)}"
        workspace.mkdir()
        return self.stage("authorize", workspace, payload, ACTIONS_TOKEN)

    def fix(self, payload: dict, sha: str, base: str = "") -> Path:
        """The fix job (`base`: authorize's base-sha output; the PR's base by default); its
        artifact folder."""
        workspace = self.checkout(sha, f"fix-{len(self.runs)}")
        self.stage("fix", workspace, payload, "", head_sha=sha, base_ref=base or self.base)
        return workspace / "gbbot-fix"

    def push(self, payload: dict, sha: str, artifact: Path) -> ActionRun:
        workspace = self.checkout(sha, f"push-{len(self.runs)}")
        shutil.copytree(artifact, workspace / "gbbot-fix")  # actions/download-artifact
        return self.stage("push", workspace, payload, ACTIONS_TOKEN, head_sha=sha)

    def branch_tip(self) -> str:
        return git(self.bare, "rev-parse", f"refs/heads/{BRANCH}")

    def reactions(self, payload: dict) -> list[str]:
        comment = self.gh.state.comments[payload["comment"]["id"]]
        return [r.content for r in comment.reactions]

    def replies(self) -> list[str]:
        return [
            c.body
            for c in self.gh.comments(PR)
            if c.login != ADMIN and c.login != READER and "gb-fix" in c.body and not c.body.startswith("/gb-fix")
        ]

    def logs(self) -> str:
        return "".join(r.stdout + r.stderr for r in self.runs)


def pull_files(repo: Path, base: str, head: str) -> dict[str, str]:
    """{path: patch} of base..head as GitHub's pull-files API gives it: each file's hunks, a
    renamed file under its new name with only the lines that changed."""
    files: dict[str, str] = {}
    for chunk in git(repo, "diff", "-M", base, head).split("diff --git ")[1:]:
        header, _, hunks = chunk.partition("\n@@")
        renamed = [line[len("rename to ") :] for line in header.splitlines() if line.startswith("rename to ")]
        name = renamed[0] if renamed else header.split(" b/", 1)[1].splitlines()[0]
        files[name] = "@@" + hunks.rstrip("\n") + "\n" if hunks else ""
    return files


def open_pull(gh: GitHubStandin, head: str, base: str) -> None:
    """PR 7 from BRANCH, on `base`, and who may push: what every /gb-fix test starts from."""
    gh.add_pull(PR, head, head_ref=BRANCH, author="contributor")
    gh.state.pulls[PR].base_sha = base
    gh.set_permission(ADMIN, "admin")
    gh.set_permission(READER, "read")


def checkout(url: str, dest: Path, sha: str) -> Path:
    """actions/checkout of `sha` with persist-credentials: false: no credential stays behind."""
    git(dest.parent, "-c", f"http.extraheader={basic(ACTIONS_TOKEN)}", "clone", "-q", url, str(dest))
    git(dest, "checkout", "-q", "--detach", sha)
    return dest


def make_repo(tmp: Path) -> tuple[Path, str, str]:
    """A bare repository with main and the PR branch; (bare, base sha, head sha)."""
    files = {".gbbot.yml": CONFIG, "model.py": MODEL.replace('    print("step", x)\n', ""), "envdump.py": ENVDUMP}
    bare, work, base = author_repository(tmp, files)
    git(work, "checkout", "-qb", BRANCH)
    (work / "model.py").write_text(MODEL)
    git(work, "commit", "-qam", "print the step")
    head = git(work, "rev-parse", "HEAD")
    git(work, "push", "-q", str(bare), "main", BRANCH)
    return bare, base, head


def envdump(artifact: Path) -> dict:
    """The environment the `env` entrypoint saw in the fix stage (written under its TMPDIR)."""
    found = list(artifact.parent.parent.rglob("gb-fix-envdump.json"))
    assert found, "the env entrypoint did not run"
    return json.loads(found[0].read_text())


# --- one fix job for a module's tests ----------------------------------------------------------------


@dataclass(frozen=True)
class FixedOnce:
    """A PR and its fix job's artifact for a plain `/gb-fix`, made once for a module: the fix job
    is what costs (the head and its merge-base run, then the fixes are verified), and what it
    writes does not depend on the comment or on what a test does to the PR afterwards."""

    served: Path  # the folder the remote serves (holds octo-repo.git)
    base: str
    head: str
    artifact: Path  # read-only: tests that tamper take a copy (`World.artifact_copy`)


@contextmanager
def opened(tmp: Path, served: Path, base: str, head: str) -> Iterator[World]:
    """A World over the repository in `served`: its remote, the stand-in with PR 7 open on it."""
    bare = served / "octo-repo.git"
    with GitHttpRemote(served, ACTIONS_TOKEN) as remote, checked_standin() as gh:
        gh.set_clone_url(remote.repo_url("octo-repo.git"))
        open_pull(gh, head, base)
        gh.set_pull_files(PR, pull_files(bare, base, head))
        yield World(tmp, gh, remote, bare, head, base)


def fixed_once(tmp: Path, make: Callable[[Path], tuple[Path, str, str]]) -> FixedOnce:
    """`make(tmp)` → (bare, base, head), and the fix job run once on its head."""
    bare, base, head = make(tmp)
    with opened(tmp, bare.parent, base, head) as world:
        artifact = world.fix(world.comment("/gb-fix"), head)
    return FixedOnce(bare.parent, base, head, artifact)


@contextmanager
def copied(once: FixedOnce, tmp: Path) -> Iterator[World]:
    """A fresh World for one test: its own copy of the repository, remote and stand-in."""
    shutil.copytree(once.served, tmp / "served")
    with opened(tmp, tmp / "served", once.base, once.head) as world:
        yield world


def artifact_copy(once: FixedOnce, tmp: Path) -> Path:
    """The fix job's artifact, as the push job downloads it: a copy a test may tamper with."""
    return Path(shutil.copytree(once.artifact, tmp / "artifact" / "gbbot-fix"))
