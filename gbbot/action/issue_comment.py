"""`issue_comment`: `/gb-fix`, a maintainer's request for a verified fix commit, in three stages
that the workflow runs as three jobs, so that the PR's code never runs next to a write token:

- `authorize` (write token, runs no PR code): is this a command, may its author push; reacts 👀;
  pins the PR's head commit (outputs `allowed`, `head-sha`, `head-ref`, `pr-number`, `args`);
- `fix` (no token): in a checkout of the pinned commit, runs `gbbot fix` for the selected breaks
  and writes the verified patch and its report to `gbbot-fix/` (uploaded as an artifact);
- `push` (write token, runs no PR code): believes nothing of the artifact that it cannot re-derive
  from the pinned source with gbbot's own recipes, commits it on the pinned commit, re-checks the
  head and pushes without force — or posts the patch when it may not or must not push.

Every stage re-reads the command from the event (the same payload in every job), so only the
pinned commit travels between jobs."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gbbot import api
from gbbot.action.context import Context
from gbbot.action.event import SHA, IssueCommentEvent
from gbbot.action.workflow import write_outputs
from gbbot.analysis import report as report_
from gbbot.core.config import CONFIG_NAME
from gbbot.core.errors import ExitCode, GbbotError
from gbbot.core.fixes import Counts
from gbbot.deliver import loop, patchcheck
from gbbot.deliver.pinned import Pinned
from gbbot.edges import git
from gbbot.fix import commit as committing
from gbbot.fix.patch import FilePatch
from gbbot.gbfix import conversation as gh
from gbbot.gbfix import permission, replies
from gbbot.gbfix.command import Command, Kind, parse

if TYPE_CHECKING:
    from gbbot.deliver.expected import Expected
from gbbot.core.model import Mode, Report

ARTIFACT_DIR = "gbbot-fix"
PATCH_FILE, REPORT_FILE = "fix.patch", "report.json"
SETUP = (
    "issue_comment: nothing to do without the gb-fix input. To answer `/gb-fix` comments, copy "
    ".github/workflows/gbbot-fix.yml: it runs this action three times, with gb-fix: authorize, fix and push."
)
IDENTITY = {"GIT_AUTHOR_NAME": "gbbot", "GIT_COMMITTER_NAME": "gbbot"}  # emails: git.COMMITTER's


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

    def pull(self) -> gh.PullHead:
        return gh.pull_head(self.repo, self.event.number, self.ctx.retries, self.ctx.log)


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


def _fix_run(ctx: Context, command: Command) -> Any:
    from gbbot.fix.pipeline import FixOptions, FixRun  # LibCST: only when a fix is asked for

    config = ctx.config()
    mode = Mode(ctx.inputs.mode) if ctx.inputs.mode else None
    options = FixOptions(
        apply=True,
        only=(command.gb_id,) if command.gb_id else (),
        fingerprints=(command.fingerprint,) if command.fingerprint else (),
        mode=mode,
        jobs=ctx.inputs.jobs,
        progress=ctx.log,
    )
    if not command.path:
        return api.fix(ctx.root, config, options)
    found = api.check(ctx.root, config, api.CheckOptions(mode=mode, jobs=ctx.inputs.jobs))
    in_file = tuple(sorted({b.fingerprint for b in found.breaks if b.file == command.path and not b.ignored}))
    if not in_file:
        return FixRun(found, ())
    return api.fix(ctx.root, config, replace(options, fingerprints=in_file), found)


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
    run = _fix_run(ctx, command)
    patches = [FilePatch(p, _at(ctx.root, sha, p), (ctx.root / p).read_text(encoding="utf-8")) for p in run.written]
    out.mkdir(parents=True, exist_ok=True)
    (out / PATCH_FILE).write_text(patchcheck.render(patches), encoding="utf-8")
    report_.write(run.report, out / REPORT_FILE)
    ctx.log(f"/gb-fix fix: {len(run.written)} file(s) patched: {', '.join(run.written) or 'none'}; see {ARTIFACT_DIR}/")
    return ExitCode.OK


def _at(root: Path, sha: str, path: str) -> str:
    return git.plumbing(root, "show", f"{sha}:{path}")[1].decode("utf-8")


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
        report = report_.load_untrusted(report_path)
    except GbbotError as exc:
        return f"the fix job's report is not valid: {exc}"
    return Artifact(data, report)


def config_paths(ctx: Context) -> tuple[str, ...]:
    given = ctx.inputs.config
    return (CONFIG_NAME, *([given.as_posix()] if given and not given.is_absolute() else []))


def believe(ctx: Context, artifact: Artifact, pinned: Pinned) -> Expected | str:
    """What the commit will hold, re-derived from the pinned source, or why the patch is refused."""
    from gbbot.deliver.expected import claimed, expected  # LibCST: only when there is a patch

    paths = patchcheck.paths_of(artifact.patch)
    if isinstance(paths, patchcheck.Refused):
        return paths.reason
    named = {r.file for r in claimed(artifact.report, paths)}
    why = patchcheck.protected(paths, config_paths(ctx), named)
    if why:
        return why
    found = expected(artifact.report, paths, pinned.read)
    if isinstance(found, patchcheck.Refused):
        return found.reason
    if patchcheck.render(found.patches).encode("utf-8") != artifact.patch:
        return "the patch differs from what gbbot's recipes make of the pinned source"
    return found


def commit_message(found: Expected, report: Report) -> str:
    ids = {b.fingerprint: b.gb_id or b.gb_type for b in report.breaks}
    before = Counts(sum(e.break_count for e in report.entrypoints), sum(e.graph_count for e in report.entrypoints))
    return committing.message(list(found.fixes), ids, before, None)


def push(ctx: Context, event: IssueCommentEvent, command: Command) -> int:
    if command.kind is not Kind.FIX:
        return ExitCode.OK
    here = thread(ctx, event)
    sha = pinned_sha(ctx)
    if not here.allowed():  # the authorize job said yes; ask again, the role may have changed since
        return here.refuse(not_permitted(ctx, event))
    pull = here.pull()
    if pull.sha != sha:
        return here.refuse(moved(sha, pull.sha))
    if loop.too_many(git.recent_commits(ctx.root, sha, loop.IN_A_ROW_MAX)):
        return here.refuse("the branch's last two commits are gbbot fix commits already; gbbot stops there")
    artifact = read_artifact(ctx)
    if isinstance(artifact, str):
        return here.refuse(artifact)
    remaining = lambda fixed: replies.remaining_lines(artifact.report, fixed, command)  # noqa: E731
    if not artifact.patch:
        here.react(gh.CONFUSED)
        here.reply(replies.nothing_to_fix(remaining(())))
        return ExitCode.OK
    pinned = Pinned(ctx.root, sha)
    found = believe(ctx, artifact, pinned)
    if isinstance(found, str):
        return here.refuse(f"the fix job's patch is refused: {found}")
    fixed = replies.fixed_lines(found.fixes, artifact.report)
    left = remaining({r.fingerprint for r in found.fixes})
    patch_text = artifact.patch.decode("utf-8")

    def post_patch(why: str, reaction: str) -> int:
        here.react(reaction)
        here.reply(replies.patch_comment(why, patch_text, fixed, left))
        return ExitCode.OK

    if command.dry_run:
        return post_patch("dry run: the verified patch, not pushed.", gh.ROCKET)
    if pull.from_fork and not pull.maintainer_can_modify:
        return post_patch("this fork's PR does not allow edits from maintainers, so nothing was pushed.", gh.CONFUSED)
    files = {p.path: (pinned.mode(p.path), p.after.encode("utf-8")) for p in found.patches}
    commit = git.commit_files(ctx.root, sha, files, commit_message(found, artifact.report), IDENTITY)
    now = here.pull()
    if now.sha != sha:  # the command's commit is no longer the head: a push would be refused or wrong
        return here.refuse(moved(sha, now.sha))
    refused = git.push(ctx.root, git.Remote(pull.clone_url, ctx.inputs.token), commit, pull.ref)
    if refused:
        ctx.log(f"/gb-fix: the push was refused: {refused}")
        return post_patch(f"the push to {pull.ref} was refused ({refused}), so here is the patch.", gh.CONFUSED)
    write_outputs(ctx.env.output, {"fix-commit": commit})
    here.react(gh.ROCKET)
    here.reply(replies.pushed(commit_url(ctx, pull, commit), commit, fixed, left))
    ctx.log(f"/gb-fix: pushed {commit} to {pull.ref}")
    return ExitCode.OK


def moved(pinned: str, now: str) -> str:
    return (
        f"the PR's head moved from {pinned[:7]} to {now[:7]} after the command, so nothing was pushed; "
        "comment /gb-fix again to fix the new head."
    )


def commit_url(ctx: Context, pull: gh.PullHead, commit: str) -> str:
    repository = pull.repo_full_name or ctx.env.repository
    return f"{ctx.env.server_url}/{repository}/commit/{commit}"
