"""`autofix: true`: the PR check itself pushes the verified fixes of the PR's new breaks as one
commit to the PR's branch, with `/gb-fix`'s guards. Only for a PR from a branch of this repository:
a fork's code must never run beside a write token (and its token is read-only anyway).

The commit holds what gbbot's recipes make of the pinned head (the PR event's head commit), read
from git objects, never the files the entrypoints' run left behind; it touches only files a verified
fix names, never `.github/` or the config; it is made on the pinned head and pushed without force,
only while the PR's head is still that commit; and there is none when the branch already ends in
two gbbot fix commits (this one is such a commit too, so two automations cannot feed each other)."""

from __future__ import annotations

from dataclasses import dataclass

from github import GithubException

from gbbot.action import issue_comment as gb_fix
from gbbot.action.context import Context
from gbbot.action.event import PullRequestEvent
from gbbot.action.workflow import write_outputs
from gbbot.core.errors import GitError
from gbbot.core.model import Report
from gbbot.deliver import loop, patchcheck, rederive
from gbbot.deliver.pinned import Pinned
from gbbot.edges import git
from gbbot.gbfix import conversation as gh
from gbbot.gbfix import replies
from gbbot.publish import retry
from gbbot.render.escape import md_code, md_text


@dataclass(frozen=True)
class Outcome:
    """What the sticky comment says: `note` is trusted markdown (untrusted parts escaped)."""

    note: str
    commit: str = ""  # the commit pushed, or ""
    reason: str = ""  # why none was, as plain text for the log


def not_pushed(reason: str) -> Outcome:
    return Outcome(f"🤖 **autofix**: nothing was pushed: {md_text(reason)}", reason=reason)


def ineligible(ctx: Context, event: PullRequestEvent) -> str | None:
    """Why autofix does not even start (before any fix is computed), or None."""
    if event.is_fork:
        return "this PR comes from a fork; autofix pushes only to branches of this repository."
    if not ctx.inputs.token:
        return "no token was given to the action."
    if loop.too_many(git.recent_commits(ctx.root, event.head_sha, loop.IN_A_ROW_MAX)):
        return "the branch's last two commits are gbbot fix commits already; gbbot stops there."
    return None


def fixed_paths(report: Report) -> tuple[str, ...]:
    """The files the report's verified fixes edit."""
    return tuple(sorted({r.file for r in rederive.verified_only(report.fixes or ())}))


def moved(pinned: str, now: str) -> str:
    return (
        f"the PR's head moved from {pinned[:7]} to {now[:7]} while the check ran; "
        "the check of the new head decides again."
    )


def why_no_push(pull: gh.PullHead, pinned: str) -> str | None:
    """The PR as the API shows it just before the push: still this repository's, open, at the pin."""
    if pull.from_fork:
        return "the API says this PR's head is in another repository."
    if pull.state != "open":
        return f"the pull request is {pull.state}."
    if pull.sha != pinned:
        return moved(pinned, pull.sha)
    return None


def push_fixes(ctx: Context, event: PullRequestEvent, report: Report) -> Outcome:
    """Commit the re-derived fixes on the pinned head and push them, or say why not."""
    from gbbot.deliver.expected import expected  # LibCST: only when there are fixes

    pinned = event.head_sha
    paths = fixed_paths(report)
    if not paths:
        return not_pushed("no verified fix for the new breaks.")
    why = patchcheck.protected(paths, gb_fix.config_paths(ctx), paths)
    if why:
        return not_pushed(why)
    source = Pinned(ctx.root, pinned)
    found = expected(report, paths, source.read)
    if isinstance(found, patchcheck.Refused):
        return not_pushed(f"the fixes are not re-derived on {pinned[:7]}: {found.reason}")
    try:
        files = {p.path: (source.mode(p.path), p.after.encode("utf-8")) for p in found.patches}
        commit = git.commit_files(ctx.root, pinned, files, gb_fix.commit_message(found, report), gb_fix.IDENTITY)
        repo = ctx.connect(ctx.inputs.token, ctx.env.api_url).get_repo(ctx.env.repository)
        pull = gh.pull_head(repo, event.number, ctx.retries, ctx.log)
    except (GitError, rederive.Unreadable) as exc:
        return not_pushed(f"the commit could not be made: {exc}")
    except (GithubException, retry.PublishError) as exc:
        return not_pushed(f"the pull request could not be read: {retry.describe(exc)}")
    why = why_no_push(pull, pinned)
    if why:
        return not_pushed(why)
    refused = git.push(ctx.root, git.Remote(pull.clone_url, ctx.inputs.token), commit, pull.ref)
    if refused:
        return not_pushed(f"the push to {pull.ref} was refused ({refused}).")
    url = gb_fix.commit_url(ctx, pull, commit)
    fixed = replies.fixed_lines(found.fixes, report)
    link = f"[{md_code(commit[:12])}]({url})"
    head = f"🤖 **autofix**: pushed {link} to {md_code(pull.ref)} with {len(fixed)} verified fix(es):"
    return Outcome("\n".join([head, "", *fixed]), commit)


def run(ctx: Context, event: PullRequestEvent, report: Report, why_not: str | None) -> Outcome:
    """The outcome, logged, and the `fix-commit` output when a commit was pushed."""
    done = not_pushed(why_not) if why_not else push_fixes(ctx, event, report)
    if done.commit:
        write_outputs(ctx.env.output, {"fix-commit": done.commit})
        ctx.log(f"autofix: pushed {done.commit} to the PR's branch")
    else:
        ctx.log(f"autofix: nothing was pushed: {done.reason}")
    return done
