"""Publishing one report on one pull request: the sticky comment, the check run, then the review
of verified fixes, each call through `retry`. When GitHub refuses a write, the steps stop and
workflow-command annotations, which need no token, stand in for what was not posted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests
from github import Github, GithubException

from gbbot.analysis.policy import Policy
from gbbot.core.fixes import FixStatus
from gbbot.core.words import plural
from gbbot.edges.console import say
from gbbot.publish import checkrun, comment, retry
from gbbot.publish.client import DEFAULT_RETRIES, bot_login, is_forbidden
from gbbot.publish.comment import CommentMode, Posted
from gbbot.publish.content import Texts
from gbbot.publish.fallback import Fallback, fallback
from gbbot.publish.review import ReviewPosted, changed_lines, post_review, review_suggestions
from gbbot.render.markdown import Options

# What a step may raise when GitHub does not take a write; anything else is a bug.
PUBLISH_ERRORS = (GithubException, retry.PublishError, requests.exceptions.RequestException)


@dataclass(frozen=True)
class Destination:
    """Where and how to publish: one pull request's head commit, under one header."""

    repository: str
    pull_number: int
    head_sha: str
    header: str
    check_name: str
    external_id: str
    details_url: str | None
    comment_mode: CommentMode
    policy: Policy  # the check run's conclusion and the annotations' levels
    bot_login: str = ""
    annotate_all: bool = False  # annotate every finding, not only what the PR changed


@dataclass(frozen=True)
class Published:
    comment: Posted | None = None
    check_run: checkrun.CheckRunPosted | None = None
    review: ReviewPosted | None = None
    fallback: Fallback | None = None
    problems: tuple[str, ...] = ()  # failures that were not about permission: the step fails


@dataclass(frozen=True)
class GitHubSession:
    """What every step shares: the client, the retries and where messages go."""

    client: Github
    retries: retry.Retries
    log: retry.Log

    def login(self, where: Destination) -> str:
        return bot_login(self.client, where.bot_login, self.retries, self.log)


def _comment(s: GitHubSession, texts: Texts, content: Options, where: Destination) -> Posted | None:
    if where.comment_mode is CommentMode.OFF:
        return None
    login = s.login(where)
    pull = s.client.get_repo(where.repository).get_pull(where.pull_number)  # lazy: no request yet
    step = lambda: comment.upsert(pull, texts, content, where.header, login, where.comment_mode)  # noqa: E731
    posted = retry.call(step, "sticky comment", s.retries, s.log)
    s.log(f"PR comment {posted.action.value}" + (f": {posted.url}" if posted.url else ""))
    return posted


def _check_run(s: GitHubSession, texts: Texts, content: Options, where: Destination) -> checkrun.CheckRunPosted:
    wanted = checkrun.request(
        texts,
        where.policy,
        content,
        where.check_name,
        where.head_sha,
        where.external_id,
        where.details_url,
        where.annotate_all,
    )
    posted = checkrun.publish(s.client.get_repo(where.repository), wanted, s.retries, s.log)
    requests_ = plural(posted.requests, "request")
    s.log(f"check run {posted.conclusion} with {posted.annotations} annotations in {requests_}")
    return posted


def _review(s: GitHubSession, texts: Texts, content: Options, where: Destination) -> ReviewPosted | None:
    """Verified fixes (the fix step's, in the report) as suggestions on the lines the PR changed."""
    results = texts.report.fixes or ()
    if not any(r.status is FixStatus.VERIFIED for r in results):
        return None
    repo = s.client.get_repo(where.repository)
    pull = repo.get_pull(where.pull_number)
    changed = retry.call(lambda: changed_lines(pull.get_files()), "the PR's changed lines", s.retries, s.log)
    suggestions = review_suggestions(results, changed)
    if not suggestions:
        s.log("verified fixes touch no line this PR changed: they stay in the comment, not in a review")
        return None
    login = s.login(where)
    posted = post_review(pull, repo.get_commit(where.head_sha), suggestions, where.header, login, s.retries, s.log)
    s.log(f"review with {posted.comments} suggestions " + ("posted" if posted.posted else "already there"))
    return posted


Step = Callable[[GitHubSession, Texts, Options, Destination], Any]
# In order; each step's result goes in the field of `Published` that it is named after.
STEPS: tuple[tuple[str, Step], ...] = (("comment", _comment), ("check_run", _check_run), ("review", _review))


def publish(
    client: Github,
    texts: Texts,
    content: Options,
    where: Destination,
    retries: retry.Retries = DEFAULT_RETRIES,
    log: retry.Log = say,
) -> Published:
    """The comment, the check run, then the review of verified fixes, all from one report's texts,
    each rendered once. A permission refusal stops the writes and falls back to annotations; other
    failures do too, and are reported as problems (the step fails)."""
    session = GitHubSession(client, retries, log)
    posted: dict[str, Any] = {}
    for name, step in STEPS:
        try:
            posted[name] = step(session, texts, content, where)
        except PUBLISH_ERRORS as exc:
            reason, what = _reason(name, exc), name.replace("_", " ")
            log(f"cannot publish the {what}: {reason}. Falling back to annotations and the job summary")
            problems = () if is_forbidden(exc) else (reason,)
            return Published(**posted, fallback=fallback(texts.report, where.policy, reason), problems=problems)
    return Published(**posted)


def _reason(step: str, exc: Exception) -> str:
    if is_forbidden(exc):
        return (
            f"the token may not write ({retry.describe(exc)} on the {step.replace('_', ' ')}); "
            "a pull request from a fork gets a read-only token under pull_request, "
            "use the workflow_run pattern to publish"
        )
    return str(exc) if isinstance(exc, retry.PublishError) else retry.describe(exc)
