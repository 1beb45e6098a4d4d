"""What the fix commit must hold, derived in the job that may push from the pinned source alone:
each verified fix the report claims is re-derived with its named recipe (a pure LibCST transform
of the file's text, nothing of the PR's is run), and the fixes are combined per file as
`gbbot fix --apply` combines them. Pure: sources come in through a reader."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace

from gbbot.core.fixes import FixResult, verified_only
from gbbot.core.limits import REDERIVED_FIXES_MAX
from gbbot.core.model import Report
from gbbot.deliver import patchcheck, rederive
from gbbot.deliver.patchcheck import Dropped, Refused
from gbbot.deliver.sources import SourceReader
from gbbot.fix import plan
from gbbot.fix.patch import FilePatch


@dataclass(frozen=True)
class Expected:
    patches: tuple[FilePatch, ...]
    fixes: tuple[FixResult, ...]  # gbbot's own records of the fixes, rebuilt from the recipes
    dropped: tuple[Dropped, ...] = ()  # claimed fixes left out, each with why


# What gbbot says of a fix it re-derived: its own words, never the summary the artifact carries
# (that summary is text from the job that ran the PR's code, and went into commit messages).
VERIFIED_THERE = "verification ran in the job that ran the PR's code; re-derived here by gbbot's recipe"

Changed = Mapping[str, AbstractSet[int]]  # path → the lines the PR added or changed


def claimed(report: Report, paths: Sequence[str]) -> list[FixResult]:
    """The verified fixes the report claims for the files the patch edits."""
    wanted = set(paths)
    return [r for r in verified_only(report.fixes or ()) if wanted & set(r.paths)]


def _candidate(result: FixResult, report: Report, read: SourceReader, listing: Sequence[str]) -> plan.Candidate | None:
    brk = next(b for b in report.breaks if b.fingerprint == result.fingerprint)
    derived = rederive.derive(result, brk, read, listing)
    return derived if isinstance(derived, plan.Candidate) else None


def off_the_change(fixes: Sequence[FixResult], changed: Changed) -> list[FixResult]:
    """The fixes whose break is not on a line the PR changed (as review suggestions are)."""
    return [r for r in fixes if r.line not in changed.get(r.file, ())]


def own_words(result: FixResult) -> FixResult:
    """`result` saying what gbbot itself knows of it: the recipe's title, where, and where it ran."""
    return replace(result, summary=f"{result.title or result.recipe} ({VERIFIED_THERE})")


def _chunks(patch: str) -> dict[str, str]:
    """The canonical patch (`patchcheck.render`) cut into its files."""
    found: dict[str, str] = {}
    for chunk in re.split(r"(?m)^(?=diff --git a/)", patch):
        match = patchcheck.DIFF_GIT.match(chunk)
        if match:
            found[match["a"]] = chunk
    return found


def _disagreeing(patches: Sequence[FilePatch], given: bytes, spared: set[str]) -> set[str]:
    """Files whose derived patch is not the one that came with the fixes (files in `spared` are
    expected to differ: a fix on them was dropped)."""
    mine = _chunks(patchcheck.render(patches))
    theirs = _chunks(given.decode("utf-8", errors="replace"))
    return {path for path in set(mine) | set(theirs) if path not in spared and mine.get(path) != theirs.get(path)}


def expected(
    report: Report,
    paths: Sequence[str],
    read: SourceReader,
    listing: Sequence[str] = (),
    patch: bytes | None = None,
    changed: Changed | None = None,
) -> Expected | Refused:
    """The patches gbbot's recipes make of the pinned source for the fixes the report claims on
    `paths`: every fix that is re-derived, and each one that is not, with why. `listing`: the
    pinned commit's Python files (where compile sites are searched); `patch`: the patch the fixes
    came with, which each file's derived patch must equal, unless a fix on that file was dropped;
    `changed`: the lines the PR changed, the only ones a fix's break may be on (None: any line).
    Refused when no claimed fix is left."""
    fixes = claimed(report, paths)
    if not fixes:
        return Refused("no verified fix in the report names the files the patch edits")
    outside = off_the_change(fixes, changed) if changed is not None else []
    believed = [r for r in fixes if r not in outside]
    done = rederive.rederive(replace(report, fixes=tuple(believed)), read, REDERIVED_FIXES_MAX, listing)
    off_change = "is not on a line the pull request changed"
    dropped = [Dropped(r.fingerprint, f"the fix at {r.file}:{r.line} {off_change}") for r in outside]
    dropped += list(done.dropped)
    kept = list(done.report.fixes or ())
    while kept:
        candidates = [_candidate(r, done.report, read, listing) for r in kept]
        patches, missed = plan.combine([c for c in candidates if c is not None], _pinned(read))
        out = {fingerprint for fingerprint, _ in missed}
        dropped += [Dropped(f, f"it does not combine with the other fixes ({why})") for f, why in missed]
        spared = {p for d in dropped for r in fixes if r.fingerprint == d.fingerprint for p in r.paths}
        wrong = _disagreeing(patches, patch, spared) if patch is not None else set()
        differs = "the patch differs from what gbbot's recipes make of the pinned source"
        off = [r for r in kept if r.fingerprint not in out and wrong & set(r.paths)]
        dropped += [Dropped(r.fingerprint, f"{differs} ({', '.join(sorted(wrong & set(r.paths)))})") for r in off]
        out |= {r.fingerprint for r in off}
        if not out:
            return Expected(tuple(patches), tuple(own_words(r) for r in kept), tuple(dropped))
        kept = [r for r in kept if r.fingerprint not in out]
    first = dropped[0]
    return Refused(f"the fix for break {first.fingerprint} is not believed: {first.reason}")


def _pinned(read: SourceReader) -> plan.FileReader:
    return rederive.planning_reader(read)
