"""What a step leaves behind: the SARIF file, the step's outputs, the job summary, the fallback's
annotations, and its exit code."""

from __future__ import annotations

from pathlib import Path

from gbbot import api
from gbbot.action.context import Context
from gbbot.action.workflow import write_outputs, write_step_summary
from gbbot.api import Policy
from gbbot.core import counts as counts_
from gbbot.core import limits
from gbbot.core.errors import ExitCode
from gbbot.core.model import Report
from gbbot.publish.content import Content, fitted, title_for
from gbbot.publish.fallback import annotate
from gbbot.publish.sink import Published
from gbbot.render import sarif
from gbbot.render.escape import md_code


def content(ctx: Context, report: Report, run_url: str | None) -> Content:
    artifact = md_code(ctx.inputs.artifact_name)
    where = f"[this workflow run]({run_url})" if run_url else "this workflow run"
    pointer = f"📄 The full report is the {artifact} artifact of {where}."
    return Content(title=title_for(ctx.inputs.header), pointer=pointer)


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


def finish(ctx: Context, report: Report, policy: Policy, text: Content, published: Published | None) -> None:
    """SARIF, outputs, job summary, and the fallback's annotations."""
    write_outputs(ctx.env.output, _step_outputs(ctx, report, policy, published))
    notice = published.fallback.summary + "\n" if published and published.fallback else ""
    room = limits.STEP_SUMMARY_MAX_BYTES - len(notice.encode("utf-8"))
    write_step_summary(ctx.env.step_summary, notice + fitted(report, text, room, lambda t: len(t.encode("utf-8"))))
    if published and published.fallback:
        annotate(published.fallback)


def exit_code(report: Report, policy: Policy, published: Published | None) -> int:
    if published and published.problems:
        return ExitCode.USAGE  # publishing failed for another reason than permission: say so
    return policy.verdict(report).exit_code
