"""Which environment variable names look like credentials: pure name rules that gbbot applies to
its own environment (held in memory, never in what a process it starts inherits) and to an
entrypoint's (withheld unless `pass_env` names them)."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

# Names that look like credentials.
SECRET_LOOKING = (
    "*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*_KEY", "*CREDENTIAL*", "*AUTH*", "ACTIONS_*", "INPUT_*",
)  # fmt: skip
# The Actions token and the runner's own credentials: never handed to user code, even when listed.
NEVER = ("GITHUB_TOKEN", "GH_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_*")


def matches(name: str, patterns: Iterable[str]) -> bool:
    """Case-insensitive: `github_token` is the same secret as GITHUB_TOKEN."""
    return any(fnmatch.fnmatchcase(name.upper(), p.upper()) for p in patterns)


def looks_secret(name: str) -> bool:
    return matches(name, (*SECRET_LOOKING, *NEVER))
