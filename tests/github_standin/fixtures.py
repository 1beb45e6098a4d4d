"""The ``github_standin`` pytest fixture.

Import it where tests should see it, e.g. in ``tests/conftest.py``::

    from tests.github_standin.fixtures import github_standin  # noqa: F401
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from .server import GitHubStandin


@contextmanager
def checked_standin(**options: Any) -> Iterator[GitHubStandin]:
    """A running stand-in that fails the test if violations are left when it closes.

    A test that sends an invalid request on purpose takes the violations it
    expects with ``take_violations()``.
    """
    with GitHubStandin(**options) as server:
        yield server
        left = server.take_violations()
    if left:
        listed = "\n".join(f"  {violation}" for violation in left)
        pytest.fail(f"GitHub stand-in saw {len(left)} contract violation(s):\n{listed}")


@pytest.fixture
def github_standin() -> Iterator[GitHubStandin]:
    """A fresh stand-in per test (``octo-org/octo-repo``, the default tokens)."""
    with checked_standin() as server:
        yield server
