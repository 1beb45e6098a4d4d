"""Shared fixtures: real git repositories in temp dirs, real torch runs, the GitHub stand-in."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.github_standin.fixtures import github_standin  # noqa: F401 - shared fixture

# The tiers: tests/e2e/ is `slow`, and outside it torch cannot start (tests/tiers.py).
pytest_plugins = ["tests.tiers"]

HERE = Path(__file__).parent
ROOT = HERE.parent
EXAMPLES = ROOT / "examples"
PATTERNS = HERE / "breakpatterns"
FAKE_SITE_PACKAGES = HERE / "breakpatterns_lib" / "site-packages"
FIXTURES = HERE / "fixtures"
DATA = HERE / "data"
GOLDEN = HERE / "golden"


def _run_children_like_this_process() -> None:
    """Subprocesses the tests start must see what this process sees: `python` in an entrypoint's
    command is the interpreter running the tests (torch is installed there, maybe in a venv that
    was never activated), and `python -m gbbot` imports the gbbot under test, not another copy an
    editable install points at."""
    bin_dir = str(Path(sys.executable).parent)
    os.environ["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)


_run_children_like_this_process()


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def in_git_dir(tmp_path: Path) -> Path:
    """An empty git repository (branch main) in a temp dir."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    return repo


def copy_of_example(repo: Path) -> Path:
    """examples/ copied to `repo`, as its own git repository."""
    shutil.copytree(EXAMPLES, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "example")
    return repo


@pytest.fixture
def example_repo(tmp_path: Path) -> Path:
    """A copy of examples/ as its own git repository."""
    return copy_of_example(tmp_path / "example")


@pytest.fixture(scope="session")
def python() -> str:
    return sys.executable
