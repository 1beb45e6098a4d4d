"""`gbbot action`: what happens in a workflow step, by event.

- `pull_request`: run the diff against the PR's base (no token is used until every entrypoint
  has finished; their environment is scrubbed of tokens by `run`), write report.json, SARIF, the
  job summary and the outputs, then publish — or fall back to annotations when the token is
  read-only (a fork's PR).
- `workflow_run`: the privileged half of the fork-safe pattern. Never runs PR code: reads the report
  artifact the workflow downloaded, validates it as untrusted input, finds the PR by the run's
  head SHA (from GitHub's payload, not from the report) and publishes.
- anything else (push, schedule, …): a check of the workspace, written out, nothing published.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from github import Github, GithubException

from gbbot import limits
from gbbot import report as report_
from gbbot.action import event as event_
from gbbot.action.inputs import Inputs
from gbbot.action.publisher import DEFAULT_POLICY, Published, Target, annotate, github_client, publish, say
from gbbot.action.runner import RunnerEnv, write_outputs, write_step_summary
from gbbot.config import CONFIG_NAME, load_config
from gbbot.errors import ExitCode, GbbotError, ReportError
from gbbot.fix import present
from gbbot.model import Report
from gbbot.publish import checkrun, retry
from gbbot.publish.comment import header_key
from gbbot.publish.content import Content, fitted, title_for
from gbbot.render import sarif
from gbbot.render.escape import md_code

Connect = Callable[[str, str], Github]  # (token, api_url) → client


@dataclass(frozen=True)
class Context:
    inputs: Inputs
    env: RunnerEnv
    connect: Connect = github_client
    policy: retry.RetryPolicy = DEFAULT_POLICY
    log: retry.Log = say

    def path(self, path: Path) -> Path:
        return path if path.is_absolute() else self.env.workspace / path


# --- the report --------------------------------------------------------------------------------


def gbbot_args(ctx: Context, command: str, report_path: Path) -> list[str]:
    args = [command, "--json", str(report_path), "--jobs", str(ctx.inputs.jobs), "--root", str(ctx.env.workspace)]
    if ctx.inputs.config:
        args += ["--config", str(ctx.path(ctx.inputs.config))]
    if ctx.inputs.mode:
        args += ["--mode", ctx.inputs.mode]
    return args


def run_gbbot(ctx: Context, args: list[str], report_path: Path, keep: bool = False) -> Report:
    """`gbbot diff` / `check` / `fix` as the CLI runs them; the report is what they wrote."""
    from gbbot.main import main  # the CLI imports this module's command: import late

    before = report_path.stat().st_mtime_ns if keep and report_path.exists() else None
    if not keep:
        report_path.unlink(missing_ok=True)
    code = main(args)
    if not report_path.exists() or (before is not None and report_path.stat().st_mtime_ns == before):
        raise GbbotError(f"gbbot {args[0]} exited {code} without writing a report; see the lines above")
    return report_.load(report_path)


def with_fixes(ctx: Context, report: Report, report_path: Path) -> Report:
    """`gbbot fix` on the new breaks: verified patches go into the report (extra.fixes), to be
    shown under each break and suggested in a review. A failure here costs the fixes, not the run."""
    new = sorted({b.fingerprint for b in report_.new_breaks(report)})
    if not new:
        return report
    args = [*gbbot_args(ctx, "fix", report_path), "--report", str(report_path), "--quiet"]
    args += [arg for fingerprint in new for arg in ("--break", fingerprint)]
    try:
        return run_gbbot(ctx, args, report_path, keep=True)
    except GbbotError as exc:
        ctx.log(f"no fix suggestions: {exc}")
        return report_.load(report_path) if report_path.exists() else report


def read_untrusted(path: Path) -> Report:
    """A report made by another job (possibly from a fork's code): bounded, then schema-checked."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ReportError(f"{path}: cannot read the report artifact ({exc.strerror})") from None
    if size > limits.REPORT_FILE_MAX_BYTES:
        raise ReportError(f"{path}: {size} bytes, over the {limits.REPORT_FILE_MAX_BYTES} bytes a report may have")
    return report_.load(path)


def fail_on(ctx: Context, config_path: Path | None) -> str:
    """The input, else the config's (when there is a config to read), else `new`."""
    if ctx.inputs.fail_on:
        return ctx.inputs.fail_on
    path = ctx.path(ctx.inputs.config) if ctx.inputs.config else config_path
    return load_config(path).fail_on if path is not None and path.exists() else "new"


# --- what the step leaves behind ---------------------------------------------------------------


def content(ctx: Context, report: Report, run_url: str | None) -> Content:
    artifact = md_code(ctx.inputs.artifact_name)
    where = f"[this workflow run]({run_url})" if run_url else "this workflow run"
    pointer = f"📄 The full report is the {artifact} artifact of {where}."
    extra = present.markdown_extra(present.results_of(report))  # verified fixes under their break
    return Content(title=title_for(ctx.inputs.header), pointer=pointer, extra=extra)


def counts(report: Report) -> dict[str, str]:
    return {
        "new-breaks": str(len({b.fingerprint for b in report_.new_breaks(report)})),
        "fixed-breaks": str(len(report.diff.fixed) if report.diff else 0),
        "total-breaks": str(len({b.fingerprint for b in report_.counted(report)})),
    }


def write_sarif(ctx: Context, report: Report, policy: str) -> Path | None:
    if ctx.inputs.sarif_path is None:
        return None
    path = ctx.path(ctx.inputs.sarif_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(sarif.render(report, policy), encoding="utf-8")
    return path


def finish(ctx: Context, report: Report, report_path: Path, policy: str, text: Content,
           published: Published | None) -> None:
    """SARIF, outputs, job summary, and the fallback's annotations."""
    sarif_path = write_sarif(ctx, report, policy)
    posted_comment = published.comment if published else None
    posted_check = published.check_run if published else None
    write_outputs(ctx.env.output, {
        **counts(report),
        "report-path": str(report_path),
        "sarif-path": str(sarif_path or ""),
        "conclusion": checkrun.conclusion(report, policy),
        "comment-url": (posted_comment.url or "") if posted_comment else "",
        "check-run-url": posted_check.url if posted_check else "",
    })
    notice = published.fallback.summary + "\n" if published and published.fallback else ""
    room = limits.STEP_SUMMARY_MAX_BYTES - len(notice.encode("utf-8"))
    write_step_summary(ctx.env.step_summary, notice + fitted(report, text, room, lambda t: len(t.encode("utf-8"))))
    if published and published.fallback:
        annotate(published.fallback)


def exit_code(report: Report, policy: str, published: Published | None) -> int:
    if published and published.problems:
        return ExitCode.USAGE  # publishing failed for another reason than permission: say so
    return ExitCode.POLICY if checkrun.conclusion(report, policy) == "failure" else ExitCode.OK


# --- publishing --------------------------------------------------------------------------------


def target(ctx: Context, number: int, head_sha: str, policy: str, run_url: str | None) -> Target:
    header = ctx.inputs.header
    return Target(
        repository=ctx.env.repository,
        pull_number=number,
        head_sha=head_sha,
        header=header,
        check_name=ctx.inputs.check_name + (f" ({header})" if header else ""),
        external_id=f"{header_key(header)}:{ctx.env.run_id}:{ctx.env.run_attempt}",
        details_url=run_url,
        comment_mode=ctx.inputs.comment_mode,
        fail_on=policy,
        bot_login=ctx.inputs.bot_login,
    )


def publish_or_fallback(ctx: Context, report: Report, text: Content, where: Target) -> Published:
    if not ctx.inputs.token:
        ctx.log("no token given: not publishing; the breaks are shown as annotations instead")
        from gbbot.publish.fallback import fallback

        return Published(fallback=fallback(report, where.fail_on, "no token was given to the action"))
    return publish(ctx.connect(ctx.inputs.token, ctx.env.api_url), report, text, where, ctx.policy, ctx.log)


def on_pull_request(ctx: Context, event: event_.PullRequestEvent) -> int:
    report_path = ctx.path(ctx.inputs.report_path)
    base = ctx.inputs.base_ref or event.base_sha
    args = [*gbbot_args(ctx, "diff", report_path), "--base", base]
    if ctx.inputs.cache_dir is not None:
        args += ["--cache", str(ctx.inputs.cache_dir)]
    report = run_gbbot(ctx, args, report_path)
    if ctx.inputs.fix:
        report = with_fixes(ctx, report, report_path)
    policy = fail_on(ctx, ctx.env.workspace / CONFIG_NAME)
    text = content(ctx, report, ctx.env.run_url)
    where = target(ctx, event.number, event.head_sha, policy, ctx.env.run_url)
    published = publish_or_fallback(ctx, report, text, where)
    finish(ctx, report, report_path, policy, text, published)
    return exit_code(report, policy, published)


def find_pull(ctx: Context, client: Github, run: event_.WorkflowRunEvent) -> Any | None:
    """The open PR whose head is the run's commit: from the payload's list (same-repository PRs),
    else the commit's PRs, else the open PRs from the run's head branch (a fork's PR)."""
    repo = client.get_repo(ctx.env.repository)  # lazy: no request

    def matches(pull: Any) -> bool:
        return pull.state == "open" and pull.head.sha == run.head_sha

    for number in run.pull_numbers:
        pull = repo.get_pull(number)
        if retry.call(lambda p=pull: matches(p), f"PR #{number}", ctx.policy, ctx.log):
            return pull
    found = retry.call(lambda: [p for p in repo.get_commit(run.head_sha).get_pulls() if matches(p)],
                       "PRs of the run's commit", ctx.policy, ctx.log)
    if not found and run.head_owner and run.head_branch:
        head = f"{run.head_owner}:{run.head_branch}"
        found = retry.call(lambda: [p for p in repo.get_pulls(state="open", head=head) if matches(p)],
                           f"open PRs from {head}", ctx.policy, ctx.log)
    return found[0] if found else None


def on_workflow_run(ctx: Context, run: event_.WorkflowRunEvent) -> int:
    report_path = ctx.path(ctx.inputs.report_path)
    report = read_untrusted(report_path)
    policy = fail_on(ctx, ctx.env.workspace / CONFIG_NAME)
    run_url = run.html_url if run.html_url.startswith("https://") and " " not in run.html_url else None
    text = content(ctx, report, run_url)
    published = None
    if ctx.inputs.token:
        client = ctx.connect(ctx.inputs.token, ctx.env.api_url)
        try:
            pull = find_pull(ctx, client, run)
        except GithubException as exc:
            raise retry.PublishError(f"cannot look up the run's pull request: {retry.describe(exc)}") from exc
        if pull is None:
            ctx.log(f"no open pull request has head {run.head_sha[:7]}: nothing to publish on")
        else:
            where = target(ctx, pull.number, run.head_sha, policy, run_url)
            published = publish(client, report, text, where, ctx.policy, ctx.log)
    else:
        ctx.log("no token given: nothing can be published from workflow_run")
    finish(ctx, report, report_path, policy, text, published)
    return ExitCode.USAGE if published and published.problems else ExitCode.OK


def on_other(ctx: Context, event: event_.OtherEvent) -> int:
    report_path = ctx.path(ctx.inputs.report_path)
    ctx.log(f"event {event.name}: checking the workspace; there is no pull request to publish on")
    report = run_gbbot(ctx, gbbot_args(ctx, "check", report_path), report_path)
    policy = fail_on(ctx, ctx.env.workspace / CONFIG_NAME)
    finish(ctx, report, report_path, policy, content(ctx, report, ctx.env.run_url), None)
    return exit_code(report, policy, None)


def run(ctx: Context) -> int:
    found = event_.load(ctx.env.event_name, ctx.env.event_path)
    if isinstance(found, event_.WorkflowRunEvent):
        return on_workflow_run(ctx, found)
    if isinstance(found, event_.PullRequestEvent):
        return on_pull_request(ctx, found)
    return on_other(ctx, found)

