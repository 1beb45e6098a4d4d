"""Helpers for tests that drive `gbbot` as a user does: files written into a repository, the CLI
run as a subprocess (stdout, stderr and exit code as a user sees them)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest


def write(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def commit_change(repo: Path, base: dict[str, str], head: dict[str, str], branch: str = "feature") -> None:
    """A pull request in small: `base` committed on main (an empty repository's first commit), then
    `head` written over it and committed on `branch`."""
    from tests.conftest import git

    if not (repo / ".git").exists():
        git(repo, "init", "-q", "-b", "main")
    write(repo, base)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", branch)
    write(repo, head)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "head")


def gbbot(
    cwd: Path, *args: str, tmp: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`python -m gbbot ARGS` in `cwd`; `tmp` becomes its TMPDIR (where a base worktree goes);
    `env` adds to the environment."""
    env = {**os.environ, **({"TMPDIR": str(tmp)} if tmp else {}), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "gbbot", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def gbbot_here(
    cwd: Path, *args: str, tmp: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`gbbot()`, but gbbot's `main` called in this process: the same exit code and output, and the
    entrypoints run by the warm server this process already has (one torch import for every test
    that runs gbbot here). For tests about what gbbot reports, not about its process: it neither
    starts the token vault nor handles signals here."""
    from gbbot.main import main

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.chdir(cwd):
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        if tmp:
            patch.setattr(tempfile, "tempdir", str(tmp))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    return subprocess.CompletedProcess(["gbbot", *args], code, out.getvalue(), err.getvalue())
