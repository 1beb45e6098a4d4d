"""A project of one module per entrypoint (`call: '<package>.<name>:run'`), fixed once with
`gbbot fix --apply` and checked again: what the recipe tests against real torch share."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import load_config
from gbbot.core.model import Report
from gbbot.fix.pipeline import FixOptions, FixRun, fix
from tests.conftest import git


def fixed_once(
    repo: Path,
    project: Path,
    package: str,
    entrypoints: Sequence[str],
    fixed: Sequence[str],
    leave_out: Sequence[str] = (),
) -> tuple[FixRun, Report]:
    """`project` copied to `repo` (without `leave_out`), one entrypoint per module, committed;
    the fix run with `--apply`, and a check of the `fixed` entrypoints on the written files."""
    shutil.copytree(project, repo, ignore=shutil.ignore_patterns("__pycache__", *leave_out))
    lines = ["version: 1", "mode: fast", "entrypoints:"]
    lines += [f"  - {{name: {name}, call: '{package}.{name}:run', timeout: 120}}" for name in entrypoints]
    (repo / ".gbbot.yml").write_text("\n".join(lines) + "\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "project")
    config = load_config(repo / ".gbbot.yml")
    run = fix(repo, config, FixOptions(apply=True, jobs=2))
    return run, check(repo, config, CheckOptions(only=tuple(fixed), jobs=2))
