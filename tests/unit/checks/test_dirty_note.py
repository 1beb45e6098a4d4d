"""`gbbot diff`'s head is the working tree; the note that it has uncommitted changes must not be
set off by the files gbbot itself wrote there on an earlier run (--json, --markdown, --cache)."""

from __future__ import annotations

from pathlib import Path

from gbbot.checks.head_and_base import DiffOptions, dirty_note, setup
from gbbot.core.config import parse_config
from tests.conftest import git

CONFIG = "version: 1\nentrypoints:\n  - {name: a, run: python a.py}\n"


def _note(repo: Path, writes: tuple[Path, ...] = ()) -> str | None:
    p = setup(repo, parse_config(CONFIG), DiffOptions(base="HEAD", writes=writes))
    return dirty_note(p.repo.base, p.dirty)


def _committed(repo: Path) -> Path:
    (repo / "a.py").write_text("print(1)\n")
    (repo / ".gbbot.yml").write_text(CONFIG)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a")
    return repo


def test_gbbots_own_reports_in_the_tree_are_not_uncommitted_changes(in_git_dir):
    repo = _committed(in_git_dir)
    (repo / "out").mkdir()
    (repo / "out" / "report.json").write_text("{}")
    (repo / "report.md").write_text("## gbbot\n")
    (repo / ".gbbot-cache" / "x").mkdir(parents=True)
    (repo / ".gbbot-cache" / "x" / "base.json").write_text("{}")
    writes = (repo / "out" / "report.json", repo / "report.md", repo / ".gbbot-cache")
    assert _note(repo, writes) is None
    # without saying they are gbbot's, they read as the user's changes
    assert _note(repo).startswith("The head side is the working tree with uncommitted changes (3 paths")


def test_a_user_change_beside_gbbots_files_is_still_said(in_git_dir):
    repo = _committed(in_git_dir)
    (repo / "out").mkdir()
    (repo / "out" / "report.json").write_text("{}")
    (repo / "out" / "notes.txt").write_text("mine\n")  # the user's, in the same directory
    (repo / "a.py").write_text("print(2)\n")
    note = _note(repo, (repo / "out" / "report.json",))
    assert note is not None and "(2 paths" in note and "a.py" in note
