"""Fix results (the report's `fixes`) as the trusted markdown lines under their break in the PR
comment, the check run and the job summary. Pure.

Results may come from an untrusted report (workflow_run): every string that is not gbbot's own
constant text goes through the escaping helpers or into a fenced block.
"""

from __future__ import annotations

from gbbot.core.fixes import FixResult, FixStatus
from gbbot.core.measured import phrase
from gbbot.core.model import Report
from gbbot.render.escape import md_code, md_code_block, md_link, md_text

HEADINGS = {
    FixStatus.VERIFIED: "✅ **Verified fix**",
    FixStatus.DROPPED: "❌ **Candidate fix dropped**",
    FixStatus.SCAFFOLD: "🧩 **Scaffold, not a verified fix**",
    FixStatus.ADVICE: "💡 **No mechanical fix**",
    FixStatus.SKIPPED: "⏭️ **Fix skipped**",
}


def recipe_note(result: FixResult) -> str:
    return f" ({md_code(result.recipe)} recipe)" if result.recipe else ""


def markdown_lines(result: FixResult) -> tuple[str, ...]:
    """One break's fix result: heading, what it does, the verified diff or the scaffold or the
    options."""
    head = f"{HEADINGS[result.status]}{recipe_note(result)}"
    if result.status is FixStatus.VERIFIED:
        lines = [f"{head}: {md_text(result.summary)}.", "", md_text(result.description)]
        lines += ["", f"⏱️ {md_text(phrase(result.measured))}."] if result.measured else []
        lines += ["", md_code_block(result.diff or "", "diff")]
        if result.reason:  # a lever that leaves the break: what the break itself needs
            lines += ["", f"The break itself: {md_text(result.reason)}."] + [
                _option(a.text, a.url) for a in result.advice
            ]
            lines += ["", md_code_block(result.scaffold, "python")] if result.scaffold else []
    elif result.status is FixStatus.SCAFFOLD:
        lines = [f"{head}: {md_text(result.reason)}.", "", md_text(result.description)]
        lines += ["", md_code_block(result.scaffold or "", "python")]
    elif result.status is FixStatus.ADVICE:
        lines = [f"{head}: {md_text(result.reason)}."] + [_option(a.text, a.url) for a in result.advice]
    else:
        lines = [f"{head}: {md_text(result.reason)}."]
    lines += [f"- earlier variant dropped: {md_text(t)}" for t in result.tried]
    return ("", *lines)


def _option(text: str, url: str | None) -> str:
    return f"- {md_text(text)} ({md_link('docs', url)})" if url else f"- {md_text(text)}"


def lines_by_break(report: Report) -> dict[str, tuple[str, ...]]:
    """Fingerprint → the lines to add under that break."""
    return {r.fingerprint: markdown_lines(r) for r in report.fixes or ()}
