"""Publishing as a family of sinks behind one small interface: each sink publishes one report on
one pull request and returns what it posted; `Sinks` runs them in order and, when GitHub refuses
a write, stops and falls back to workflow-command annotations, which need no token."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import requests
from github import GithubException

from gbbot.analysis.policy import Policy
from gbbot.core.model import Report
from gbbot.publish import checkrun, retry
from gbbot.publish.client import is_forbidden
from gbbot.publish.comment import CommentMode, Posted
from gbbot.publish.content import Texts
from gbbot.publish.fallback import Fallback, fallback
from gbbot.publish.review import ReviewPosted
from gbbot.render.markdown import Options

# What a sink may raise when GitHub does not take a write; anything else is a bug.
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


SinkResult = Posted | checkrun.CheckRunPosted | ReviewPosted | None


class Sink(Protocol):
    name: str  # the field of `Published` its result goes in: comment, check_run, review

    def publish(self, texts: Texts, content: Options, where: Destination) -> SinkResult: ...


@dataclass(frozen=True)
class Published:
    comment: Posted | None = None
    check_run: checkrun.CheckRunPosted | None = None
    review: ReviewPosted | None = None
    fallback: Fallback | None = None
    problems: tuple[str, ...] = ()  # failures that were not about permission: the step fails


@dataclass(frozen=True)
class Sinks:
    """The sinks in order. A permission refusal stops the writes and falls back to annotations;
    other failures do too, and are reported as problems (the step fails)."""

    sinks: Sequence[Sink]
    log: retry.Log

    def publish(self, texts: Texts, content: Options, where: Destination) -> Published:
        posted: dict[str, Any] = {}
        for sink in self.sinks:
            try:
                posted[sink.name] = sink.publish(texts, content, where)
            except PUBLISH_ERRORS as exc:
                return self._fall_back(sink.name, exc, texts.report, where, posted)
        return Published(**posted)

    def _fall_back(
        self, name: str, exc: Exception, report: Report, where: Destination, posted: dict[str, Any]
    ) -> Published:
        reason = _reason(name, exc)
        what = name.replace("_", " ")
        self.log(f"cannot publish the {what}: {reason}. Falling back to annotations and the job summary")
        problems = () if is_forbidden(exc) else (reason,)
        return Published(**posted, fallback=fallback(report, where.policy, reason), problems=problems)


def _reason(step: str, exc: Exception) -> str:
    if is_forbidden(exc):
        return (
            f"the token may not write ({retry.describe(exc)} on the {step.replace('_', ' ')}); "
            "a pull request from a fork gets a read-only token under pull_request, "
            "use the workflow_run pattern to publish"
        )
    return str(exc) if isinstance(exc, retry.PublishError) else retry.describe(exc)
