"""What a test does when something it needs outside Python is missing: skip, or fail where CI says
the thing must be there. A skip reads as "fine" in a summary; in a job whose purpose is to run those
tests, a missing engine or tool is the failure."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRE_DOCKER = "GBBOT_REQUIRE_DOCKER"


def required(variable: str) -> bool:
    return os.environ.get(variable, "").lower() not in ("", "0", "false")


def unavailable(reason: str, *, unless: str = REQUIRE_DOCKER) -> NoReturn:
    """Skip with `reason`; fail with it instead when the environment variable `unless` is set."""
    if required(unless):
        pytest.fail(f"{reason} ({unless} is set: this job must run these tests)", pytrace=False)
    pytest.skip(reason)
