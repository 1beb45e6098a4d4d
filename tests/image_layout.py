"""The three ways a pull request's code runs beside gbbot, emulated without Docker (as root, with
`useradd`), for the tests that attack the base side (tests/e2e/action/test_never_green.py):

- ROOT_WORKSPACE: gbbot's image on a self-hosted runner: gbbot as root, the workspace and
  RUNNER_TEMP root's, `GBBOT_RUN_AS` naming the image's unprivileged user;
- RUNNER_WORKSPACE: gbbot's image on a GitHub-hosted runner: gbbot as root, started by the image's
  `entrypoint` script, the workspace and RUNNER_TEMP owned by the runner's uid, which the script
  then picks to run the repository's code as;
- OWN_JOB: `pip install gbbot` in the job itself: gbbot in a virtualenv the runner's uid owns
  (over this Python's packages, as a job's venv over a cached torch), run as that uid: no uid
  split, the repository's code runs as gbbot's own user.

The installation (this Python and its packages) stays root's, as in the image; its directories are
made traversable for the other users while a layout is open.
"""

from __future__ import annotations

import enum
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from gbbot.edges import overlay
from gbbot.edges.runas import chown_tree
from tests.action_run import ActionRun, run_action
from tests.conftest import git
from tests.e2e.test_run_as import close, reachable
from tests.github_standin import GitHubStandin

RUNNER = "gbbot-test-runner"  # the image's gbbot-runner
OWNER = "gbbot-test-owner"  # the runner's uid (1001 on GitHub's hosted runners)
ENTRYPOINT = Path(__file__).resolve().parents[1] / "entrypoint"

needs_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("useradd") is None,
    reason="needs root and useradd: the image's layout has gbbot as root and the code as another user",
)


class Mode(enum.Enum):
    ROOT_WORKSPACE = "root-workspace"
    RUNNER_WORKSPACE = "runner-workspace"
    OWN_JOB = "own-job"


def user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
        return pwd.getpwnam(name)


@dataclass(frozen=True)
class Layout:
    mode: Mode
    workspace: Path  # the checkout, GITHUB_WORKSPACE
    temp: Path  # RUNNER_TEMP, and gbbot's TMPDIR
    home: Path  # gbbot's HOME
    owner: pwd.struct_passwd  # the runner's uid
    venv: Path | None  # the job's own virtualenv (OWN_JOB)
    probe: Path  # where the tests' entrypoints leave what they saw (anyone may write)

    @property
    def code_uid(self) -> int:
        """The uid the repository's code runs as."""
        return pwd.getpwnam(RUNNER).pw_uid if self.mode is Mode.ROOT_WORKSPACE else self.owner.pw_uid

    def run(
        self, standin: GitHubStandin, payload: dict, token: str, env: Mapping[str, str], **inputs: str
    ) -> ActionRun:
        """The pull_request job's gbbot step, its stdout and stderr as one log."""
        extra = {**env, "HOME": str(self.home), "RUNNER_TEMP": str(self.temp), "PROBE_DIR": str(self.probe)}
        extra["GBBOT_PASS_ENV"] = " ".join(("PROBE_DIR", env.get("GBBOT_PASS_ENV", "")))
        command: tuple[str, ...] | None = None
        uid = None
        if self.mode is Mode.ROOT_WORKSPACE:
            extra["GBBOT_RUN_AS"] = RUNNER
        elif self.mode is Mode.RUNNER_WORKSPACE:
            command = ("bash", str(ENTRYPOINT))  # it picks the workspace's owner, and TMPDIR
        else:
            assert self.venv is not None
            bin_dir = self.venv / "bin"
            extra.update(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", VIRTUAL_ENV=str(self.venv))
            command, uid = (str(bin_dir / "python"), "-m", "gbbot", "action"), self.owner.pw_uid
        return run_action(
            self.workspace, self.temp, standin, "pull_request", payload, token, extra,
            command=command, uid=uid, merged=True, **inputs,
        )  # fmt: skip


@contextmanager
def layout(mode: Mode, origin: Path, sha: str, untracked: Mapping[str, str] | None = None) -> Iterator[Layout]:
    """A fresh job of `mode`: `origin` cloned into its workspace (full history, `sha` checked
    out, `untracked` files written beside), its RUNNER_TEMP, gbbot's HOME, owned as the mode has
    them."""
    owner, runner = user(OWNER), user(RUNNER)
    opened = reachable(Path(os.path.realpath(sys.executable)), Path(sys.prefix), Path(__file__))
    top = Path(tempfile.mkdtemp(prefix=f"gbbot-{mode.value}-"))
    try:
        top.chmod(0o755)
        workspace, temp, home = top / "workspace", top / "runner-temp", top / "home"
        git(top, "clone", "-q", str(origin), str(workspace))
        git(workspace, "checkout", "-q", "--detach", sha)
        for name, text in (untracked or {}).items():
            (workspace / name).write_text(text)
        home.mkdir()
        probe = top / "probe"
        probe.mkdir(mode=0o1777)
        probe.chmod(0o1777)
        temp.mkdir()
        for path in (workspace, temp):
            path.chmod(0o755)
        venv = None
        if mode is not Mode.ROOT_WORKSPACE:  # the runner's uid owns the checkout and its temp
            chown_tree(workspace, owner.pw_uid, owner.pw_gid)
            os.chown(temp, owner.pw_uid, owner.pw_gid)
        if mode is Mode.OWN_JOB:
            venv = top / "job-venv"
            overlay.create(venv)
            for path in (venv, home):
                chown_tree(path, owner.pw_uid, owner.pw_gid)
        assert runner.pw_uid != owner.pw_uid
        yield Layout(mode, workspace, temp, home, owner, venv, probe)
    finally:
        shutil.rmtree(top, ignore_errors=True)
        close(opened)
