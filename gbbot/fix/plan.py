"""Which breaks get a candidate patch, a scaffold, advice or a skip — and the candidates. Pure:
files come in through a reader, library sources through a lookup."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import libcst as cst

from gbbot.analysis.classify import normalise_code
from gbbot.analysis.source import source_map
from gbbot.core.fixes import FixResult, FixStatus
from gbbot.core.model import Frame, GraphBreak, Origin, Report
from gbbot.fix import advice, engine, scaffold
from gbbot.fix.patch import FilePatch
from gbbot.fix.recipes import choices, variants
from gbbot.fix.recipes.base import BreakSite, Recipe
from gbbot.fix.recipes.compile_site import compile_sites


class Unpatchable(Exception):
    """The file a break points at cannot be patched (outside the repository, unreadable)."""


FileReader = Callable[[str], str]  # repo-relative path → text, or Unpatchable


@dataclass(frozen=True)
class Candidate:
    """A patch for `brk`; `site` is where the recipe applies when that is not the break's own line
    (a setting turned on where the repository calls `torch.compile`, in `patch.path`)."""

    brk: GraphBreak
    recipe: type[Recipe]
    patch: FilePatch
    site: BreakSite | None = None

    def request(self) -> engine.Request:
        return engine.Request(self.brk.fingerprint, self.recipe, self.site or BreakSite(self.brk.line))


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


def candidates(
    brk: GraphBreak, text: str, read: FileReader | None = None
) -> tuple[tuple[Candidate, ...], tuple[str, ...]]:
    """Every recipe that rewrites the code at the break's line (or, for a compile-site recipe, a
    `torch.compile` call of the code that breaks), in preference order, and why the others do not
    (SourceError when the break's file does not parse). Two recipes writing the same patch count once."""
    found: list[Candidate] = []
    why_not: list[str] = []
    for recipe in choices(brk.fix):
        if getattr(recipe, "at_compile_site", False):
            at_compile = _at_compile_site(brk, recipe, read or (lambda _path: text))
            if at_compile is None:
                why_not.append(f"no `torch.compile` call of {brk.function} found to turn on {recipe.variant} at")
            found += [at_compile] if at_compile else []
            continue
        outcome = engine.apply(text, [engine.Request(brk.fingerprint, recipe, BreakSite(brk.line))])
        if outcome.applied:
            found.append(Candidate(brk, recipe, FilePatch(brk.file, text, outcome.after)))
        if recipe in variants(brk.fix):  # a shape recipe that does not fit is no news
            why_not += [why for _, why in outcome.missed]
    unique = {(c.patch.path, c.patch.after): c for c in reversed(found)}
    return tuple(c for c in found if unique[(c.patch.path, c.patch.after)] is c), tuple(why_not)


def _repo_frames(brk: GraphBreak, read: FileReader) -> list[tuple[Frame, str]]:
    """The frames of the break's stack in repository files, outermost first, with their text."""
    found = []
    for frame in brk.user_stack or (Frame(brk.file, brk.line, brk.function),):
        if frame.file.startswith(("<", "torch/")):
            continue
        try:
            found.append((frame, read(frame.file)))
        except Unpatchable:
            continue
    return found


def _compile_lines(frames: list[tuple[Frame, str]]) -> list[tuple[str, str, int]]:
    """Where to look for the `torch.compile` that traced the break, best first: the line of a frame
    that calls it (`torch.compile(net)(x)`), then compile calls in those files naming a function or
    class on the stack (`fast = torch.compile(body)`)."""
    names = frozenset(
        part
        for frame, text in frames
        for part in source_map(text).qualname(frame.line, frame.function).split(".")
        if not part.startswith("<")
    )
    lines = [(frame.file, text, frame.line) for frame, text in frames]
    for path, text in dict((frame.file, text) for frame, text in frames).items():
        try:
            lines += [(path, text, line) for line in compile_sites(text, names)]
        except cst.ParserSyntaxError:
            continue
    return lines


def _at_compile_site(brk: GraphBreak, recipe: type[Recipe], read: FileReader) -> Candidate | None:
    """The recipe applied at the `torch.compile` call that compiles the code that breaks."""
    for path, text, line in dict.fromkeys(_compile_lines(_repo_frames(brk, read))):
        try:
            outcome = engine.apply(text, [engine.Request(brk.fingerprint, recipe, BreakSite(line))])
        except engine.SourceError:
            continue
        if outcome.applied:
            return Candidate(brk, recipe, FilePatch(path, text, outcome.after), BreakSite(line))
    return None


class _NoPatch(Exception):
    """The break's own file cannot be patched: why."""


def _call_site(brk: GraphBreak, read: FileReader) -> tuple[tuple[Candidate, ...], tuple[str, ...]]:
    """Candidates at the repository line of the break (for a break inside a library: the line that
    calls into it)."""
    try:
        text = read(brk.file)
    except Unpatchable as exc:
        raise _NoPatch(str(exc)) from None
    stale = _stale(brk, text)
    if stale:
        raise _NoPatch(stale)
    try:
        return candidates(brk, text, read)
    except engine.SourceError as exc:
        raise _NoPatch(f"{brk.file} does not parse ({exc}); nothing in it is patched") from None


def plan_break(
    brk: GraphBreak, entrypoints: tuple[str, ...], read: FileReader, lookup: scaffold.SourceLookup
) -> Planned | FixResult:
    if brk.origin is Origin.TORCH:
        return advice.advise(brk, "the break is inside torch itself; the options below are the documented ones")
    try:
        found, why_not = _call_site(brk, read)
    except _NoPatch as exc:
        found, why_not, unpatchable = (), (), str(exc)
    else:
        unpatchable = None
    if found:
        return Planned(brk, entrypoints, found)
    if brk.origin is Origin.THIRD_PARTY:  # no patch at the call line: a scaffold, if a sound one exists
        return scaffold.scaffold(brk, lookup)
    if not variants(brk.fix):
        return advice.advise(brk, "no mechanical fix for this kind of break")
    if unpatchable:
        return _skip(brk, unpatchable)
    return advice.advise(brk, "; ".join(dict.fromkeys(why_not)))


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
        by_file.setdefault(candidate.patch.path, []).append(candidate)
    patches: list[FilePatch] = []
    missed: list[tuple[str, str]] = []
    for path, group in by_file.items():
        text = read(path)
        requests = [c.request() for c in group]
        outcome = engine.apply(text, requests)
        missed.extend(outcome.missed)
        if outcome.applied:
            patches.append(FilePatch(path, text, outcome.after))
    return patches, missed
