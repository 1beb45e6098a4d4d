"""Verified fixes from a report that the publisher cannot trust (a fork's workflow run wrote it),
believed only when gbbot's own recipe, run here on the PR's code, produces exactly the same hunks.

Recipes are pure LibCST transforms of (source text, break line), so the publisher can repeat them
without running anything of the PR's. What survives is rebuilt from the recipe's output, not from
the report's text: the diff, title and description shown are gbbot's. Pure: sources come in
through a reader."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from gbbot.core.fixes import FixResult, verified_only
from gbbot.core.model import GraphBreak, Report
from gbbot.deliver.sources import SourceReader, Unreadable
from gbbot.fix import engine, plan


@dataclass(frozen=True)
class Dropped:
    fingerprint: str
    reason: str


@dataclass(frozen=True)
class Rederived:
    """The report with only the fixes gbbot re-derived, and the verified fixes it did not believe."""

    report: Report
    dropped: tuple[Dropped, ...]


def _derived(result: FixResult, brk: GraphBreak, text: str) -> FixResult | str:
    """`result` rebuilt from what the named recipe variant makes of `text`, or why not."""
    try:
        found, _ = plan.candidates(brk, text)
    except engine.SourceError as exc:
        return f"{brk.file} does not parse at the PR's head ({exc})"
    match = next((c for c in found if c.recipe.variant == result.variant), None)
    if match is None:
        return f"the {result.recipe} recipe makes no {result.variant} patch at {brk.file}:{brk.line}"
    if match.patch.hunks != result.hunks:
        return "its hunks are not what the recipe makes of the PR's code"
    recipe, patch = match.recipe, match.patch
    return replace(result, title=recipe.title, description=recipe.description, diff=patch.diff, hunks=patch.hunks)


def check(result: FixResult, breaks: dict[str, GraphBreak], read: SourceReader) -> FixResult | Dropped:
    """One verified fix: kept (rebuilt from the recipe's output) or dropped with the reason."""
    brk = breaks.get(result.fingerprint)
    if brk is None:
        return Dropped(result.fingerprint, "no break in the report has its fingerprint")
    if result.recipe != brk.fix or (result.file, result.line) != (brk.file, brk.line):
        return Dropped(result.fingerprint, "its recipe or place is not the break's")
    try:
        text = read(brk.file)
    except Unreadable as exc:
        return Dropped(result.fingerprint, str(exc))
    derived = _derived(result, brk, text)
    return derived if isinstance(derived, FixResult) else Dropped(result.fingerprint, derived)


def rederive(report: Report, read: SourceReader, limit: int) -> Rederived:
    """Every verified fix of `report` checked against the PR's code (at most `limit` of them; the
    rest are dropped). Other fix results (advice, scaffolds, skips) are not shown: they, too, are
    only the report's word."""
    breaks = {b.fingerprint: b for b in report.breaks if not b.ignored}
    kept: list[FixResult] = []
    dropped: list[Dropped] = []
    for n, result in enumerate(verified_only(report.fixes or ())):
        outcome = check(result, breaks, read) if n < limit else Dropped(result.fingerprint, "over the limit")
        (kept if isinstance(outcome, FixResult) else dropped).append(outcome)
    return Rederived(replace(report, fixes=tuple(kept) or None), tuple(dropped))


def dropped_note(dropped: Sequence[Dropped]) -> str | None:
    """The line the comment and the summary carry when suggested fixes were not believed."""
    if not dropped:
        return None
    n = len(dropped)
    fixes = "suggested fix from the report was" if n == 1 else "suggested fixes from the report were"
    they = "it" if n == 1 else "they"
    return f"⚠️ {n} {fixes} not posted: {they} did not match what gbbot's recipes produce on the PR's code."
