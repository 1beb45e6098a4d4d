"""Fixtures the action tests share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The publisher's checkout: the default branch, no entrypoint of the PR's (here: none at all),
    and the folder the report artifact is downloaded into."""
    path = tmp_path / "workspace"
    (path / "gbbot-report").mkdir(parents=True)
    return path
