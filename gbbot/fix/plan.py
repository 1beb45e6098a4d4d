"""Which breaks get a candidate patch, a scaffold, advice or a skip — and the candidates. Pure:
files come in through a reader, library sources through a lookup."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from gbbot.classify import normalise_code
from gbbot.fix import advice, engine, scaffold
from gbbot.fix.patch import FilePatch
from gbbot.fix.recipes import variants
from gbbot.fix.recipes.base import BreakSite, Recipe
from gbbot.fix.result import FixResult, FixStatus
from gbbot.model import GraphBreak, Origin, Report
from gbbot.source import source_map


class Unpatchable(Exception):
    """The file a break points at cannot be patched (outside the repository, unreadable)."""


FileReader = Callable[[str], str]  # repo-relative path → text, or Unpatchable


@dataclass(frozen=True)
class Candidate:
    brk: GraphBreak
    recipe: type[Recipe]
    patch: FilePatch


@dataclass(frozen=True)
class Planned:
    """A fixable break, the entrypoints it appeared in, and its candidates in preference order."""

    brk: GraphBreak
    entrypoints: tuple[str, ...]
    candidates: tuple[Candidate, ...]


def found_breaks(report: Report) -> list[tuple[GraphBreak, tuple[str, ...]]]:
    """Each fingerprint once, with every entrypoint it appeared in, in the report's impact order."""
    seen: dict[str, tuple[GraphBreak, list[str]]] = {}
    for entrypoint in report.entrypoints:
        for brk in entrypoint.breaks:
            seen.setdefault(brk.fingerprint, (brk, []))[1].append(entrypoint.name)
    return [(brk, tuple(names)) for brk, names in seen.values()]


def selected(brk: GraphBreak, only: Sequence[str], fingerprints: Sequence[str]) -> bool:
    """--only GB0059 / --only print, --break FINGERPRINT; nothing given selects everything."""
    wanted = {o.upper() for o in only}
    by_kind = not only or (brk.gb_id or "").upper() in wanted or (brk.fix or "").upper() in wanted
    return by_kind and (not fingerprints or brk.fingerprint in fingerprints)


def _skip(brk: GraphBreak, reason: str) -> FixResult:
    return FixResult(brk.fingerprint, FixStatus.SKIPPED, brk.file, brk.line, recipe=brk.fix, reason=reason)


def _stale(brk: GraphBreak, text: str) -> str | None:
    """Why the file no longer has the reported code at the reported place, or None."""
    where = source_map(text)
    if brk.code and normalise_code(where.line(brk.line)) != normalise_code(brk.code):
        return f"{brk.file}:{brk.line} no longer reads {brk.code.strip()!r}: the file changed since the report"
    if where.scopes and where.qualname(brk.line, brk.function) != brk.function:
        return f"{brk.file}:{brk.line} is no longer in {brk.function}: the file changed since the report"
    return None


def candidates(brk: GraphBreak, text: str) -> tuple[tuple[Candidate, ...], tuple[str, ...]]:
    """Every variant of the break's recipe that rewrites the code at its line, and why the others
    do not (SourceError when the file does not parse)."""
    found, why_not = [], []
    for recipe in variants(brk.fix):
        outcome = engine.apply(text, [engine.Request(brk.fingerprint, recipe, BreakSite(brk.line))])
        if outcome.applied:
            found.append(Candidate(brk, recipe, FilePatch(brk.file, text, outcome.after)))
        why_not += [why for _, why in outcome.missed]
    return tuple(found), tuple(why_not)


def plan_break(
    brk: GraphBreak, entrypoints: tuple[str, ...], read: FileReader, lookup: scaffold.SourceLookup
) -> Planned | FixResult:
    if brk.origin is Origin.THIRD_PARTY:
        return scaffold.scaffold(brk, lookup)
    if brk.origin is Origin.TORCH:
        return advice.advise(brk, "the break is inside torch itself; the options below are the documented ones")
    if not variants(brk.fix):
        return advice.advise(brk, "no mechanical fix for this kind of break")
    try:
        text = read(brk.file)
    except Unpatchable as exc:
        return _skip(brk, str(exc))
    stale = _stale(brk, text)
    if stale:
        return _skip(brk, stale)
    try:
        found, why_not = candidates(brk, text)
    except engine.SourceError as exc:
        return _skip(brk, f"{brk.file} does not parse ({exc}); nothing in it is patched")
    if not found:
        return advice.advise(brk, "; ".join(dict.fromkeys(why_not)))
    return Planned(brk, entrypoints, found)


def plan(
    found: Iterable[tuple[GraphBreak, tuple[str, ...]]], read: FileReader, lookup: scaffold.SourceLookup
) -> tuple[list[Planned], list[FixResult]]:
    """Candidates for the fixable breaks; a result for every other counted break."""
    planned: list[Planned] = []
    results: list[FixResult] = []
    for brk, entrypoints in found:
        if brk.ignored:
            continue
        outcome = plan_break(brk, entrypoints, read, lookup)
        (planned if isinstance(outcome, Planned) else results).append(outcome)
    return planned, results


def combine(chosen: Sequence[Candidate], read: FileReader) -> tuple[list[FilePatch], list[tuple[str, str]]]:
    """One patch per file with every chosen fix in it; fixes that collide are left out, named."""
    by_file: dict[str, list[Candidate]] = {}
    for candidate in chosen:
        by_file.setdefault(candidate.brk.file, []).append(candidate)
    patches: list[FilePatch] = []
    missed: list[tuple[str, str]] = []
    for path, group in by_file.items():
        text = read(path)
        requests = [engine.Request(c.brk.fingerprint, c.recipe, BreakSite(c.brk.line)) for c in group]
        outcome = engine.apply(text, requests)
        missed.extend(outcome.missed)
        if outcome.applied:
            patches.append(FilePatch(path, text, outcome.after))
    return patches, missed
