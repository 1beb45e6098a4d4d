"""schedule and workflow_dispatch: audit the checked-out default branch. Run every entrypoint,
append one record to the history on the data branch (pushed over HTTPS with the token to the
repository's clone URL), and keep the one tracking issue up to date; a regression is called out at
the top of the issue, in the job summary and the step outputs, and fails the step per fail-on.
Without a token there is nowhere to write: the audit is shown in the job summary only.

`audit: {open_fix_pr: true}`: after the audit, the fix rounds run on the audited commit (in a
scratch copy: the checkout is never written), and the verified fixes become one commit on gbbot's
own branch `gbbot/fixes`, whose parent is the audited commit, and one pull request to the default
branch, opened once and then edited; the issue links it. The commit is `deliver`'s, as autofix and
`/gb-fix` make theirs: re-derived from the audited commit read from git objects, never the files
the runs left behind, never `.github/` or the config. The branch is replaced each night, so the push
may be forced, but only over a tip gbbot made itself and only while the remote still has that tip:
a branch someone else committed to is left alone and the tracking issue says so. With no verified
fix nothing is pushed or opened; a PR from an earlier night is left open (closing it could drop
fixes a flaky night missed) and the issue says it may be stale."""

from __future__ import annotations

from typing import Any

from github import Github, GithubException

from gbbot import api
from gbbot.action import analysis, outputs
from gbbot.action.context import Context
from gbbot.action.event import OtherEvent
from gbbot.action.workflow import REPOSITORY, SERVER, write_outputs, write_step_summary
from gbbot.audit import fixpr, history, issue, tracking
from gbbot.audit import run as audit
from gbbot.audit.fixpr import Action, Outcome
from gbbot.audit.record import Record
from gbbot.core.errors import GbbotError
from gbbot.core.fixes import verified_only
from gbbot.core.model import ChangeState, Report
from gbbot.core.words import plural
from gbbot.deliver import commit as fix_commit
from gbbot.deliver.push import OnBranch, replace_own_branch
from gbbot.deliver.sources import Pinned, Unreadable
from gbbot.edges import git
from gbbot.edges.console import say_styled
from gbbot.publish import retry
from gbbot.publish.client import bot_login


def where(ctx: Context) -> issue.Where:
    env = ctx.env
    ok = SERVER.match(env.server_url) and REPOSITORY.match(env.repository)
    return issue.Where(f"{env.server_url}/{env.repository}" if ok else None, env.run_url)


def _runs(ctx: Context) -> list:
    config = ctx.settings.config
    first = analysis.check(ctx)  # shown and written to report.json like any check
    again = audit.check_with(ctx.root, config, analysis.check_options(ctx))
    return [first, *(again(i) for i in range(1, config.audit.repeat))]


def _history(ctx: Context, client: Github, mine: Record) -> tuple[list[Record], str | None]:
    """Push the record; the records on the data branch after the push, and the clone URL."""
    branch = ctx.settings.config.audit.branch
    repo = client.get_repo(ctx.env.repository)
    url = retry.call(lambda: repo.clone_url, "read the repository's clone URL", ctx.retries, ctx.log)
    remote = history.Remote(url, ctx.inputs.token)
    pushed = history.append_remote(ctx.root, remote, branch, mine, ctx.log)
    ctx.log(f"audit record added to {branch} ({pushed.commit[:7]}, {plural(pushed.tries, 'try', 'tries')})")
    return list(history.read(ctx.root, pushed.commit, ctx.log).records), url


def handle(ctx: Context, event: OtherEvent) -> int:
    ctx.log(f"event {event.name}: auditing the default branch")
    config = ctx.settings.config
    runs = _runs(ctx)
    mine = audit.record(runs, ctx.env.run_url)
    issue_url = ""
    if ctx.inputs.token and REPOSITORY.match(ctx.env.repository):
        client = ctx.connect(ctx.inputs.token, ctx.env.api_url)
        records, _ = _history(ctx, client, mine)
        login = bot_login(client, ctx.inputs.bot_login, ctx.retries, ctx.log)
        fixes = fix_pr(ctx, client, login, runs[0]).issue_lines() if config.audit.open_fix_pr else []
        renames = audit.renames_in(ctx.root, ctx.log)
        sources = audit.sources_in(ctx.root, ctx.log)
        result = audit.outcome(records, mine, config.audit.history, where(ctx), fixes, renames, sources)
        repo = client.get_repo(ctx.env.repository)
        posted = tracking.publish(repo, result.body, login, ctx.retries, ctx.log)
        ctx.log(f"tracking issue #{posted.number} {posted.action.value}: {posted.url}")
        issue_url = posted.url
    else:
        ctx.log("no token: the audit record is not kept and no issue is written; see the job summary")
        result = audit.outcome([], mine, config.audit.history, where(ctx))
    policy = ctx.settings.policy
    breach = audit.verdict(result)
    if breach:
        say_styled(breach)
    changes = result.changes
    report = runs[0]
    write_outputs(
        ctx.env.output,
        {
            **outputs.counts(report),
            "new-breaks": str(len(changes.of(ChangeState.NEW))),
            "regressions": str(len(changes.of(ChangeState.NEW)) + len(changes.stopped)),
            "report-path": str(ctx.report_path),
            "conclusion": "failure" if audit.exit_code(result, policy) else "success",
            "issue-url": issue_url,
        },
    )
    write_step_summary(ctx.env.step_summary, result.body)
    return audit.exit_code(result, policy)


# --- the fix PR -----------------------------------------------------------------------------------


def not_done(fixed: int, reason: str) -> Outcome:
    return Outcome(Action.NOT_DONE, fixed, reason=reason)


def _fix_run(ctx: Context, report: Report) -> Any:  # a FixRun; the pipeline imports LibCST, so lazily

    options = api.FixOptions(  # LibCST: imported only for the fix PR
        mode=ctx.settings.mode, jobs=ctx.settings.jobs, progress=ctx.log
    )
    return api.fix(ctx.root, ctx.settings.config, options, report)


def open_fix_pr(ctx: Context, client: Github, login: str, report: Report) -> Outcome:
    """Fix, commit, push and open (or update) the PR; or say why not."""
    audited = git.head_sha(ctx.root)
    if audited is None:
        return Outcome(Action.NONE)
    repo = client.get_repo(ctx.env.repository)
    read = lambda: (repo.clone_url, repo.default_branch, repo.owner.login)  # noqa: E731
    url, base, owner = retry.call(read, "read the repository", ctx.retries, ctx.log)
    remote = git.Remote(url, ctx.inputs.token)
    done = _fix_run(ctx, report)
    paths = fix_commit.fixed_paths(done.report)
    failed = [j for j in (done.overall, done.bystanders) if j is not None and not j.ok]
    if not paths or failed:
        return fixpr.earlier(repo, owner, base, login, ctx.retries, ctx.log)
    fixed = len(verified_only(done.results))
    if git.fetch_branch(ctx.root, remote, base, fixpr.DEFAULT_REF) is None or not git.is_ancestor(
        ctx.root, audited, fixpr.DEFAULT_REF
    ):
        return not_done(fixed, f"the audited commit {audited[:7]} is not on the default branch {base}")
    config = fix_commit.config_paths(ctx.inputs.config)
    source = Pinned(ctx.root, audited)
    found = fix_commit.verify(source, done.report, paths, config)
    if isinstance(found, fix_commit.Refusal):
        return not_done(fixed, found.said)
    made = fix_commit.commit_verified(source, found, done.report)
    tip = replace_own_branch(ctx.root, remote, fixpr.BRANCH, fixpr.FETCHED_REF, made.commit)
    if not isinstance(tip, OnBranch):
        return not_done(len(made.fixes), tip.reason)
    if tip.pushed:
        ctx.log(f"fix PR: pushed {tip.commit[:12]} to {fixpr.BRANCH}")
    before, after = done.totals
    text = fixpr.body(made.fixes, done.report, audited, before, after, made.dropped)
    return fixpr.publish(repo, owner, base, login, text, len(made.fixes), ctx.retries, ctx.log)


def fix_pr(ctx: Context, client: Github, login: str, report: Report) -> Outcome:
    """The outcome, logged; a failure costs the fix PR, never the audit."""
    try:
        done = open_fix_pr(ctx, client, login, report)
    except (GbbotError, Unreadable) as exc:
        done = not_done(0, str(exc))
    except (GithubException, retry.PublishError) as exc:
        done = not_done(0, f"GitHub refused: {retry.describe(exc)}")
    if done.action is Action.NOT_DONE:
        ctx.log(f"fix PR: not opened: {done.reason}")
    elif done.action is not Action.NONE:
        ctx.log(f"fix PR #{done.number} {done.action.value}: {done.url}")
    return done
