"""Runs that several modules assert on, made once per session by the warm server of this process,
as `gbbot check` runs by default (fast mode): the bundled example and the break patterns."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from gbbot.analysis import report
from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import parse_config
from gbbot.core.model import Report
from tests.cli_helpers import gbbot_here
from tests.conftest import FAKE_SITE_PACKAGES, PATTERNS, copy_of_example


@dataclass(frozen=True)
class Checked:
    repo: Path
    code: int
    data: dict  # report.json
    report: Report  # the same file, loaded
    markdown: str
    terminal: str  # stdout


@pytest.fixture(scope="session")
def example_checked(tmp_path_factory: pytest.TempPathFactory) -> Checked:
    """`gbbot check` of a copy of examples/ (a git repository), both entrypoints, two at a time."""
    tmp = tmp_path_factory.mktemp("example-checked")
    repo = copy_of_example(tmp / "example")
    out, md = tmp / "report.json", tmp / "report.md"
    done = gbbot_here(repo, "check", "--root", str(repo), "--json", str(out), "--markdown", str(md), "-j", "2")
    data = json.loads(out.read_text())
    return Checked(repo, done.returncode, data, report.load(out), md.read_text(), done.stdout)


# tests/breakpatterns/patterns.py, its fake third-party package on PYTHONPATH
PATTERNS_CONFIG = f"""\
entrypoints:
  - name: patterns
    run: python patterns.py
    env: {{PYTHONPATH: '{FAKE_SITE_PACKAGES}'}}
"""


@pytest.fixture(scope="session")
def patterns_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("patterns")
    shutil.copy(PATTERNS / "patterns.py", repo / "patterns.py")
    return repo


@pytest.fixture(scope="session")
def patterns_report(patterns_repo: Path) -> Report:
    return check(patterns_repo, parse_config("version: 1\n" + PATTERNS_CONFIG), CheckOptions())
