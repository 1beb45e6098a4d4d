"""Fix results for people: markdown lines under each break (PR comment, check run, summary),
review comments with ```suggestion blocks, and terminal text. Pure.

Results may come from an untrusted report (workflow_run): every string that is not gbbot's own
constant text goes through the escaping helpers or into a fenced block.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

from gbbot.core.limits import REVIEW_COMMENTS_MAX
from gbbot.core.model import GraphBreak, Report
from gbbot.core.suggestion import Suggestion
from gbbot.fix.result import Counts, FixResult, FixStatus, from_extra
from gbbot.render.escape import md_code, md_code_block, md_link, md_text

if TYPE_CHECKING:
    from gbbot.fix.pipeline import FixRun
    from gbbot.fix.rounds import Round

HEADINGS = {
    FixStatus.VERIFIED: "✅ **Verified fix**",
    FixStatus.DROPPED: "❌ **Candidate fix dropped**",
    FixStatus.SCAFFOLD: "🧩 **Scaffold, not a verified fix**",
    FixStatus.ADVICE: "💡 **No mechanical fix**",
    FixStatus.SKIPPED: "⏭️ **Fix skipped**",
}


def results_of(report: Report) -> tuple[FixResult, ...]:
    """The fix results stored in a (validated) report."""
    return from_extra(report.extra)


def _recipe(result: FixResult) -> str:
    return f" ({md_code(result.recipe)} recipe)" if result.recipe else ""


def markdown_lines(result: FixResult) -> tuple[str, ...]:
    """Trusted markdown for one break's fix result: heading, what it does, the verified diff or
    the scaffold or the options."""
    head = f"{HEADINGS[result.status]}{_recipe(result)}"
    if result.status is FixStatus.VERIFIED:
        lines = [f"{head}: {md_text(result.summary)}.", "", md_text(result.description)]
        lines += ["", md_code_block(result.diff or "", "diff")]
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


def markdown_extra(results: Iterable[FixResult]) -> Callable[[GraphBreak], tuple[str, ...]]:
    """For `gbbot.render.markdown.Options.extra`: the lines to add under each break."""
    by_fingerprint = {r.fingerprint: r for r in results}

    def extra(brk: GraphBreak) -> tuple[str, ...]:
        found = by_fingerprint.get(brk.fingerprint)
        return markdown_lines(found) if found else ()

    return extra


# --- review suggestions ---------------------------------------------------------------------------


def suggestion_block(lines: Sequence[str]) -> str:
    """A ```suggestion fence longer than any backtick run inside; no lines = delete the range."""
    longest = max((len(run) for line in lines for run in re.findall(r"`{3,}", line)), default=2)
    fence = "`" * (longest + 1)
    inside = "".join(f"{line}\n" for line in lines)
    return f"{fence}suggestion\n{inside}{fence}"


def _inside_diff(result: FixResult, changed: Mapping[str, AbstractSet[int]]) -> bool:
    lines = [(h.path, n) for h in result.hunks for n in range(h.start_line, h.end_line + 1)]
    return bool(lines) and all(n in changed.get(path, ()) for path, n in lines)


def review_suggestions(
    results: Iterable[FixResult], changed: Mapping[str, AbstractSet[int]], limit: int = REVIEW_COMMENTS_MAX
) -> tuple[Suggestion, ...]:
    """Verified patches whose every replaced line is among the PR's added or changed lines, as
    review comments (at most `limit`). A patch is posted whole or not at all: half a patch could
    break the code. The rest stays in the PR comment."""
    out: list[Suggestion] = []
    for result in results:
        if result.status is not FixStatus.VERIFIED or not _inside_diff(result, changed):
            continue
        if len(out) + len(result.hunks) > limit:
            break
        note = f"gbbot verified fix{_recipe(result)}: {md_text(result.summary)}. {md_text(result.description)}"
        for hunk in result.hunks:
            body = f"{note}\n\n{suggestion_block(hunk.replacement)}"
            out.append(Suggestion(hunk.path, hunk.start_line, hunk.end_line, body))
    return tuple(out)


# --- terminal ------------------------------------------------------------------------------------


def terminal_text(result: FixResult, doc_url: str | None = None) -> str:
    """Plain text for `gbbot fix`: a result line, then the diff, scaffold or options."""
    recipe = " ".join(filter(None, [result.recipe, f"({result.variant})" if result.variant else None]))
    detail = result.summary if result.status is FixStatus.VERIFIED else result.reason
    status = result.status.value + (f" in round {result.round}" if result.round > 1 else "")
    lines = [f"# {result.file}:{result.line} {recipe} — {status}: {detail}".replace("  ", " ")]
    lines += [f"#   earlier variant dropped: {t}" for t in result.tried]
    if result.status is FixStatus.VERIFIED:
        lines += [f"#   {result.description}", (result.diff or "").rstrip("\n")]
    elif result.status is FixStatus.SCAFFOLD:
        lines.append((result.scaffold or "").rstrip("\n"))
    elif result.status is FixStatus.ADVICE:
        lines += [f"#   - {a.text}" + (f" <{a.url}>" if a.url else "") for a in result.advice]
    lines += [f"#   documentation: {doc_url}"] if doc_url and result.status is not FixStatus.VERIFIED else []
    return "\n".join(lines)


def _breaks(breaks: Sequence[GraphBreak]) -> str:
    named = ", ".join(f"{b.gb_id or b.gb_type} {b.fix or ''} at {b.file}:{b.line}".replace("  ", " ") for b in breaks)
    return f"{len(breaks)} break{'s' * (len(breaks) != 1)} ({named})"


def round_lines(rounds: Sequence[Round], left: Sequence[GraphBreak]) -> list[str]:
    """A line per round: what it worked on (what earlier rounds revealed) and how many it fixed;
    then what the last round revealed with no round left to fix it."""
    lines = []
    for r in rounds:
        worked_on = f"revealed {_breaks(r.revealed)}" if r.revealed else f"{r.breaks} break{'s' * (r.breaks != 1)}"
        lines.append(f"round {r.number}: {worked_on}, fixed {r.fixed}")
    if left:
        lines.append(f"round {len(rounds)} revealed {_breaks(left)}, not fixed: no round left (--rounds)")
    return lines


def totals_line(before: Counts, after: Counts) -> str:
    """Before any patch → after all of them, as a final run of the patched copy measured them."""
    return (
        f"breaks {before.breaks} → {after.breaks}, graphs {before.graphs} → {after.graphs}, "
        f"frames running eagerly {before.frames_skipped} → {after.frames_skipped}"
    )


def summary_lines(run: FixRun) -> list[str]:
    """What `fix` found, noted and wrote: the lines the CLI and the action print after a run."""
    counts = Counter(r.status.value for r in run.results)
    found = ", ".join(f"{n} {status}" for status, n in counts.items()) or "nothing to fix"
    lines = [f"{len(run.results)} breaks: {found}"]
    if len(run.rounds) > 1 or run.left:
        lines += round_lines(run.rounds, run.left)
    if run.after is not None:
        lines.append(f"{totals_line(*run.totals)} (a final run of the patched copy)")
    if run.overall is not None:
        lines.append(f"every round's patches together: {run.overall.summary}")
    lines += run.notes
    lines += [f"patches sharing files or entrypoints, together: {v.summary}" for v in run.joint]
    if run.written:
        lines.append(f"wrote {', '.join(run.written)}")
    elif counts.get("verified") and not run.notes:
        lines.append("run `gbbot fix --apply` to write the verified patches")
    return [f"gbbot fix: {line}" for line in lines]
