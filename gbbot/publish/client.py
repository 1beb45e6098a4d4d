"""The GitHub client gbbot publishes with, and who it publishes as."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from github import Auth, Github, GithubException

from gbbot.publish import retry

ACTIONS_BOT = "github-actions[bot]"
# PyGithub's own pacing between writes, which GitHub asks integrations for (secondary limits).
# GBBOT_SECONDS_BETWEEN_WRITES, set where gbbot is started, replaces it: 0 for a local stand-in of
# the API, which has no such limits (gbbot's tests).
SECONDS_BETWEEN_WRITES = 1.0
PACING_VARIABLE = "GBBOT_SECONDS_BETWEEN_WRITES"
DEFAULT_RETRIES = retry.Retries()


def pacing(environ: Mapping[str, str] = os.environ) -> float:
    """The pause between writes: PACING_VARIABLE's value when it is a number from 0 to 60, else
    GitHub's second."""
    try:
        given = float(environ.get(PACING_VARIABLE, ""))
    except ValueError:
        return SECONDS_BETWEEN_WRITES
    return given if 0 <= given <= 60 else SECONDS_BETWEEN_WRITES


def github_client(token: str, api_url: str, seconds_between_writes: float | None = None) -> Github:
    """PyGithub without its own retries: gbbot's `retry` decides, so that one retry schedule (and one log
    line per retry) covers every call. Lazy: an object is fetched when a field is read, so e.g. a
    commit's check runs are listed without `GET` of the commit first. Writes are paced by `pacing()`
    unless `seconds_between_writes` is given."""
    if seconds_between_writes is None:
        seconds_between_writes = pacing()
    return Github(
        base_url=api_url,
        auth=Auth.Token(token),
        lazy=True,
        retry=None,
        timeout=30,
        seconds_between_requests=0,
        seconds_between_writes=seconds_between_writes,
    )


def is_forbidden(exc: Exception) -> bool:
    """A 403 that is about permission (read-only token, no checks:write), not a rate limit."""
    if not isinstance(exc, GithubException) or exc.status != 403:
        return False
    return retry.rate_limit_wait(exc, DEFAULT_RETRIES) is None


def bot_login(client: Github, override: str, retries: retry.Retries, log: retry.Log) -> str:
    """Whom the token comments as. The Actions token may not read `GET /user` (a 403); its
    comments are then authored by github-actions[bot]."""
    if override:
        return override
    try:
        return retry.call(lambda: client.get_user().login, "who am I (GET /user)", retries, log)
    except GithubException as exc:
        if exc.status in (401, 403):
            return ACTIONS_BOT
        raise


def written_by(item: Any, marker: str, login: str) -> bool:
    """A comment, review, issue or pull request of gbbot's: its hidden marker, and written by `login`."""
    return marker in (item.body or "") and item.user is not None and item.user.login == login
