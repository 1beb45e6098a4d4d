"""The workflow's event ($GITHUB_EVENT_NAME, the payload at $GITHUB_EVENT_PATH) → what the action
needs from it. The payload is written by GitHub, not by the PR author; still, every value used is
checked for its shape before it goes anywhere."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gbbot.core.errors import GbbotError

SHA = re.compile(r"^[0-9a-f]{40}$")
OWNER = re.compile(r"^[A-Za-z0-9-]{1,100}$")


class EventError(GbbotError):
    pass


@dataclass(frozen=True)
class PullRequestEvent:
    """`pull_request`: run the diff against the PR's base; publish when the token may write."""

    number: int
    head_sha: str
    base_sha: str
    base_ref: str
    is_fork: bool


@dataclass(frozen=True)
class WorkflowRunEvent:
    """`workflow_run`: the privileged half of the fork-safe pattern; publishes, never runs code."""

    run_id: int
    head_sha: str
    head_branch: str
    head_owner: str
    html_url: str
    conclusion: str | None
    pull_numbers: tuple[int, ...]  # PRs GitHub lists on the run whose head is this run's commit


@dataclass(frozen=True)
class IssueCommentEvent:
    """`issue_comment`: a comment on an issue or a pull request (`/gb-fix`)."""

    action: str  # created, edited, deleted
    number: int
    is_pull: bool  # GitHub marks a PR's conversation with issue.pull_request
    comment_id: int
    body: str  # at most COMMENT_READ_MAX characters: only the first line is ever read
    login: str
    user_type: str  # User, Bot, Organization


COMMENT_READ_MAX = 4096


@dataclass(frozen=True)
class OtherEvent:
    """push, workflow_dispatch, schedule, …: a check of the workspace, nothing to publish on."""

    name: str


Event = PullRequestEvent | WorkflowRunEvent | IssueCommentEvent | OtherEvent


def _get(payload: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(payload, dict) or key not in payload:
            raise EventError(f"event payload has no {'.'.join(keys)}")
        payload = payload[key]
    return payload


def _sha(payload: Any, *keys: str) -> str:
    value = _get(payload, *keys)
    if not isinstance(value, str) or not SHA.match(value):
        raise EventError(f"event payload: {'.'.join(keys)} is not a commit SHA")
    return value


def pull_request(payload: dict) -> PullRequestEvent:
    pull = _get(payload, "pull_request")
    number = _get(pull, "number")
    if not isinstance(number, int) or number < 1:
        raise EventError("event payload: pull_request.number is not a PR number")
    head_repo = (_get(pull, "head").get("repo") or {}).get("full_name")
    base_repo = (_get(pull, "base").get("repo") or {}).get("full_name")
    return PullRequestEvent(
        number=number,
        head_sha=_sha(pull, "head", "sha"),
        base_sha=_sha(pull, "base", "sha"),
        base_ref=str(_get(pull, "base", "ref")),
        is_fork=head_repo != base_repo,
    )


def workflow_run(payload: dict) -> WorkflowRunEvent:
    run = _get(payload, "workflow_run")
    head_sha = _sha(run, "head_sha")
    owner = ((run.get("head_repository") or {}).get("owner") or {}).get("login") or ""
    pulls = tuple(
        p["number"]
        for p in run.get("pull_requests") or ()
        if isinstance(p, dict) and isinstance(p.get("number"), int) and (p.get("head") or {}).get("sha") == head_sha
    )
    run_id = _get(run, "id")
    if not isinstance(run_id, int):
        raise EventError("event payload: workflow_run.id is not a number")
    return WorkflowRunEvent(
        run_id=run_id,
        head_sha=head_sha,
        head_branch=str(run.get("head_branch") or ""),
        head_owner=owner if OWNER.match(owner) else "",
        html_url=str(run.get("html_url") or ""),
        conclusion=run.get("conclusion"),
        pull_numbers=pulls,
    )


def issue_comment(payload: dict) -> IssueCommentEvent:
    issue, comment = _get(payload, "issue"), _get(payload, "comment")
    number, comment_id = _get(issue, "number"), _get(comment, "id")
    if not isinstance(number, int) or number < 1 or not isinstance(comment_id, int):
        raise EventError("event payload: issue.number or comment.id is not a number")
    user = comment.get("user") or {}
    body = comment.get("body")
    return IssueCommentEvent(
        action=str(payload.get("action") or ""),
        number=number,
        is_pull=isinstance(issue.get("pull_request"), dict),
        comment_id=comment_id,
        body=body[:COMMENT_READ_MAX] if isinstance(body, str) else "",
        login=str(user.get("login") or ""),
        user_type=str(user.get("type") or ""),
    )


PARSERS = {"pull_request": pull_request, "workflow_run": workflow_run, "issue_comment": issue_comment}


def load(name: str, path: Path | None) -> Event:
    if name == "pull_request_target":
        # It runs with a write token next to whatever is checked out: never run PR code there.
        raise EventError(
            "gbbot action does not run under pull_request_target; use pull_request to run the check "
            "and workflow_run to publish (the fork-safe pattern)"
        )
    if name not in PARSERS:
        return OtherEvent(name or "unknown")
    if path is None:
        raise EventError(f"{name}: GITHUB_EVENT_PATH is not set")
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EventError(f"{path}: cannot read the event payload ({exc})") from None
    return PARSERS[name](payload)
