"""`workflow_run`: the privileged half of the fork-safe pattern. Never runs PR code: reads the
report artifact the workflow downloaded, validates it as untrusted input, finds the PR by the
run's head SHA (from GitHub's payload, not from the report) and publishes."""

from __future__ import annotations

from typing import Any

from github import Github, GithubException

from gbbot.action import analysis, outputs
from gbbot.action.context import Context
from gbbot.action.event import WorkflowRunEvent
from gbbot.action.publishing import destination
from gbbot.errors import ExitCode
from gbbot.model import Report
from gbbot.publish import retry
from gbbot.publish.content import Content
from gbbot.publish.pull_request import publish
from gbbot.publish.sink import Published


def find_pull(ctx: Context, client: Github, run: WorkflowRunEvent) -> Any | None:
    """The open PR whose head is the run's commit: from the payload's list (same-repository PRs),
    else the commit's PRs, else the open PRs from the run's head branch (a fork's PR)."""
    repo = client.get_repo(ctx.env.repository)  # lazy: no request

    def matches(pull: Any) -> bool:
        return pull.state == "open" and pull.head.sha == run.head_sha

    for number in run.pull_numbers:
        pull = repo.get_pull(number)
        if retry.call(lambda p=pull: matches(p), f"PR #{number}", ctx.policy, ctx.log):
            return pull
    found = retry.call(
        lambda: [p for p in repo.get_commit(run.head_sha).get_pulls() if matches(p)],
        "PRs of the run's commit",
        ctx.policy,
        ctx.log,
    )
    if not found and run.head_owner and run.head_branch:
        head = f"{run.head_owner}:{run.head_branch}"
        found = retry.call(
            lambda: [p for p in repo.get_pulls(state="open", head=head) if matches(p)],
            f"open PRs from {head}",
            ctx.policy,
            ctx.log,
        )
    return found[0] if found else None


def _published(
    ctx: Context, run: WorkflowRunEvent, report: Report, text: Content, policy: str, run_url: str | None
) -> Published | None:
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
    where = destination(ctx, pull.number, run.head_sha, policy, run_url)
    return publish(client, report, text, where, ctx.policy, ctx.log)


def handle(ctx: Context, run: WorkflowRunEvent) -> int:
    report = analysis.read_untrusted(ctx.report_path)
    policy = ctx.fail_on()
    run_url = run.html_url if run.html_url.startswith("https://") and " " not in run.html_url else None
    text = outputs.content(ctx, report, run_url)
    published = _published(ctx, run, report, text, policy, run_url)
    outputs.finish(ctx, report, policy, text, published)
    return ExitCode.USAGE if published and published.problems else ExitCode.OK
