"""`audit: {open_fix_pr: true}`: after the audit, the fix rounds run on the audited commit (in a
scratch copy: the checkout is never written), and the verified fixes become one commit on gbbot's
own branch `gbbot/fixes`, whose parent is the audited commit, and one pull request to the default
branch, opened once and then edited.

The commit holds what gbbot's recipes make of the audited commit read from git objects (as
`autofix` and `/gb-fix` re-derive them), never the files the runs left behind, and never `.github/`
or the config. The branch is replaced each night, so the push may be forced, but only over a tip
gbbot made itself and only while the remote still has that tip: a branch someone else committed to
is left alone and the tracking issue says so. With no verified fix nothing is pushed or opened; a PR
from an earlier night is left open (closing it could drop fixes a flaky night missed) and the issue
says it may be stale."""

from __future__ import annotations

from typing import Any

from github import Github, GithubException

from gbbot import api
from gbbot.action import issue_comment as gb_fix
from gbbot.action.autofix import fixed_paths
from gbbot.action.context import Context
from gbbot.audit import fixpr
from gbbot.audit.fixpr import Action, Outcome
from gbbot.core.errors import GbbotError
from gbbot.core.model import Mode, Report
from gbbot.deliver import patchcheck, rederive
from gbbot.deliver.pinned import Pinned
from gbbot.edges import git
from gbbot.fix import rounds
from gbbot.publish import retry


def not_done(fixed: int, reason: str) -> Outcome:
    return Outcome(Action.NOT_DONE, fixed, reason=reason)


def _fix_run(ctx: Context, report: Report) -> Any:  # a FixRun; the pipeline imports LibCST, so lazily
    from gbbot.fix.pipeline import FixOptions

    mode = Mode(ctx.inputs.mode) if ctx.inputs.mode else None
    return api.fix(ctx.root, ctx.config(), FixOptions(mode=mode, jobs=ctx.inputs.jobs, progress=ctx.log), report)


def _stale_or_none(repo: Any, owner: str, base: str, login: str, ctx: Context) -> Outcome:
    found = retry.call(lambda: fixpr.find_open(repo, owner, base, login), "find the fix PR", ctx.retries, ctx.log)
    return Outcome(Action.STALE, number=found.number, url=found.html_url) if found else Outcome(Action.NONE)


def _branch_commit(ctx: Context, remote: git.Remote, commit: str) -> tuple[str, str | None] | str:
    """(the commit the branch should have, the gbbot tip it replaces or None), or why the branch
    is not touched. A tip with the same tree on the same parent is kept: nothing to push."""
    tip = git.fetch_branch(ctx.root, remote, fixpr.BRANCH, fixpr.FETCHED_REF)
    if tip is None:
        return commit, None
    recent = git.recent_commits(ctx.root, tip, 1)
    if not recent or not fixpr.made_by_gbbot(*recent[0]):
        return (
            f"the branch {fixpr.BRANCH} exists and its tip {tip[:7]} is not a commit gbbot made; "
            "gbbot never pushes over it (delete the branch to let gbbot use it)"
        )
    if git.tree_and_parents(ctx.root, tip) == git.tree_and_parents(ctx.root, commit):
        return tip, tip
    return commit, tip


def _publish(repo: Any, owner: str, base: str, login: str, text: str) -> tuple[Action, Any]:
    """One idempotent step (a retry finds what an earlier try opened)."""
    found = fixpr.find_open(repo, owner, base, login)
    if found is not None:
        found.edit(title=fixpr.TITLE, body=text)
        return Action.UPDATED, found
    return Action.OPENED, repo.create_pull(base=base, head=fixpr.BRANCH, title=fixpr.TITLE, body=text)


def open_fix_pr(ctx: Context, client: Github, login: str, report: Report) -> Outcome:
    """Fix, commit, push and open (or update) the PR; or say why not."""
    from gbbot.deliver.expected import expected  # LibCST: only when fixes are asked for

    audited = git.head_sha(ctx.root)
    if audited is None:
        return Outcome(Action.NONE)
    repo = client.get_repo(ctx.env.repository)
    read = lambda: (repo.clone_url, repo.default_branch, repo.owner.login)  # noqa: E731
    url, base, owner = retry.call(read, "read the repository", ctx.retries, ctx.log)
    remote = git.Remote(url, ctx.inputs.token)
    done = _fix_run(ctx, report)
    paths = fixed_paths(done.report)
    if not paths or (done.overall is not None and not done.overall.ok):
        return _stale_or_none(repo, owner, base, login, ctx)
    fixed = len(rederive.verified_only(done.results))
    if git.fetch_branch(ctx.root, remote, base, fixpr.DEFAULT_REF) is None or not git.is_ancestor(
        ctx.root, audited, fixpr.DEFAULT_REF
    ):
        return not_done(fixed, f"the audited commit {audited[:7]} is not on the default branch {base}")
    why = patchcheck.protected(paths, gb_fix.config_paths(ctx), paths)
    if why:
        return not_done(fixed, why)
    source = Pinned(ctx.root, audited)
    found = expected(done.report, paths, source.read)
    if isinstance(found, patchcheck.Refused):
        return not_done(fixed, f"the fixes are not re-derived on {audited[:7]}: {found.reason}")
    files = {p.path: (source.mode(p.path), p.after.encode("utf-8")) for p in found.patches}
    commit = git.commit_files(ctx.root, audited, files, gb_fix.commit_message(found, done.report), gb_fix.IDENTITY)
    branch = _branch_commit(ctx, remote, commit)
    if isinstance(branch, str):
        return not_done(len(found.fixes), branch)
    commit, replacing = branch
    if commit != replacing:
        refused = git.push(ctx.root, remote, commit, fixpr.BRANCH, replacing)
        if refused:
            return not_done(len(found.fixes), f"the push to {fixpr.BRANCH} was refused ({refused})")
        ctx.log(f"fix PR: pushed {commit[:12]} to {fixpr.BRANCH}")
    before, after = rounds.counts(done.report), rounds.counts(done.after or done.report)
    text = fixpr.body(found.fixes, done.report, audited, before, after)
    publish = lambda: _publish(repo, owner, base, login, text)  # noqa: E731
    action, pull = retry.call(publish, "open or update the fix PR", ctx.retries, ctx.log)
    return Outcome(action, len(found.fixes), pull.number, pull.html_url)


def run(ctx: Context, client: Github, login: str, report: Report) -> Outcome:
    """The outcome, logged; a failure costs the fix PR, never the audit."""
    try:
        done = open_fix_pr(ctx, client, login, report)
    except (GbbotError, rederive.Unreadable) as exc:
        done = not_done(0, str(exc))
    except (GithubException, retry.PublishError) as exc:
        done = not_done(0, f"GitHub refused: {retry.describe(exc)}")
    if done.action is Action.NOT_DONE:
        ctx.log(f"fix PR: not opened: {done.reason}")
    elif done.action is not Action.NONE:
        ctx.log(f"fix PR #{done.number} {done.action.value}: {done.url}")
    return done
