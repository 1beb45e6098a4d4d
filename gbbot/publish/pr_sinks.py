"""The sinks that publish on a pull request — the sticky comment, the check run, the review of
verified fixes — and `publish`, which runs them in that order. Every GitHub call goes through
`retry`."""

from __future__ import annotations

from dataclasses import dataclass

from github import Github

from gbbot.core.fixes import FixStatus
from gbbot.core.words import plural
from gbbot.edges.console import say
from gbbot.publish import checkrun, comment, retry
from gbbot.publish.client import DEFAULT_RETRIES, bot_login
from gbbot.publish.comment import CommentMode, Posted
from gbbot.publish.content import Texts
from gbbot.publish.review import ReviewPosted, changed_lines, post_review, review_suggestions
from gbbot.publish.sink import Destination, Published, Sinks
from gbbot.render.markdown import Options


@dataclass(frozen=True)
class GitHubSession:
    """What every sink shares: the client, the retry retries and where messages go."""

    client: Github
    retries: retry.Retries
    log: retry.Log

    def login(self, where: Destination) -> str:
        return bot_login(self.client, where.bot_login, self.retries, self.log)


@dataclass(frozen=True)
class CommentSink:
    session: GitHubSession
    name: str = "comment"

    def publish(self, texts: Texts, content: Options, where: Destination) -> Posted | None:
        if where.comment_mode is CommentMode.OFF:
            return None
        s = self.session
        login = s.login(where)
        pull = s.client.get_repo(where.repository).get_pull(where.pull_number)  # lazy: no request yet
        step = lambda: comment.upsert(pull, texts, content, where.header, login, where.comment_mode)  # noqa: E731
        posted = retry.call(step, "sticky comment", s.retries, s.log)
        s.log(f"PR comment {posted.action.value}" + (f": {posted.url}" if posted.url else ""))
        return posted


@dataclass(frozen=True)
class CheckRunSink:
    session: GitHubSession
    name: str = "check_run"

    def publish(self, texts: Texts, content: Options, where: Destination) -> checkrun.CheckRunPosted:
        s = self.session
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
        requests = plural(posted.requests, "request")
        s.log(f"check run {posted.conclusion} with {posted.annotations} annotations in {requests}")
        return posted


@dataclass(frozen=True)
class ReviewSink:
    """Verified fixes (the fix step's, in the report) as suggestions on the lines the PR changed."""

    session: GitHubSession
    name: str = "review"

    def publish(self, texts: Texts, content: Options, where: Destination) -> ReviewPosted | None:
        results = texts.report.fixes or ()
        if not any(r.status is FixStatus.VERIFIED for r in results):
            return None
        s = self.session
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


def pull_request_sinks(client: Github, retries: retry.Retries, log: retry.Log) -> Sinks:
    session = GitHubSession(client, retries, log)
    return Sinks((CommentSink(session), CheckRunSink(session), ReviewSink(session)), log)


def publish(
    client: Github,
    texts: Texts,
    content: Options,
    where: Destination,
    retries: retry.Retries = DEFAULT_RETRIES,
    log: retry.Log = say,
) -> Published:
    """The comment, the check run, then the review of verified fixes (see `Sinks` for failures),
    all from one report's texts, each rendered once."""
    return pull_request_sinks(client, retries, log).publish(texts, content, where)
