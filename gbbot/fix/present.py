"""Fix results for `gbbot fix` and the action's log: a terminal block per result, a line per
round, the totals. Pure. (The markdown under each break is gbbot/render/fixes.py; the review
suggestions are gbbot/publish/review.py: both read the report's `fixes`.)"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from gbbot.core.fixes import Counts, FixResult, FixStatus
from gbbot.core.measured import phrase
from gbbot.core.model import GraphBreak
from gbbot.fix.pipeline import BYSTANDERS, FixRun, named
from gbbot.fix.rounds import Round


def terminal_text(result: FixResult, doc_url: str | None = None) -> str:
    """Plain text for `gbbot fix`: a result line, then the diff, scaffold or options."""
    recipe = " ".join(filter(None, [result.recipe, f"({result.variant})" if result.variant else None]))
    detail = result.summary if result.status is FixStatus.VERIFIED else result.reason
    status = result.status.value + (f" in round {result.round}" if result.round > 1 else "")
    lines = [f"# {result.file}:{result.line} {recipe} — {status}: {detail}".replace("  ", " ")]
    lines += [f"#   earlier variant dropped: {t}" for t in result.tried]
    if result.status is FixStatus.VERIFIED:
        lines += [f"#   {phrase(result.measured)}"] if result.measured else []
        lines += [f"#   {result.description}", (result.diff or "").rstrip("\n")]
        if result.reason:  # a lever that leaves the break: what the break itself needs
            lines += [
                f"#   the break itself: {result.reason}",
                *_options(result),
                *([result.scaffold.rstrip("\n")] if result.scaffold else []),
            ]
    elif result.status is FixStatus.SCAFFOLD:
        lines.append((result.scaffold or "").rstrip("\n"))
    elif result.status is FixStatus.ADVICE:
        lines += _options(result)
    stays = result.status is not FixStatus.VERIFIED or result.reason  # unfixed, or a lever's break
    lines += [f"#   documentation: {doc_url}"] if doc_url and stays else []
    return "\n".join(lines)


def _options(result: FixResult) -> list[str]:
    return [f"#   - {a.text}" + (f" <{a.url}>" if a.url else "") for a in result.advice]


def _breaks(breaks: Sequence[GraphBreak]) -> str:
    return f"{len(breaks)} break{'s' * (len(breaks) != 1)} ({named(breaks)})"


def round_lines(rounds: Sequence[Round], left: Sequence[GraphBreak]) -> list[str]:
    """A line per round: what it worked on (what earlier rounds revealed) and how many it fixed;
    then what the last round revealed with no round left to fix it."""
    lines = []
    for r in rounds:
        worked_on = f"revealed {_breaks(r.revealed)}" if r.revealed else f"{r.breaks} break{'s' * (r.breaks != 1)}"
        done = f"nested_graph_breaks kept for {r.fixed} (the breaks stay)" if r.lever else f"fixed {r.fixed}"
        lines.append(f"round {r.number}: {worked_on}, {done}")
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
    lines = [f"{len(run.results)} break{'s' * (len(run.results) != 1)}: {found}"]
    if len(run.rounds) > 1 or run.left:
        lines += round_lines(run.rounds, run.left)
    if run.after is not None:
        lines.append(f"{totals_line(*run.totals)} (a final run of the patched copy)")
    if run.overall is not None:
        lines.append(f"every round's patches together: {run.overall.summary}")
    if run.bystanders is not None and run.bystanders.ok:
        lines.append(f"{BYSTANDERS}: {run.bystanders.summary}")
    if run.measured is not None:
        lines.append(f"every verified patch together, {phrase(run.measured)}")
    lines += run.notes
    lines += [f"patches sharing files or entrypoints, together: {v.summary}" for v in run.joint]
    if run.written:
        lines.append(f"wrote {', '.join(run.written)}")
    elif counts.get("verified") and not run.notes:
        lines.append("run `gbbot fix --apply` to write the verified patches")
    return [f"gbbot fix: {line}" for line in lines]
