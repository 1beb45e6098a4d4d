"""What a step leaves behind: the SARIF file, the step's outputs, the job summary, the fallback's
annotations, and its exit code."""

from __future__ import annotations

import re
from pathlib import Path

from gbbot import api
from gbbot.action.context import Context
from gbbot.action.workflow import REPOSITORY, SERVER, write_outputs, write_step_summary
from gbbot.api import Policy
from gbbot.core import counts as counts_
from gbbot.core import limits
from gbbot.core.errors import ExitCode
from gbbot.core.model import Report
from gbbot.publish.content import Texts, fitted, title_for
from gbbot.publish.fallback import annotate
from gbbot.publish.sink import Published
from gbbot.render import sarif
from gbbot.render.escape import md_code
from gbbot.render.markdown import Options, SourceLinks

# A workflow that runs this action's `/gb-fix` stages: the repository answers `/gb-fix` comments.
GB_FIX_STAGE = re.compile(r"^\s*gb-fix:\s*['\"]?authorize\b", re.MULTILINE)


def answers_gb_fix(workspace: Path) -> bool:
    """Whether a workflow of the checked-out repository runs the `/gb-fix` authorize stage."""
    found = sorted((workspace / ".github" / "workflows").glob("*.y*ml"))
    return any(GB_FIX_STAGE.search(_read(f)) for f in found[:MAX_WORKFLOWS])


MAX_WORKFLOWS = 200  # more files than any repository keeps there: the rest is not read


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return ""


def source_links(ctx: Context, head_sha: str | None) -> SourceLinks | None:
    """Links to lines at the PR's head commit, when the server and repository look like GitHub's."""
    env = ctx.env
    if not head_sha or not SERVER.match(env.server_url) or not REPOSITORY.match(env.repository):
        return None
    try:
        return SourceLinks(f"{env.server_url}/{env.repository}", head_sha)
    except ValueError:
        return None


def content(ctx: Context, report: Report, run_url: str | None, head_sha: str | None = None) -> Options:
    where = f"[this workflow run]({run_url})" if run_url else "this workflow run"
    artifact = md_code(ctx.inputs.artifact_name)  # only a workflow that uploads it names it
    pointer = f"📄 The full report is the {artifact} artifact of {where}." if ctx.inputs.artifact_name else ""
    return Options(
        title=title_for(ctx.inputs.header),
        pointer=pointer,
        links=source_links(ctx, head_sha),
        gb_fix=answers_gb_fix(ctx.env.workspace),
    )


def counts(report: Report) -> dict[str, str]:
    c = counts_.counts(report)
    return {
        "new-breaks": str(counts_.distinct(api.new_breaks(report))),
        "fixed-breaks": str(c.fixed or 0),
        "hidden-breaks": str(c.hidden or 0),
        "revealed-breaks": str(c.revealed or 0),
        "total-breaks": str(c.distinct),
        "occurrences": str(c.occurrences),
        "not-clean-entrypoints": ",".join(c.not_clean),
    }


def write_sarif(ctx: Context, report: Report, policy: Policy) -> Path | None:
    if ctx.inputs.sarif_path is None:
        return None
    path = ctx.path(ctx.inputs.sarif_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(sarif.render(report, policy), encoding="utf-8")
    return path


def _step_outputs(ctx: Context, report: Report, policy: Policy, published: Published | None) -> dict[str, str]:
    sarif_path = write_sarif(ctx, report, policy)
    posted_comment = published.comment if published else None
    posted_check = published.check_run if published else None
    return {
        **counts(report),
        "report-path": str(ctx.report_path),
        "sarif-path": str(sarif_path or ""),
        "conclusion": policy.verdict(report).conclusion,
        "comment-url": (posted_comment.url or "") if posted_comment else "",
        "check-run-url": posted_check.url if posted_check else "",
    }


def finish(ctx: Context, texts: Texts, policy: Policy, text: Options, published: Published | None) -> None:
    """SARIF, outputs, job summary (the check run's text when it fits: rendered once), and the
    fallback's annotations."""
    report = texts.report
    write_outputs(ctx.env.output, _step_outputs(ctx, report, policy, published))
    notice = published.fallback.summary + "\n" if published and published.fallback else ""
    room = limits.STEP_SUMMARY_MAX_BYTES - len(notice.encode("utf-8"))
    write_step_summary(ctx.env.step_summary, notice + fitted(texts, text, room, lambda t: len(t.encode("utf-8"))))
    if published and published.fallback:
        annotate(published.fallback)


def exit_code(report: Report, policy: Policy, published: Published | None) -> int:
    if published and published.problems:
        return ExitCode.USAGE  # publishing failed for another reason than permission: say so
    return policy.verdict(report).exit_code
