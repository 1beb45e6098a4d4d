"""`pull_request`: run the diff against the PR's base (no token is used until every entrypoint has
finished; their environment is scrubbed of tokens), write report.json, SARIF, the job summary and
the outputs, then publish — or fall back to annotations when the token is read-only (a fork's PR).

`autofix: true` in the config: the check itself pushes the verified fixes of the breaks the PR
added, on the lines it changed (`deliver.scope`, as `/gb-fix` does; older breaks are left alone),
as one commit to the PR's branch, and the comment says what was pushed and what was not. Only for a PR from a
branch of this repository: a fork's code must never run beside a write token (and its token is
read-only anyway). The commit is `deliver`'s, with `/gb-fix`'s guards: made of the pinned head (the
PR event's head commit) read from git objects, never of the files the run left behind; never
touching `.github/` or the config; pushed without force, only while the PR's head is still that
commit; and none when the branch already ends in two gbbot fix commits (this one is such a commit
too, so two automations cannot feed each other)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from github import GithubException

from gbbot import api
from gbbot.action import analysis, outputs
from gbbot.action.context import Context
from gbbot.action.event import PullRequestEvent
from gbbot.action.publishing import destination, publish_or_fallback
from gbbot.action.workflow import write_outputs
from gbbot.core.errors import GitError
from gbbot.core.model import Report
from gbbot.deliver import commit as fix_commit
from gbbot.deliver import push as pushing
from gbbot.deliver import scope
from gbbot.deliver.sources import Pinned, Unreadable
from gbbot.publish import retry
from gbbot.publish.content import Texts
from gbbot.render.escape import md_code, md_text

MOVED = " while the check ran; the check of the new head decides again."


def handle(ctx: Context, event: PullRequestEvent) -> int:
    report = analysis.diff(ctx, ctx.inputs.base_ref or event.base_sha)
    wanted = ctx.settings.config.autofix
    why_not = ineligible(ctx, event) if wanted else None
    scoped = autofix_scope(ctx, event, report) if wanted and why_not is None else None
    if ctx.inputs.fix or scoped is not None:
        report = analysis.with_fixes(ctx, report, fixes_for(ctx, report, scoped))
    policy = ctx.settings.policy
    text = outputs.content(ctx, report, ctx.env.run_url, event.head_sha)
    if wanted:
        text = text.noted(autofix(ctx, event, report, why_not, scoped).note)
    where = destination(ctx, event.number, event.head_sha, policy, ctx.env.run_url)
    texts = Texts(report)  # the comment, the check run and the job summary share its renderings
    published = publish_or_fallback(ctx, texts, text, where)
    outputs.finish(ctx, texts, policy, text, published)
    return outputs.exit_code(report, policy, published)


# --- autofix ---------------------------------------------------------------------------------------


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
    if fix_commit.stops_at(ctx.root, event.head_sha):
        return f"{fix_commit.STOPS}."
    return None


@dataclass(frozen=True)
class Scoped:
    """What autofix may push: the breaks the PR added on the lines it changed, and those lines."""

    scope: scope.Scope
    changed: scope.Changed


def autofix_scope(ctx: Context, event: PullRequestEvent, report: Report) -> Scoped:
    base = report.diff.base_sha if report.diff else event.base_sha
    changed = scope.changed_lines(ctx.root, base, event.head_sha)
    chosen = scope.scope(report, changed)
    ctx.log(
        f"autofix: {len(chosen.breaks)} break(s) this PR added on the lines it changed; {len(chosen.left)} left alone"
    )
    return Scoped(chosen, changed)


def fixes_for(ctx: Context, report: Report, scoped: Scoped | None) -> tuple[str, ...] | None:
    """The breaks to verify fixes for: autofix's, and with the fix input every new break too."""
    if scoped is None:
        return None
    if not ctx.inputs.fix:
        return scoped.scope.fingerprints
    return tuple(sorted({*scoped.scope.fingerprints, *(b.fingerprint for b in api.new_breaks(report))}))


def push_fixes(ctx: Context, event: PullRequestEvent, report: Report, scoped: Scoped) -> Outcome:
    """Commit the re-derived fixes on the pinned head and push them, or say why not."""
    pinned = event.head_sha
    mine = set(scoped.scope.fingerprints)
    report = replace(report, fixes=tuple(r for r in report.fixes or () if r.fingerprint in mine))
    paths = fix_commit.fixed_paths(report)
    if not paths:
        return not_pushed("no verified fix for the breaks this PR added." + left_alone(scoped))
    source, config = Pinned(ctx.root, pinned), fix_commit.config_paths(ctx.inputs.config)
    try:
        found = fix_commit.verify(source, report, paths, config, None, scoped.changed)
        made = found if isinstance(found, fix_commit.Refusal) else fix_commit.commit_verified(source, found, report)
    except (GitError, Unreadable) as exc:
        return not_pushed(f"the commit could not be made: {exc}")
    if not isinstance(made, fix_commit.Committed):
        return not_pushed(made.said)
    try:
        repo = ctx.connect(ctx.inputs.token, ctx.env.api_url).get_repo(ctx.env.repository)
        done = pushing.push_if_head_is(
            ctx.root, repo, event.number, pinned, made.commit, ctx.inputs.token, ctx.retries, ctx.log, True
        )
    except (GithubException, retry.PublishError) as exc:
        return not_pushed(f"the pull request could not be read: {retry.describe(exc)}")
    if not isinstance(done, pushing.Pushed):
        return not_pushed(done.reason + (MOVED if isinstance(done, pushing.Moved) else "."))
    url = pushing.commit_url(ctx.env.server_url, ctx.env.repository, done.head, made.commit)
    fixed = fix_commit.fixed_lines(made.fixes, report)
    link = f"[{md_code(made.commit[:12])}]({url})"
    fixes = f"{len(fixed)} verified fix{'es' * (len(fixed) != 1)}"
    head = f"🤖 **autofix**: pushed {link} to {md_code(done.head.ref)} with {fixes}:"
    dropped = fix_commit.dropped_lines(made.dropped, report)
    left_out = ["", "Verified fixes not pushed:", *dropped]
    alone = left_alone(scoped)
    lines = [head, "", *fixed, *(left_out if dropped else []), *(["", alone.strip()] if alone else [])]
    return Outcome("\n".join(lines), made.commit)


def left_alone(scoped: Scoped) -> str:
    """The sentence on breaks autofix does not touch, or ""."""
    n = len(scoped.scope.left)
    if not n:
        return ""
    they = "break predates" if n == 1 else "breaks predate"
    return (
        f" {n} {they} this PR or {'is' if n == 1 else 'are'} not on a line it changed, so autofix left "
        f"{'it' if n == 1 else 'them'} alone; {scope.ELSEWHERE}."
    )


def autofix(
    ctx: Context, event: PullRequestEvent, report: Report, why_not: str | None, scoped: Scoped | None
) -> Outcome:
    """The outcome, logged, and the `fix-commit` output when a commit was pushed."""
    done = not_pushed(why_not) if why_not or scoped is None else push_fixes(ctx, event, report, scoped)
    if done.commit:
        write_outputs(ctx.env.output, {"fix-commit": done.commit})
        ctx.log(f"autofix: pushed {done.commit} to the PR's branch")
    else:
        ctx.log(f"autofix: nothing was pushed: {done.reason}")
    return done
