"""Helpers for tests that drive `gbbot` as a user does: files written into a repository, the CLI
run as a subprocess (stdout, stderr and exit code as a user sees them)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


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
