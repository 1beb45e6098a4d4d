"""schedule and workflow_dispatch: audit the checked-out default branch. Run every entrypoint,
append one record to the history on the data branch (pushed over HTTPS with the token to the
repository's clone URL), and keep the one tracking issue up to date; with `audit: {open_fix_pr:
true}`, open or update one PR of the verified fixes (`fix_pr`), which the issue links; a regression is called out
at the top of the issue, in the job summary and the step outputs, and fails the step per fail-on.
Without a token there is nowhere to write: the audit is shown in the job summary only."""

from __future__ import annotations

from github import Github

from gbbot.action import analysis, fix_pr, outputs
from gbbot.action.context import Context
from gbbot.action.event import OtherEvent
from gbbot.action.workflow import REPOSITORY, SERVER, write_outputs, write_step_summary
from gbbot.audit import history, issue, tracking
from gbbot.audit import run as audit
from gbbot.audit.record import Record
from gbbot.edges.console import say_styled
from gbbot.publish import retry
from gbbot.publish.client import bot_login


def where(ctx: Context) -> issue.Where:
    env = ctx.env
    ok = SERVER.match(env.server_url) and REPOSITORY.match(env.repository)
    return issue.Where(f"{env.server_url}/{env.repository}" if ok else None, env.run_url)


def _runs(ctx: Context) -> list:
    config = ctx.config()
    first = analysis.check(ctx)  # shown and written to report.json like any check
    again = audit.check_with(ctx.root, config, analysis.check_options(ctx))
    return [first, *(again(i) for i in range(1, config.audit.repeat))]


def _history(ctx: Context, client: Github, mine: Record) -> tuple[list[Record], str | None]:
    """Push the record; the records on the data branch after the push, and the clone URL."""
    branch = ctx.config().audit.branch
    repo = client.get_repo(ctx.env.repository)
    url = retry.call(lambda: repo.clone_url, "read the repository's clone URL", ctx.retries, ctx.log)
    remote = history.Remote(url, ctx.inputs.token)
    pushed = history.append_remote(ctx.root, remote, branch, mine, ctx.log)
    ctx.log(
        f"audit record added to {branch} ({pushed.commit[:7]}, {pushed.tries} tr{'y' if pushed.tries == 1 else 'ies'})"
    )
    return list(history.read(ctx.root, pushed.commit, ctx.log).records), url


def handle(ctx: Context, event: OtherEvent) -> int:
    ctx.log(f"event {event.name}: auditing the default branch")
    config = ctx.config()
    runs = _runs(ctx)
    mine = audit.record(runs, ctx.env.run_url)
    issue_url = ""
    if ctx.inputs.token and REPOSITORY.match(ctx.env.repository):
        client = ctx.connect(ctx.inputs.token, ctx.env.api_url)
        records, _ = _history(ctx, client, mine)
        login = bot_login(client, ctx.inputs.bot_login, ctx.retries, ctx.log)
        fixes = fix_pr.run(ctx, client, login, runs[0]).issue_lines() if config.audit.open_fix_pr else []
        result = audit.outcome(records, mine, config.audit.history, where(ctx), fixes)
        repo = client.get_repo(ctx.env.repository)
        posted = tracking.publish(repo, result.body, login, ctx.retries, ctx.log)
        ctx.log(f"tracking issue #{posted.number} {posted.action.value}: {posted.url}")
        issue_url = posted.url
    else:
        ctx.log("no token: the audit record is not kept and no issue is written; see the job summary")
        result = audit.outcome([], mine, config.audit.history, where(ctx))
    policy = ctx.policy()
    breach = audit.verdict(result)
    if breach:
        say_styled(breach)
    changes = result.changes
    report = runs[0]
    write_outputs(
        ctx.env.output,
        {
            **outputs.counts(report),
            "new-breaks": str(len(changes.new)),
            "regressions": str(len(changes.new) + len(changes.stopped)),
            "report-path": str(ctx.report_path),
            "conclusion": "failure" if audit.exit_code(result, policy) else "success",
            "issue-url": issue_url,
        },
    )
    write_step_summary(ctx.env.step_summary, result.body)
    return audit.exit_code(result, policy)
