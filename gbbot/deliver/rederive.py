"""Verified fixes from a report that the publisher cannot trust (a fork's workflow run wrote it),
believed only when gbbot's own recipe, run here on the PR's code, produces exactly the same hunks.

Recipes are pure LibCST transforms of (source text, break line), so the publisher can repeat them
without running anything of the PR's. What survives is rebuilt from the recipe's output, not from
the report's text: the diff, title and description shown are gbbot's. Pure: sources come in
through a reader."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from gbbot.core.config import CONFIG_NAME
from gbbot.core.fixes import FixResult, verified_only
from gbbot.core.model import GraphBreak, Report
from gbbot.deliver.patchcheck import Dropped
from gbbot.deliver.sources import SourceReader, Unreadable
from gbbot.fix import plan, scaffold
from gbbot.fix.compiles import UNKNOWN, ConfigFile, compiles_of
from gbbot.recipes import choices
from gbbot.recipes.base import SourceError


@dataclass(frozen=True)
class Rederived:
    """The report with only the fixes gbbot re-derived, and the verified fixes it did not believe."""

    report: Report
    dropped: tuple[Dropped, ...]


def planning_reader(read: SourceReader) -> plan.FileReader:
    """The PR's files as planning reads them: a file that cannot be had is one it cannot patch."""

    def read_for_plan(path: str) -> str:
        try:
            return read(path)
        except Unreadable as exc:
            raise plan.Unpatchable(str(exc)) from None

    return read_for_plan


def _no_library(_path: str) -> str | None:
    return None


def _config(read: plan.FileReader) -> ConfigFile | None:
    """The configuration at the pinned commit, which says how each entrypoint compiles."""
    try:
        return ConfigFile(CONFIG_NAME, read(CONFIG_NAME))
    except plan.Unpatchable:
        return None


def _library_setting(result: FixResult, brk: GraphBreak) -> bool:
    """Is `result` the Dynamo setting a break inside a library gets at the user's compile?"""
    return any((r.id, r.variant) == (result.recipe, result.variant) for r in plan.library_setting_recipes(brk))


def derive(
    result: FixResult,
    brk: GraphBreak,
    read: SourceReader,
    paths: Sequence[str] = (),
    lookup: scaffold.SourceLookup = _no_library,
) -> plan.Candidate | str:
    """The candidate the named recipe variant makes of the PR's code for `brk` — at the break's
    line, or at the compile sites found in `paths` and the files the fix claims (for a break inside
    a library, its setting there; `lookup`: the library's source, where it can be read) — or why
    none."""
    reader = planning_reader(read)
    # where a setting goes (a `model:` entry's: in its options), asked only of a fix that edits another file
    compiles = compiles_of(result.entrypoints, _config(reader)) if set(result.paths) - {brk.file} else UNKNOWN
    try:
        text = reader(brk.file)
        if result.recipe == "nested":  # the lever for a break in a callee
            made = plan.lever(brk, reader, (*paths, *result.paths), lookup, compiles)
            found: tuple[plan.Candidate, ...] = (made,) if made else ()
        elif _library_setting(result, brk):
            setting = plan.library_setting(brk, result.variant, reader, (*paths, *result.paths), lookup, compiles)
            if isinstance(setting, str):
                return setting
            found = (setting,)
        else:
            found, _ = plan.candidates(brk, text, reader, (*paths, *result.paths), compiles)
    except plan.Unpatchable as exc:
        return str(exc)
    except SourceError as exc:
        return f"{brk.file} does not parse at the PR's head ({exc})"
    match = next((c for c in found if (c.recipe.id, c.recipe.variant) == (result.recipe, result.variant)), None)
    if match is None:
        return f"the {result.recipe} recipe makes no {result.variant} patch for {brk.file}:{brk.line}"
    if match.hunks != result.hunks:
        return "its hunks are not what the recipe makes of the PR's code"
    return match


def check(
    result: FixResult, breaks: dict[str, GraphBreak], read: SourceReader, paths: Sequence[str] = ()
) -> FixResult | Dropped:
    """One verified fix: kept (rebuilt from the recipe's output) or dropped with the reason."""
    brk = breaks.get(result.fingerprint)
    if brk is None and result.round > 1:
        why = f"round {result.round} planned it on the text earlier fixes left; not re-derived from the pinned source"
        return Dropped(result.fingerprint, why)
    if brk is None:
        return Dropped(result.fingerprint, "no break in the report has its fingerprint")
    known = {r.id for r in choices(brk.fix)} | {r.id for r in plan.library_setting_recipes(brk)}
    known |= {"nested"} if plan.in_callee(brk) else set()
    if result.recipe not in known or (result.file, result.line) != (brk.file, brk.line):
        return Dropped(result.fingerprint, "its recipe or place is not the break's")
    derived = derive(result, brk, read, paths)
    if isinstance(derived, str):
        return Dropped(result.fingerprint, derived)
    recipe = derived.recipe
    return replace(result, title=recipe.title, description=recipe.description, diff=derived.diff, hunks=derived.hunks)


def rederive(report: Report, read: SourceReader, limit: int, paths: Sequence[str] = ()) -> Rederived:
    """Every verified fix of `report` checked against the PR's code (at most `limit` of them; the
    rest are dropped); `paths`: the PR's Python files, where compile sites are searched (besides
    the break's stack and the files a fix claims). Other fix results (advice, scaffolds, skips) are
    not shown: they, too, are only the report's word."""
    breaks = {b.fingerprint: b for b in report.breaks if not b.ignored}
    kept: list[FixResult] = []
    dropped: list[Dropped] = []
    for n, result in enumerate(verified_only(report.fixes or ())):
        outcome = check(result, breaks, read, paths) if n < limit else Dropped(result.fingerprint, "over the limit")
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
