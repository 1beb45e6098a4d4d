"""The smallest project the end-to-end tests of the action use: one `call:` entrypoint that
compiles a two-line function, and that function with one more line (a graph break) added."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tests.conftest import git

CONFIG = """\
version: 1
entrypoints:
  - name: step
    call: model:step
mode: fast
fail_on: new
"""
MODEL = """\
import torch


def f(x):
    x = x + 1
    return x * 2


def step():
    return torch.compile(f)(torch.ones(3))
"""


def with_line(line: str) -> str:
    """MODEL with `line` added to the compiled function, after its first statement."""
    return MODEL.replace("    x = x + 1\n", f"    x = x + 1\n    {line}\n")


def author_repository(
    tmp: Path, files: Mapping[str, str], message: str = "base", name: str = "author"
) -> tuple[Path, Path, str]:
    """The empty bare repository a GitHttpRemote serves from `tmp / "served"` and, at `tmp / name`,
    a repository whose `main` holds `files` in one commit (not pushed yet): (bare, work, sha)."""
    bare = tmp / "served" / "octo-repo.git"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(bare))
    work = tmp / name
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    for path, text in files.items():
        (work / path).write_text(text)
    git(work, "add", "-A")
    git(work, "commit", "-qm", message)
    return bare, work, git(work, "rev-parse", "HEAD")
