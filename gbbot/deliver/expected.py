"""What the fix commit must hold, derived in the job that may push from the pinned source alone:
each verified fix the report claims is re-derived with its named recipe (a pure LibCST transform
of the file's text, nothing of the PR's is run) and judged on its own — re-derived, as the fix job
wrote it, allowed on the PR's branch — and the fixes kept are combined per file as `gbbot fix
--apply` combines them. Pure: sources come in through a reader."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from gbbot.core.fixes import FixResult, verified_only
from gbbot.core.limits import REDERIVED_FIXES_MAX
from gbbot.core.model import Report
from gbbot.deliver import patchcheck, rederive, scope
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

Changed = scope.Changed


def claimed(report: Report, paths: Sequence[str]) -> list[FixResult]:
    """The verified fixes the report claims for the files the patch edits."""
    wanted = set(paths)
    return [r for r in verified_only(report.fixes or ()) if wanted & set(r.paths)]


def _candidate(result: FixResult, report: Report, read: SourceReader, listing: Sequence[str]) -> plan.Candidate | None:
    brk = next(b for b in report.breaks if b.fingerprint == result.fingerprint)
    derived = rederive.derive(result, brk, read, listing)
    return derived if isinstance(derived, plan.Candidate) else None


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
    widen: bool = False,
) -> Expected | Refused:
    """The patches gbbot's recipes make of the pinned source for the fixes the report claims on
    `paths`: every fix that is re-derived and may be pushed, and each one that is not, with its
    own reason. `listing`: the pinned commit's Python files (where compile sites are searched);
    `patch`: the patch the fixes came with, which each file's share of every re-derived fix must
    equal (a file where one could not be re-derived is not compared); `changed`: the lines the PR
    changed (None: any line may be fixed), where a fix's break must be (`widen`: in whose files).
    Each fix stands alone: one that may not be pushed costs only itself, and the patches are
    combined per file from the kept fixes only. Refused when no claimed fix is left."""
    fixes = claimed(report, paths)
    if not fixes:
        return Refused("no verified fix in the report names the files the patch edits")
    done = rederive.rederive(replace(report, fixes=tuple(fixes)), read, REDERIVED_FIXES_MAX, listing)
    dropped = list(done.dropped)
    derived = list(done.report.fixes or ())
    if patch is not None:
        derived, differ = _as_given(derived, fixes, done.report, read, listing, patch)
        dropped += differ
    barred = {r.fingerprint: scope.not_pushable(r, changed, widen) for r in derived} if changed is not None else {}
    dropped += [Dropped(f, why) for f, why in barred.items() if why]
    kept = [r for r in derived if not barred.get(r.fingerprint)]
    patches, kept, collided = _combined(kept, done.report, read, listing)
    dropped += collided
    if not kept:
        return Refused(_none_left(dropped, fixes), tuple(dropped))
    return Expected(tuple(patches), tuple(own_words(r) for r in kept), tuple(dropped))


def _combined(
    fixes: Sequence[FixResult], report: Report, read: SourceReader, listing: Sequence[str]
) -> tuple[list[FilePatch], list[FixResult], list[Dropped]]:
    """One patch per file of `fixes`, the fixes in it, and those that collide, with why."""
    candidates = {r.fingerprint: _candidate(r, report, read, listing) for r in fixes}
    patches, missed = plan.combine([c for c in candidates.values() if c is not None], rederive.planning_reader(read))
    out = dict(missed)
    kept = [r for r in fixes if r.fingerprint not in out and candidates[r.fingerprint] is not None]
    said = [Dropped(f, f"it does not combine with the other fixes ({why})") for f, why in missed]
    return patches, kept, said


def _as_given(
    fixes: list[FixResult],
    claims: Sequence[FixResult],
    report: Report,
    read: SourceReader,
    listing: Sequence[str],
    patch: bytes,
) -> tuple[list[FixResult], list[Dropped]]:
    """The re-derived `fixes` whose files' patch is the one they came with, and the others, each
    with why. The comparison is with every re-derived fix combined, as the fix job combined them;
    a file that holds a claim gbbot could not re-derive is not compared, its share being unknown."""
    patches, _, collided = _combined(fixes, report, read, listing)
    made = {r.fingerprint for r in fixes} - {d.fingerprint for d in collided}
    spared = {p for r in claims if r.fingerprint not in made for p in r.paths}
    wrong = _disagreeing(patches, patch, spared)
    differs = "the patch differs from what gbbot's recipes make of the pinned source"
    off = [r for r in fixes if wrong & set(r.paths)]
    said = [Dropped(r.fingerprint, f"{differs} ({', '.join(sorted(wrong & set(r.paths)))})") for r in off]
    return [r for r in fixes if r not in off], said


def _none_left(dropped: Sequence[Dropped], fixes: Sequence[FixResult]) -> str:
    if len(fixes) == 1 and dropped:
        return f"the fix for break {dropped[0].fingerprint} is not pushed: {dropped[0].reason}"
    whys = "; ".join(f"{d.fingerprint}: {d.reason}" for d in dropped)
    return f"none of the {len(fixes)} verified fixes can be pushed ({whys})"
