"""Publishing one report on one pull request: the sticky comment, the check run, and — when the
token may not write — the fallback annotations. Every GitHub call goes through `retry`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests
from github import Auth, Github, GithubException

from gbbot.fix import present
from gbbot.fix.result import FixStatus
from gbbot.model import Report
from gbbot.publish import checkrun, comment, retry
from gbbot.publish.comment import CommentMode, Posted
from gbbot.publish.content import Content
from gbbot.publish.fallback import Fallback, fallback
from gbbot.publish.review import ReviewPosted, changed_lines, post_review

ACTIONS_BOT = "github-actions[bot]"
# PyGithub's own pacing between writes, which GitHub asks integrations for (secondary limits).
SECONDS_BETWEEN_WRITES = 1.0
DEFAULT_POLICY = retry.RetryPolicy()


def say(message: str) -> None:
    print(f"gbbot: {message}", file=sys.stderr, flush=True)


def github_client(token: str, api_url: str, seconds_between_writes: float = SECONDS_BETWEEN_WRITES) -> Github:
    """PyGithub without its own retries: gbbot's `retry` decides (FACTS.md). Lazy: an object is
    fetched when a field is read, so e.g. a commit's check runs are listed without `GET` of the
    commit first."""
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
    return retry.rate_limit_wait(exc, DEFAULT_POLICY) is None


def bot_login(client: Github, override: str, policy: retry.RetryPolicy, log: retry.Log) -> str:
    """Whom the token comments as. The Actions token may not read `GET /user` (403, FACTS.md);
    its comments are then authored by github-actions[bot]."""
    if override:
        return override
    try:
        return retry.call(lambda: client.get_user().login, "who am I (GET /user)", policy, log)
    except GithubException as exc:
        if exc.status in (401, 403):
            return ACTIONS_BOT
        raise


@dataclass(frozen=True)
class Target:
    """Where and how to publish."""

    repository: str
    pull_number: int
    head_sha: str
    header: str
    check_name: str
    external_id: str
    details_url: str | None
    comment_mode: CommentMode
    fail_on: str
    bot_login: str = ""


@dataclass(frozen=True)
class Published:
    comment: Posted | None = None
    check_run: checkrun.CheckRunPosted | None = None
    review: ReviewPosted | None = None
    fallback: Fallback | None = None
    problems: tuple[str, ...] = ()  # failures that were not about permission: the step fails


def _comment(client: Github, report: Report, content: Content, target: Target, policy: retry.RetryPolicy,
             log: retry.Log) -> Posted | None:
    if target.comment_mode is CommentMode.OFF:
        return None
    login = bot_login(client, target.bot_login, policy, log)
    repo = client.get_repo(target.repository)
    pull = repo.get_pull(target.pull_number)  # lazy: no request until a field is read
    step = lambda: comment.upsert(pull, report, content, target.header, login, target.comment_mode)  # noqa: E731
    posted = retry.call(step, "sticky comment", policy, log)
    log(f"PR comment {posted.action.value}" + (f": {posted.url}" if posted.url else ""))
    return posted


def _check_run(client: Github, report: Report, content: Content, target: Target, policy: retry.RetryPolicy,
               log: retry.Log) -> checkrun.CheckRunPosted:
    wanted = checkrun.request(report, target.fail_on, content, target.check_name, target.head_sha,
                              target.external_id, target.details_url)
    posted = checkrun.publish(client.get_repo(target.repository), wanted, policy, log)
    plural = "s" if posted.requests != 1 else ""
    log(f"check run {posted.conclusion} with {posted.annotations} annotations in {posted.requests} request{plural}")
    return posted


def _review(client: Github, report: Report, target: Target, policy: retry.RetryPolicy,
            log: retry.Log) -> ReviewPosted | None:
    """Verified fixes (from `gbbot fix`, in the report) as suggestions on the lines the PR changed."""
    results = present.results_of(report)
    if not any(r.status is FixStatus.VERIFIED for r in results):
        return None
    repo = client.get_repo(target.repository)
    pull = repo.get_pull(target.pull_number)
    changed = retry.call(lambda: changed_lines(pull.get_files()), "the PR's changed lines", policy, log)
    suggestions = present.review_suggestions(results, changed)
    if not suggestions:
        log("verified fixes touch no line this PR changed: they stay in the comment, not in a review")
        return None
    login = bot_login(client, target.bot_login, policy, log)
    posted = post_review(pull, repo.get_commit(target.head_sha), suggestions, target.header, login, policy, log)
    log(f"review with {posted.comments} suggestions " + ("posted" if posted.posted else "already there"))
    return posted


def publish(client: Github, report: Report, content: Content, target: Target,
            policy: retry.RetryPolicy = DEFAULT_POLICY, log: retry.Log = say) -> Published:
    """The comment, the check run, then the review of verified fixes. A permission refusal stops
    the writes and falls back to workflow-command annotations; other failures do too, and are
    reported as problems (the step fails)."""
    results: dict[str, Any] = {}
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("comment", lambda: _comment(client, report, content, target, policy, log)),
        ("check_run", lambda: _check_run(client, report, content, target, policy, log)),
        ("review", lambda: _review(client, report, target, policy, log)),
    ]
    for name, step in steps:
        try:
            results[name] = step()
        except (GithubException, retry.PublishError, requests.exceptions.RequestException) as exc:
            reason = _reason(name, exc)
            what = name.replace("_", " ")
            log(f"cannot publish the {what}: {reason}. Falling back to annotations and the job summary")
            problems = () if is_forbidden(exc) else (reason,)
            found = fallback(report, target.fail_on, reason)
            return Published(results.get("comment"), results.get("check_run"), None, found, problems)
    return Published(results.get("comment"), results.get("check_run"), results.get("review"))


def _reason(step: str, exc: Exception) -> str:
    if is_forbidden(exc):
        return (
            f"the token may not write ({retry.describe(exc)} on the {step.replace('_', ' ')}); "
            "a pull request from a fork gets a read-only token under pull_request, "
            "use the workflow_run pattern to publish"
        )
    return str(exc) if isinstance(exc, retry.PublishError) else retry.describe(exc)


def annotate(found: Fallback) -> None:
    """Print the fallback's workflow commands, where the runner reads them (stdout)."""
    for line in found.commands:
        print(line, flush=True)
