"""What the fix commit must hold, derived in the job that may push from the pinned source alone:
each verified fix the report claims is re-derived with its named recipe (a pure LibCST transform
of the file's text, nothing of the PR's is run), and the fixes are combined per file as
`gbbot fix --apply` combines them. Pure: sources come in through a reader."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace

from gbbot.core.fixes import FixResult, verified_only
from gbbot.core.limits import REDERIVED_FIXES_MAX
from gbbot.core.model import Report
from gbbot.deliver import rederive
from gbbot.deliver.patchcheck import Refused
from gbbot.deliver.sources import SourceReader
from gbbot.fix import plan
from gbbot.fix.patch import FilePatch


@dataclass(frozen=True)
class Expected:
    patches: tuple[FilePatch, ...]
    fixes: tuple[FixResult, ...]  # gbbot's own records of the fixes, rebuilt from the recipes


# What gbbot says of a fix it re-derived: its own words, never the summary the artifact carries
# (that summary is text from the job that ran the PR's code, and went into commit messages).
VERIFIED_THERE = "verification ran in the job that ran the PR's code; re-derived here by gbbot's recipe"

Changed = Mapping[str, AbstractSet[int]]  # path → the lines the PR added or changed


def claimed(report: Report, paths: Sequence[str]) -> list[FixResult]:
    """The verified fixes the report claims for the files the patch edits."""
    return [r for r in verified_only(report.fixes or ()) if r.file in paths]


def _candidate(result: FixResult, report: Report, read: SourceReader) -> plan.Candidate | None:
    brk = next(b for b in report.breaks if b.fingerprint == result.fingerprint)
    found, _ = plan.candidates(brk, read(brk.file), read)
    return next((c for c in found if c.recipe.variant == result.variant), None)


def off_the_change(fixes: Sequence[FixResult], changed: Changed) -> FixResult | None:
    """The first fix whose break is not on a line the PR changed (as review suggestions are)."""
    return next((r for r in fixes if r.line not in changed.get(r.file, ())), None)


def own_words(result: FixResult) -> FixResult:
    """`result` saying what gbbot itself knows of it: the recipe's title, where, and where it ran."""
    return replace(result, summary=f"{result.title or result.recipe} ({VERIFIED_THERE})")


def expected(
    report: Report, paths: Sequence[str], read: SourceReader, changed: Changed | None = None
) -> Expected | Refused:
    """The patches gbbot's recipes make of the pinned source for the fixes the report claims on
    `paths`, or why the claim is not believed. `changed`: only fixes of breaks on these lines
    (None: any line)."""
    fixes = claimed(report, paths)
    if not fixes:
        return Refused("no verified fix in the report names the files the patch edits")
    outside = off_the_change(fixes, changed) if changed is not None else None
    if outside is not None:
        return Refused(f"the fix at {outside.file}:{outside.line} is not on a line the pull request changed")
    narrowed = replace(report, fixes=tuple(fixes))
    done = rederive.rederive(narrowed, read, REDERIVED_FIXES_MAX)
    if done.dropped:
        first = done.dropped[0]
        return Refused(f"the fix for break {first.fingerprint} is not believed: {first.reason}")
    kept = done.report.fixes or ()
    candidates = [c for c in (_candidate(r, done.report, read) for r in kept) if c is not None]
    patches, missed = plan.combine(candidates, read)
    if missed or len(candidates) != len(kept):
        return Refused("the verified fixes do not combine on the pinned source")
    return Expected(tuple(patches), tuple(own_words(r) for r in kept))
