"""The audit's one tracking issue on GitHub: found by label, hidden marker and author, created
once, then edited; a closed one is reopened (or, when that is refused, a new one links back to
it); a deleted one no longer lists, so a new one is created."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from github import GithubException

from gbbot.audit.issue import MARKER, TITLE
from gbbot.publish import retry
from gbbot.publish.client import written_by

LABEL = "gbbot-audit"


class Action(str, enum.Enum):
    CREATED = "created"
    UPDATED = "updated"
    REOPENED = "reopened"
    REPLACED = "replaced"  # the closed one could not be reopened: a new one links back to it


@dataclass(frozen=True)
class Posted:
    action: Action
    number: int
    url: str


def find(repo: Any, bot_login: str) -> Any | None:
    """An open tracking issue (the oldest, should a past failure have left two), else the most
    recently closed one, else None."""
    ours = [i for i in repo.get_issues(state="all", labels=[LABEL]) if written_by(i, MARKER, bot_login)]
    open_ = sorted((i for i in ours if i.state == "open"), key=lambda i: i.number)
    closed = sorted((i for i in ours if i.state != "open"), key=lambda i: -i.number)
    return (open_ or closed or [None])[0]


def _create(repo: Any, body: str) -> Any:
    return repo.create_issue(title=TITLE, body=body, labels=[LABEL])


def upsert(repo: Any, body: str, bot_login: str) -> Posted:
    """One idempotent step (a retry finds what an earlier try created)."""
    existing = find(repo, bot_login)
    if existing is None:
        created = _create(repo, body)
        return Posted(Action.CREATED, created.number, created.html_url)
    if existing.state == "open":
        existing.edit(body=body)
        return Posted(Action.UPDATED, existing.number, existing.html_url)
    try:
        existing.edit(body=body, state="open")
        return Posted(Action.REOPENED, existing.number, existing.html_url)
    except GithubException as exc:
        if exc.status not in (403, 404, 410, 422):
            raise
    note = f"Continues #{existing.number}, which is closed and could not be reopened.\n\n"
    created = _create(repo, body.replace(MARKER + "\n", MARKER + "\n" + note, 1))
    return Posted(Action.REPLACED, created.number, created.html_url)


def publish(repo: Any, body: str, bot_login: str, retries: retry.Retries, log: retry.Log) -> Posted:
    return retry.call(lambda: upsert(repo, body, bot_login), "update the audit's tracking issue", retries, log)
