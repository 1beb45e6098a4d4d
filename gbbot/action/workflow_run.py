"""`workflow_run`: the privileged half of the fork-safe pattern. Never runs PR code: reads the
report artifact the workflow downloaded, validates it as untrusted input, finds the PR by the
run's head SHA (from GitHub's payload, not from the report), re-derives the report's fixes from
the PR's files (read through the API as data) and publishes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from github import Github, GithubException

from gbbot.action import analysis, outputs
from gbbot.action.context import Context
from gbbot.action.event import WorkflowRunEvent
from gbbot.action.publishing import destination
from gbbot.core import limits
from gbbot.core.errors import ExitCode
from gbbot.core.model import Report
from gbbot.deliver import rederive, sources
from gbbot.publish import retry
from gbbot.publish.content import Texts
from gbbot.publish.sink import Published, publish
from gbbot.render.markdown import Options

# The check run and the comment say so for a fork's run: its workflow file is the fork's to edit.
FORK_NOTE = (
    "_These figures come from the PR's own workflow run, whose workflow file a fork controls: "
    "read them as the PR's claim._"
)


def find_pull(ctx: Context, client: Github, run: WorkflowRunEvent) -> Any | None:
    """The open PR whose head is the run's commit: from the payload's list (same-repository PRs),
    else the commit's PRs, else the open PRs from the run's head branch (a fork's PR)."""
    repo = client.get_repo(ctx.env.repository)  # lazy: no request

    def matches(pull: Any) -> bool:
        return pull.state == "open" and pull.head.sha == run.head_sha

    for number in run.pull_numbers:
        pull = repo.get_pull(number)
        if retry.call(lambda p=pull: matches(p), f"PR #{number}", ctx.retries, ctx.log):
            return pull
    found = retry.call(
        lambda: [p for p in repo.get_commit(run.head_sha).get_pulls() if matches(p)],
        "PRs of the run's commit",
        ctx.retries,
        ctx.log,
    )
    if not found and run.head_owner and run.head_branch:
        head = f"{run.head_owner}:{run.head_branch}"
        found = retry.call(
            lambda: [p for p in repo.get_pulls(state="open", head=head) if matches(p)],
            f"open PRs from {head}",
            ctx.retries,
            ctx.log,
        )
    return found[0] if found else None


@dataclass(frozen=True)
class Target:
    """The pull request to publish on, and the client that found it."""

    client: Github
    pull: Any

    @property
    def from_fork(self) -> bool:
        head_repo = self.pull.head.repo  # None when the fork was deleted
        return head_repo is None or head_repo.full_name != self.pull.base.repo.full_name


def _target(ctx: Context, run: WorkflowRunEvent) -> Target | None:
    if not ctx.inputs.token:
        ctx.log("no token given: nothing can be published from workflow_run")
        return None
    client = ctx.connect(ctx.inputs.token, ctx.env.api_url)
    try:
        pull = find_pull(ctx, client, run)
    except GithubException as exc:
        raise retry.PublishError(f"cannot look up the run's pull request: {retry.describe(exc)}") from exc
    if pull is None:
        ctx.log(f"no open pull request has head {run.head_sha[:7]}: nothing to publish on")
        return None
    return Target(client, pull)


def _unreadable(path: str) -> str:
    raise sources.Unreadable(f"{path}: the PR's files cannot be read without a pull request to publish on")


def believed(ctx: Context, report: Report, target: Target | None, head_sha: str) -> rederive.Rederived:
    """The report with only the fixes gbbot's recipes reproduce on the PR's code at `head_sha`."""
    read = _unreadable
    if target is not None:
        repo = target.client.get_repo(ctx.env.repository)
        read = sources.pr_files(repo, head_sha, limits.PR_SOURCE_MAX_BYTES, ctx.retries, ctx.log)
    done = rederive.rederive(report, read, limits.REDERIVED_FIXES_MAX)
    for dropped in done.dropped:
        ctx.log(f"suggested fix {dropped.fingerprint} from the report not posted: {dropped.reason}")
    return done


def _content(
    ctx: Context, done: rederive.Rederived, target: Target | None, run_url: str | None, head_sha: str
) -> Options:
    text = outputs.content(ctx, done.report, run_url, head_sha)
    note = rederive.dropped_note(done.dropped)
    text = text.noted(note) if note else text
    return text.noted(FORK_NOTE) if target is not None and target.from_fork else text


def handle(ctx: Context, run: WorkflowRunEvent) -> int:
    report = analysis.read_untrusted(ctx.report_path)
    policy = ctx.settings.policy
    run_url = run.html_url if run.html_url.startswith("https://") and " " not in run.html_url else None
    target = _target(ctx, run)
    done = believed(ctx, report, target, run.head_sha)
    text = _content(ctx, done, target, run_url, run.head_sha)
    published: Published | None = None
    texts = Texts(done.report)
    if target is not None:
        where = destination(ctx, target.pull.number, run.head_sha, policy, run_url)
        published = publish(target.client, texts, text, where, ctx.retries, ctx.log)
    outputs.finish(ctx, texts, policy, text, published)
    return ExitCode.USAGE if published and published.problems else ExitCode.OK
