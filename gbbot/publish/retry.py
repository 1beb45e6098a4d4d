"""Retrying GitHub calls: honour `retry-after` and `x-ratelimit-reset`, back off on 5xx and
secondary rate limits, cap the tries.

PyGithub runs with its own retries off (`retry=None`): its `GithubRetry` sleeps through primary
rate limits for up to an hour and turns a 500 into `requests.exceptions.RetryError` (PyGithub 2.x, checked against a
local server).
Here the unit retried is a whole idempotent step (e.g. "find the sticky comment, then edit or
create it"), so a retry after a write that did reach GitHub finds that write instead of repeating it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import requests
from github import GithubException

from gbbot.core.errors import GbbotError

T = TypeVar("T")
Log = Callable[[str], None]
RETRIED_STATUSES = frozenset({500, 502, 503, 504})
# GitHub: "If you receive a secondary rate limit error, you should wait at least one minute".
SECONDARY_LIMIT_WAIT_S = 60.0
TRANSPORT_ERRORS = (requests.exceptions.RetryError, requests.exceptions.ConnectionError, requests.exceptions.Timeout)


class PublishError(GbbotError):
    """GitHub kept failing, or asked gbbot to wait longer than it will."""


@dataclass(frozen=True)
class Retries:
    tries: int = 5
    backoff_s: float = 2.0  # doubled after each failed try
    max_backoff_s: float = 60.0
    max_wait_s: float = 600.0  # a longer retry-after / rate-limit reset is not waited for
    sleep: Callable[[float], None] = field(default=time.sleep)
    clock: Callable[[], float] = field(default=time.time)

    def backoff(self, attempt: int) -> float:
        return min(self.backoff_s * 2 ** (attempt - 1), self.max_backoff_s)


def _headers(exc: GithubException) -> Mapping[str, str]:
    return {str(k).lower(): str(v) for k, v in (exc.headers or {}).items()}


def _message(exc: GithubException) -> str:
    data = exc.data if isinstance(exc.data, dict) else {}
    return str(data.get("message") or exc.message or "").lower()


def rate_limit_wait(exc: GithubException, retries: Retries) -> float | None:
    """Seconds GitHub asks for on a 403/429 that is a rate limit; None when it is not one."""
    headers = _headers(exc)
    if "retry-after" in headers:
        try:
            return max(float(headers["retry-after"]), 0.0)
        except ValueError:
            return SECONDARY_LIMIT_WAIT_S
    if headers.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in headers:
        try:
            return max(float(headers["x-ratelimit-reset"]) - retries.clock(), 0.0) + 1.0
        except ValueError:
            return None
    if "secondary rate limit" in _message(exc):
        return SECONDARY_LIMIT_WAIT_S
    return None


def wait_before_retry(exc: Exception, attempt: int, retries: Retries) -> float | None:
    """How long to wait before the next try, or None when this failure is not worth retrying."""
    if isinstance(exc, GithubException):
        if exc.status in RETRIED_STATUSES:  # a 503 may say when to come back (Retry-After), as a limit does
            asked = _headers(exc).get("retry-after", "")
            return max(float(asked), 0.0) if asked.replace(".", "", 1).isdigit() else retries.backoff(attempt)
        if exc.status in (403, 429):
            return rate_limit_wait(exc, retries)
        return None
    if isinstance(exc, TRANSPORT_ERRORS):
        return retries.backoff(attempt)
    return None


def describe(exc: Exception) -> str:
    if isinstance(exc, GithubException):
        return f"HTTP {exc.status} {_message(exc) or type(exc).__name__}".strip()
    return f"{type(exc).__name__}: {exc}"


def call(step: Callable[[], T], what: str, retries: Retries, log: Log) -> T:
    """Run `step` (idempotent) until it succeeds, a failure is not retryable, or the tries run out."""
    for attempt in range(1, retries.tries + 1):
        try:
            return step()
        except (GithubException, requests.exceptions.RequestException) as exc:
            delay = wait_before_retry(exc, attempt, retries)
            if delay is None:
                raise
            if attempt == retries.tries:
                raise PublishError(f"{what}: gave up after {retries.tries} tries, last: {describe(exc)}") from exc
            if delay > retries.max_wait_s:
                over = f"over gbbot's {retries.max_wait_s:.0f}s"
                raise PublishError(f"{what}: GitHub asks to wait {delay:.0f}s ({over}); {describe(exc)}") from exc
            log(f"{what}: {describe(exc)}; retrying in {delay:.0f}s (try {attempt + 1} of {retries.tries})")
            retries.sleep(delay)
    raise AssertionError("unreachable: the loop returns or raises")


def write(step: Callable[[], T], recover: Callable[[], T | None], what: str, retries: Retries, log: Log) -> T:
    """A write that may have reached GitHub although its answer was an error (a 5xx after the
    write, a dropped connection): before each retry, `recover` looks for it and returns it."""
    tries = 0

    def attempt() -> T:
        nonlocal tries
        tries += 1
        found = recover() if tries > 1 else None
        return found if found is not None else step()

    return call(attempt, what, retries, log)
