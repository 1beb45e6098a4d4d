"""`issue_comment`: `/gb-fix`, a maintainer's request for a verified fix commit, in three stages
that the workflow runs as three jobs, so that the PR's code never runs next to a write token:

- `authorize` (write token, runs no PR code): is this a command, may its author push; reacts 👀;
  pins the PR's head commit (outputs `allowed`, `head-sha`, `head-ref`, `base-sha`, `pr-number`,
  `args`);
- `fix` (no token): in a checkout of the pinned commit, diffs it with the PR's merge-base and
  verifies fixes for the breaks the PR added, on the lines it changed (`deliver.scope`; `/gb-fix
  all`: every break in the files it changed), and writes the verified patch and its report to
  `gbbot-fix/` (uploaded as an artifact);
- `push` (write token, runs no PR code): believes nothing of the artifact that it cannot re-derive
  from the pinned source with gbbot's own recipes, keeps each fix that may go on the PR's branch
  on its own, commits those on the pinned commit, re-checks the head and pushes without force — or
  posts the patch when it may not or must not push.

Every stage re-reads the command from the event (the same payload in every job), so only the
pinned commit travels between jobs."""

from __future__ import annotations

import shutil
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from gbbot import api
from gbbot.action import analysis
from gbbot.action.context import Context
from gbbot.action.event import SHA, IssueCommentEvent
from gbbot.action.inputs import Inputs
from gbbot.action.workflow import write_outputs
from gbbot.core.errors import ExitCode, GbbotError
from gbbot.core.model import Report
from gbbot.deliver import commit as fix_commit
from gbbot.deliver import patchcheck, scope
from gbbot.deliver import push as pushing
from gbbot.deliver.sources import Pinned
from gbbot.edges import git
from gbbot.gbfix import conversation as gh
from gbbot.gbfix import permission, replies
from gbbot.gbfix.command import Command, Kind, parse
from gbbot.publish import retry
from gbbot.publish.review import changed_lines

if TYPE_CHECKING:
    from gbbot.deliver.expected import Expected

Kept = Union["Expected", fix_commit.Committed]  # what verifying or committing kept of the fixes

ARTIFACT_DIR = "gbbot-fix"
PATCH_FILE, REPORT_FILE = "fix.patch", "report.json"
SETUP = (
    "issue_comment: nothing to do without the gb-fix input. To answer `/gb-fix` comments, copy "
    ".github/workflows/gbbot-fix.yml: it runs this action three times, with gb-fix: authorize, fix and push."
)
MOVED = " after the command, so nothing was pushed; comment /gb-fix again to fix the new head."


def reads_config(given: Inputs) -> bool:
    """Only the fix stage runs entrypoints, so only it reads the config (the PR's, in its checkout);
    authorize and push hold a write token and never open it."""
    return given.gb_fix == "fix"


def handle(ctx: Context, event: IssueCommentEvent) -> int:
    stage = ctx.inputs.gb_fix
    if not stage:
        ctx.log(SETUP)
        return ExitCode.OK
    command = command_of(ctx, event)
    if command is None:
        if stage == "authorize":
            write_outputs(ctx.env.output, {"allowed": "false"})
        return ExitCode.OK
    return {"authorize": authorize, "fix": fix, "push": push}[stage](ctx, event, command)


def ignored(ctx: Context, event: IssueCommentEvent) -> str | None:
    """Why the comment is no command for gbbot, or None."""
    if event.action != "created":
        return f"the comment was {event.action or 'not created'}; only new comments are read"
    if not event.is_pull:
        return "the comment is not on a pull request"
    if event.user_type == "Bot" or event.login.endswith("[bot]") or event.login == ctx.inputs.bot_login:
        return f"the comment is by a bot ({event.login})"
    return None


def command_of(ctx: Context, event: IssueCommentEvent) -> Command | None:
    why = ignored(ctx, event)
    command = None if why else parse(event.body)
    if why or command is None:
        ctx.log(f"/gb-fix: ignored: {why or 'the first line of the comment is not a /gb-fix command'}")
    return command


# --- the GitHub side -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Thread:
    """The pull request's conversation and the command's comment on it."""

    ctx: Context
    repo: Any
    event: IssueCommentEvent

    def react(self, content: str) -> None:
        gh.react(self.repo, self.event.number, self.event.comment_id, content, self.ctx.retries, self.ctx.log)

    def reply(self, body: str) -> None:
        url = gh.reply(self.repo, self.event.number, body, self.ctx.retries, self.ctx.log)
        self.ctx.log(f"/gb-fix: replied: {url}")

    def refuse(self, reason: str) -> int:
        self.ctx.log(f"/gb-fix: refused: {reason}")
        self.react(gh.CONFUSED)
        self.reply(replies.refusal(reason))
        return ExitCode.OK

    def allowed(self) -> bool:
        required = self.ctx.inputs.fix_permission
        role = permission.role_of(self.repo, self.event.login, self.ctx.retries, self.ctx.log)
        self.ctx.log(f"/gb-fix: {self.event.login} has role {role or 'none'}; {required} is needed")
        return permission.allows(role, required)

    def pull(self) -> pushing.PullHead:
        return pushing.pull_head(self.repo, self.event.number, self.ctx.retries, self.ctx.log)

    def changed(self) -> dict[str, AbstractSet[int]]:
        """The lines the pull request adds or changes, per file, as the API's diff shows them."""
        number = self.event.number
        read = lambda: changed_lines(self.repo.get_pull(number).get_files())  # noqa: E731
        return retry.call(read, "the PR's changed lines", self.ctx.retries, self.ctx.log)


def thread(ctx: Context, event: IssueCommentEvent) -> Thread:
    if not ctx.inputs.token:
        raise GbbotError(f"/gb-fix {ctx.inputs.gb_fix}: this stage needs a token (the token input)")
    repo = ctx.connect(ctx.inputs.token, ctx.env.api_url).get_repo(ctx.env.repository)
    return Thread(ctx, repo, event)


def not_permitted(ctx: Context, event: IssueCommentEvent) -> str:
    return f"{event.login} may not ask for fix commits here: it needs the {ctx.inputs.fix_permission} role."


# --- stage 1: authorize --------------------------------------------------------------------------


def authorize(ctx: Context, event: IssueCommentEvent, command: Command) -> int:
    here = thread(ctx, event)
    no = {"allowed": "false"}
    if not here.allowed():  # before anything else: a refused commenter gets one reaction and one line
        write_outputs(ctx.env.output, no)
        return here.refuse(not_permitted(ctx, event))
    here.react(gh.EYES)
    if command.kind is not Kind.FIX:
        write_outputs(ctx.env.output, no)
        here.react(gh.ROCKET if command.kind is Kind.HELP else gh.CONFUSED)
        here.reply(replies.usage(command.word))
        return ExitCode.OK
    pull = here.pull()
    if pull.state != "open":
        write_outputs(ctx.env.output, no)
        return here.refuse(f"the pull request is {pull.state}")
    write_outputs(
        ctx.env.output,
        {
            "allowed": "true",
            "head-sha": pull.sha,
            "head-ref": pull.ref,
            "base-sha": pull.base_sha,
            "pr-number": str(pull.number),
            "args": command.args,
        },
    )
    ctx.log(f"/gb-fix {command.args}: allowed; the PR head is pinned at {pull.sha}")
    return ExitCode.OK


# --- stage 2: fix (no token, the PR's code) --------------------------------------------------------


def pinned_sha(ctx: Context) -> str:
    sha = ctx.inputs.head_sha
    if not SHA.match(sha):
        raise GbbotError(f"/gb-fix {ctx.inputs.gb_fix}: the head-sha input (the authorize stage's output) is needed")
    return sha


NO_BASE = (
    "/gb-fix fix: the base-ref input (the authorize stage's base-sha output) is needed: what the pull "
    "request added is decided against its merge-base (see .github/workflows/gbbot-fix.yml)"
)


def _scoped(ctx: Context, command: Command, sha: str) -> tuple[Report, scope.Scope]:
    """The pinned head diffed with the PR's merge-base, and the breaks the command is for."""
    if not ctx.inputs.base_ref:
        raise GbbotError(NO_BASE)
    report = analysis.diff(ctx, ctx.inputs.base_ref)  # the PR's setup: steps run first, with no token
    base = report.diff.base_sha if report.diff else sha
    chosen = scope.scope(report, scope.changed_lines(ctx.root, base, sha), command.widen)
    wanted = [b for b in chosen.breaks if replies.selected(b, command)]
    what = "every break in the files it changed" if command.widen else "the breaks it added, on the lines it changed"
    ctx.log(f"/gb-fix fix: this pull request's scope is {what}: {len(wanted)} to verify, {len(chosen.left)} left alone")
    for brk in wanted:
        ctx.log(f"/gb-fix fix: to verify: {brk.gb_id or brk.gb_type} {brk.file}:{brk.line} ({brk.fingerprint})")
    for left in chosen.left:
        brk = left.brk
        ctx.log(f"/gb-fix fix: left alone: {brk.gb_id or brk.gb_type} {brk.file}:{brk.line}: {left.reason}")
    return report, scope.Scope(tuple(wanted), chosen.left)


def _fix_run(ctx: Context, command: Command, sha: str) -> Any:
    report, chosen = _scoped(ctx, command, sha)
    if not chosen.breaks:
        return api.FixRun(report, ())
    options = api.FixOptions(  # LibCST: imported only when a fix is asked for
        apply=True,
        fingerprints=chosen.fingerprints,
        mode=ctx.settings.mode,
        jobs=ctx.settings.jobs,
        progress=ctx.log,
    )
    return api.fix(ctx.root, ctx.settings.config, options, report)


def fix(ctx: Context, event: IssueCommentEvent, command: Command) -> int:
    if ctx.inputs.token:
        raise GbbotError('/gb-fix fix runs the PR\'s code: give this stage no token (token: "")')
    if command.kind is not Kind.FIX:
        return ExitCode.OK
    sha = pinned_sha(ctx)
    if git.head_sha(ctx.root) != sha:
        raise GbbotError(f"/gb-fix fix: the checkout is not the pinned commit {sha} (check out head-sha)")
    out = ctx.root / ARTIFACT_DIR
    shutil.rmtree(out, ignore_errors=True)
    run = _fix_run(ctx, command, sha)
    texts = [(p, _at(ctx.root, sha, p), (ctx.root / p).read_text(encoding="utf-8")) for p in run.written]
    out.mkdir(parents=True, exist_ok=True)
    (out / PATCH_FILE).write_text(patchcheck.render_texts(texts), encoding="utf-8")
    api.write_report(run.report, out / REPORT_FILE)
    ctx.log(f"/gb-fix fix: {len(run.written)} file(s) patched: {', '.join(run.written) or 'none'}; see {ARTIFACT_DIR}/")
    return ExitCode.OK


def _at(root: Path, sha: str, path: str) -> str:
    return git.run(root, "show", f"{sha}:{path}")[1].decode("utf-8")


# --- stage 3: push (write token, no PR code) --------------------------------------------------------


@dataclass(frozen=True)
class Artifact:
    patch: bytes
    report: Report


def read_artifact(ctx: Context) -> Artifact | str:
    """The fix job's patch and report, read as untrusted data: bounded, then checked."""
    where = ctx.root / ARTIFACT_DIR
    patch_path, report_path = where / PATCH_FILE, where / REPORT_FILE
    if not patch_path.is_file() or patch_path.is_symlink() or not report_path.is_file():
        return "the fix job left no patch (see its log in the workflow run)"
    with patch_path.open("rb") as stream:
        data = stream.read(patchcheck.PATCH_MAX_BYTES + 1)
    try:
        report = api.load_untrusted_report(report_path)
    except GbbotError as exc:
        return f"the fix job's report is not valid: {exc}"
    return Artifact(data, report)


@dataclass(frozen=True)
class Answer:
    """What the reply says: the patch (gbbot's own, made of the fixes it re-derived and kept) and
    the lines of what was pushed, not pushed and not attempted."""

    here: Thread
    patch: str
    said: replies.Sections

    def with_patch(self, why: str, reaction: str) -> int:
        self.here.react(reaction)
        self.here.reply(replies.patch_comment(why, self.patch, replace(self.said, fixed_title="In the patch")))
        return ExitCode.OK


def answer(here: Thread, artifact: Artifact, command: Command, chosen: scope.Scope, found: Kept) -> Answer:
    report = artifact.report
    done = {r.fingerprint for r in found.fixes} | {d.fingerprint for d in found.dropped}
    said = replies.Sections(
        fix_commit.fixed_lines(found.fixes, report),
        fix_commit.dropped_lines(found.dropped, report),
        replies.remaining_lines(report, done, command, chosen),
        replies.not_attempted_lines(command, chosen),
    )
    return Answer(here, patchcheck.render(found.patches), said)


def nothing_verified(here: Thread, artifact: Artifact, command: Command, chosen: scope.Scope) -> int:
    """The fix job verified no fix: nothing was the command's to fix (a second `/gb-fix` after the
    first was pushed), or no fix for what was is verified."""
    report = artifact.report
    said = replies.Sections(
        remaining=replies.remaining_lines(report, (), command, chosen),
        not_attempted=replies.not_attempted_lines(command, chosen),
    )
    if replies.in_scope(command, chosen):
        here.react(gh.CONFUSED)
        here.reply(replies.nothing_to_fix(said))
    else:
        here.ctx.log("/gb-fix: nothing left to fix")
        here.react(gh.THUMBS_UP)
        here.reply(replies.nothing_left(said, command))
    return ExitCode.OK


def refused(
    here: Thread, artifact: Artifact, command: Command, chosen: scope.Scope, refusal: fix_commit.Refusal
) -> int:
    """No fix commit: one line when the patch as a whole is refused; each fix with its own reason
    when every fix was, one by one."""
    dropped = refusal.dropped if isinstance(refusal, fix_commit.NotRederived) else ()
    if not dropped:
        return here.refuse(refused_patch(refusal.reason))
    here.ctx.log(f"/gb-fix: refused: {refused_patch(refusal.reason)}")
    here.react(gh.CONFUSED)
    said = replies.Sections(
        dropped=fix_commit.dropped_lines(dropped, artifact.report),
        not_attempted=replies.not_attempted_lines(command, chosen),
    )
    here.reply(replies.refused_fixes(refused_patch("no verified fix in it can be pushed"), said))
    return ExitCode.OK


def posted_instead(command: Command, pull: pushing.PullHead) -> tuple[str, str] | None:
    """Why the verified patch is posted rather than pushed, with the reaction; None: it is pushed."""
    if command.dry_run:
        return "dry run: the verified patch, not pushed.", gh.ROCKET
    if pull.from_fork and not pull.maintainer_can_modify:
        return "this fork's PR does not allow edits from maintainers, so nothing was pushed.", gh.CONFUSED
    return None


def refused_patch(reason: str) -> str:
    return f"the fix job's patch is refused: {reason}"


def push(ctx: Context, event: IssueCommentEvent, command: Command) -> int:
    if command.kind is not Kind.FIX:
        return ExitCode.OK
    here = thread(ctx, event)
    sha = pinned_sha(ctx)
    if not here.allowed():  # the authorize job said yes; ask again, the role may have changed since
        return here.refuse(not_permitted(ctx, event))
    pull = here.pull()
    if pull.sha != sha:
        return here.refuse(pushing.Moved(sha, pull.sha).reason + MOVED)
    if fix_commit.stops_at(ctx.root, sha):
        return here.refuse(fix_commit.STOPS)
    artifact = read_artifact(ctx)
    if isinstance(artifact, str):
        return here.refuse(artifact)
    changed = here.changed()  # a fix only where the PR changed a line, as review suggestions are
    chosen = scope.scope(artifact.report, changed, command.widen)  # the reply's wording: the fix job's word
    if not artifact.patch:
        return nothing_verified(here, artifact, command, chosen)
    paths = patchcheck.paths_of(artifact.patch)
    if isinstance(paths, patchcheck.Refused):
        return here.refuse(refused_patch(paths.reason))
    source, config = Pinned(ctx.root, sha), fix_commit.config_paths(ctx.inputs.config)
    found = fix_commit.verify(source, artifact.report, paths, config, artifact.patch, changed, command.widen)
    if isinstance(found, fix_commit.Refusal):
        return refused(here, artifact, command, chosen, found)
    instead = posted_instead(command, pull)
    if instead:  # the patch is checked all the same; no commit is made
        return answer(here, artifact, command, chosen, found).with_patch(*instead)
    made = fix_commit.commit_verified(source, found, artifact.report)
    return pushed(ctx, here, sha, made, answer(here, artifact, command, chosen, made))


def pushed(ctx: Context, here: Thread, sha: str, made: fix_commit.Committed, said: Answer) -> int:
    """Push the commit while the PR's head is still the pinned commit; the patch when git refuses."""
    token, number = ctx.inputs.token, here.event.number
    done = pushing.push_if_head_is(ctx.root, here.repo, number, sha, made.commit, token, ctx.retries, ctx.log)
    if isinstance(done, pushing.PushRefused):
        ctx.log(f"/gb-fix: the push was refused: {done.said}")
        return said.with_patch(f"{done.reason}, so here is the patch.", gh.CONFUSED)
    if not isinstance(done, pushing.Pushed):  # the command's commit is no longer the head
        return here.refuse(done.reason + MOVED)
    write_outputs(ctx.env.output, {"fix-commit": made.commit})
    here.react(gh.ROCKET)
    url = pushing.commit_url(ctx.env.server_url, ctx.env.repository, done.head, made.commit)
    here.reply(replies.pushed(url, made.commit, said.said))
    for line in said.said.dropped:
        ctx.log(f"/gb-fix: not pushed: {line}")
    ctx.log(f"/gb-fix: pushed {made.commit} to {done.head.ref}")
    return ExitCode.OK
