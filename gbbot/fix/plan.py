"""Which breaks get a candidate patch, a scaffold, advice or a skip — and the candidates. Pure:
files come in through a reader, library sources through a lookup."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from gbbot.analysis.classify import normalise_code
from gbbot.analysis.labels import ITEM_ID
from gbbot.analysis.source import source_map
from gbbot.core.fixes import FixResult, FixStatus, Hunk
from gbbot.core.model import Frame, FrameRef, GraphBreak, Origin, Report
from gbbot.fix import advice, config_edit, override, scaffold
from gbbot.fix.compiles import UNKNOWN, Compiles, ConfigFile, compiles_of, entry_patch, not_run, runs
from gbbot.fix.patch import FilePatch
from gbbot.fix.sites import CompileSite, Search, describe, search, unresolved_site
from gbbot.recipes import by_id, choices, engine, takes, variants
from gbbot.recipes.base import BreakSite, Recipe, SourceError, wrapped
from gbbot.recipes.branches import decides_branch
from gbbot.recipes.compile_site import NestedBreaks, SettingAtCall, at_call


class Unpatchable(Exception):
    """The file a break points at cannot be patched (outside the repository, unreadable)."""


FileReader = Callable[[str], str]  # repo-relative path → text, or Unpatchable
BRANCH_FED = (
    "the number decides a branch: capturing it (capture_scalar_outputs) would only move the break "
    "to the `if` (data-dependent branching), so the options for branches follow"
)


@dataclass(frozen=True)
class Candidate:
    """A patch for `brk`, one `FilePatch` per file it edits. `sites`: where the recipe applies when
    that is not the break's own line (a setting turned on at every `torch.compile` that compiles
    the break's frame, in as many files); empty: at the break's line. `setting`: a compile-site
    recipe the break-line recipe needs (a `torch._check` of an `.item()` traces only with
    `capture_scalar_outputs`): then the recipe applies at the break's line and `setting` at `sites`."""

    brk: GraphBreak
    recipe: type[Recipe]
    patches: tuple[FilePatch, ...]
    sites: tuple[CompileSite, ...] = ()
    setting: type[Recipe] | None = None
    at: CompileSite | None = None  # where the recipe applies when not at the break's line (an override's use)
    entries: tuple[str, ...] = ()  # `model:` entries whose `compile:` option gets the setting
    config: str | None = None  # the configuration file those options are in

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(p.path for p in self.patches)

    @property
    def diff(self) -> str:
        return "".join(p.diff for p in self.patches)

    @property
    def hunks(self) -> tuple[Hunk, ...]:
        return tuple(h for p in self.patches for h in p.hunks)

    def requests(self) -> list[tuple[str, engine.Request]]:
        """(file, request) for each place the recipe applies."""
        key = self.brk.fingerprint
        path, line = (self.at.path, self.at.line) if self.at else (self.brk.file, self.brk.line)
        at_line = [(path, engine.Request(key, self.recipe, BreakSite(line)))]
        if not self.sites:
            return at_line
        at_sites = self.setting or self.recipe
        sites = [(s.path, engine.Request(key, at_sites, BreakSite(s.line))) for s in self.sites]
        return [*at_line, *sites] if self.setting else sites

    def on(self, patches: tuple[FilePatch, ...]) -> Candidate:
        return replace(self, patches=patches)


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
    brk: GraphBreak, text: str, read: FileReader | None = None, paths: Sequence[str] = (), compiles: Compiles = UNKNOWN
) -> tuple[tuple[Candidate, ...], tuple[str, ...]]:
    """Every recipe that rewrites the code at the break's line (or, for a compile-site recipe, the
    `torch.compile` calls that compile the break's frame, searched in `paths`), in preference
    order, and why the others do not (SourceError when the break's file does not parse). Two
    recipes writing the same patch count once."""
    wrapped(text)  # SourceError when it does not parse
    found: list[Candidate] = []
    fed = brk.gb_id == ITEM_ID and decides_branch(text, brk.line)
    why_not: list[str] = [BRANCH_FED] if fed else []
    reader = _remembered(read or (lambda _path: text))
    family = recipe_family(brk, text)
    for chosen in choices(family):
        recipe = _for_break(chosen, brk)
        if recipe is None:
            continue
        if not takes(recipe.id, text, brk.line, brk.statement or brk.code):  # as the label: no promise to keep
            if recipe in variants(family):
                why_not.append(f"line {brk.line} is not a pattern the {recipe.id} recipe rewrites ({recipe.title})")
            continue
        if recipe.at_compile_site:
            if not recipe.matches(text, brk.line, brk.statement or brk.code):  # the variant's own matcher
                continue
            at_compile, why = _at_compile_site(brk, recipe, reader, paths, compiles)
            why_not += [why] if why else []
            found += [at_compile] if at_compile else []
            continue
        outcome = engine.apply(text, [engine.Request(brk.fingerprint, recipe, BreakSite(brk.line))])
        setting = getattr(recipe, "with_setting", None)
        if outcome.applied and setting is not None:
            with_setting, why = _with_setting(Candidate(brk, recipe, (), setting=setting), reader, paths, compiles)
            why_not += [why] if why else []
            found += [with_setting] if with_setting else []
        elif outcome.applied:
            found.append(Candidate(brk, recipe, (FilePatch(brk.file, text, outcome.after),)))
        if chosen in variants(family):  # a shape recipe that does not fit is no news
            why_not += [why for _, why in outcome.missed]
    unique = {_written(c): c for c in reversed(found)}
    return tuple(c for c in found if unique[_written(c)] is c), tuple(why_not)


def _for_break(recipe: type[Recipe], brk: GraphBreak) -> type[Recipe] | None:
    """A recipe made for the break's own call where it needs one (the logger method a logger
    setting ignores: the library's line for a break inside a library)."""
    for_code = getattr(recipe, "for_code", None)
    if for_code is None:
        return recipe
    return for_code(brk.library_site.code if brk.library_site else (brk.statement or brk.code))


def recipe_family(brk: GraphBreak, text: str) -> str | None:
    """The recipe whose variants are tried (or said not to fit) for `brk`: its label, or, where the
    label fell to advice because the statement is no shape the id's recipe takes, that recipe (its
    variants then only say why not). An `.item()` whose number decides a branch says so instead."""
    if brk.fix or brk.gb_id is None or (brk.gb_id == ITEM_ID and decides_branch(text, brk.line)):
        return brk.fix
    return by_id(brk.gb_id)


def _written(candidate: Candidate) -> tuple[tuple[str, str], ...]:
    return tuple((p.path, p.after) for p in candidate.patches)


def _remembered(read: FileReader) -> FileReader:
    """`read`, each file read once (the compile-site search reads the whole repository)."""
    seen: dict[str, str | Unpatchable] = {}

    def once(path: str) -> str:
        if path not in seen:
            try:
                seen[path] = read(path)
            except Unpatchable as exc:
                seen[path] = exc
        got = seen[path]
        if isinstance(got, Unpatchable):
            raise got
        return got

    return once


def _stack_files(brk: GraphBreak) -> tuple[str, ...]:
    """The break's stack in repository files, innermost first (outside files are display paths
    the reader refuses)."""
    stack = brk.user_stack or (Frame(brk.file, brk.line, brk.function),)
    return tuple(dict.fromkeys(f.file for f in reversed(stack) if not f.file.startswith(("<", "torch/"))))


def frames_of(brk: GraphBreak) -> tuple[FrameRef, ...]:
    """The frames Dynamo compiled when it met the break, first traced first (the frame being
    compiled: its own function's, or a caller's that inlined it). A report made before frames were
    read has none: then the functions of its stack in repository files, innermost first, each
    named by a line inside it."""
    if brk.frames:
        return brk.frames
    stack = brk.user_stack or (Frame(brk.file, brk.line, brk.function),)
    frames = [
        FrameRef(f.file, f.line, f.function.rsplit(".", 1)[-1])
        for f in reversed(stack)
        if not f.file.startswith(("<", "torch/")) and not f.function.startswith("<")
    ]
    return tuple(dict.fromkeys(frames))


def _at_compile_site(
    brk: GraphBreak,
    recipe: type[Recipe],
    read: FileReader,
    paths: Sequence[str],
    compiles: Compiles = UNKNOWN,
    owners: Mapping[FrameRef, str] | None = None,
    at_the_call: bool = True,
) -> tuple[Candidate | None, str | None]:
    """The recipe applied at every `torch.compile` that compiles the break's frame and that one of
    the break's entrypoints runs (for its `model:` entries: in their `compile:` options), or why
    not. `owners`: for frames inside a library, the class whose method each is."""
    if compiles.models:
        return _in_entries(brk, recipe, read, paths, compiles, owners, at_the_call)
    stack_files = _stack_files(brk)
    texts = _readable(read, (*stack_files, *(p for p in paths if p.endswith(".py"))))
    frames = frames_of(brk)
    searches = [search(frame, texts, stack_files, (owners or {}).get(frame)) for frame in frames]
    if owners is not None and not any(s.sites for s in searches):  # a layer deep in a library's model
        searches = [search(frame, texts, stack_files, owners.get(frame), whole_library=True) for frame in frames]
    skipped: list[CompileSite] = []
    for found in searches:
        sites = [s for s in found.sites if runs(s, texts.get(s.path, ""), compiles)]
        skipped += [s for s in found.sites if s not in sites]
        candidate = _scoped(brk, recipe, sites, read, at_the_call) if sites else None
        if candidate is not None:
            return candidate, None
    stack_lines = [CompileSite(f.file, f.line) for f in reversed(brk.user_stack)]
    fallback = unresolved_site(searches, stack_lines)
    if fallback and not runs(fallback, texts.get(fallback.path, ""), compiles):
        skipped, fallback = [*skipped, fallback], None
    candidate = _scoped(brk, recipe, [fallback], read, at_the_call) if fallback else None
    if candidate is not None:
        return candidate, None
    return None, not_run(skipped, compiles) if skipped else _no_compile(brk, recipe, searches)


def _no_compile(brk: GraphBreak, recipe: type[Recipe], searches: Sequence[Search]) -> str:
    """Why no compile of the break's frame was found, and what to write where it is."""
    if not searches:
        return f"no frame of the break is in the repository's files to find its compile ({recipe.variant})"
    setting = f"torch._dynamo.config.patch({recipe.flag}=True)"  # type: ignore[attr-defined]
    frame = searches[0] if brk.frames else searches[-1]
    return (
        f"no `torch.compile` in the repository's files compiles {describe(frame.frame, frame.owner)}, the frame "
        f"Dynamo traced; wrap the compile that does in `{setting}(...)`, or, where gbbot compiles it (a `model:` "
        f"entrypoint), add `{_entry_setting(recipe)}` to the entry's `compile:` options"
    )


def call_of(brk: GraphBreak, read: FileReader) -> CompileSite | None:
    """The repository statement that calls the compiled frame (the one outside it on the break's
    stack, torch's own module-call frames between them skipped: `out = model(x)`), or None."""
    frame = brk.frames[0] if brk.frames else None
    stack = list(brk.user_stack)
    named = [
        i
        for i, f in enumerate(stack)
        if frame and (f.file, f.function.rsplit(".", 1)[-1]) == (frame.file, frame.function)
    ]
    outside = [f for f in stack[: named[0]] if not f.file.startswith(("torch/", "<"))] if named else []
    if not outside:
        return None
    try:
        read(outside[-1].file)
    except Unpatchable:
        return None
    return CompileSite(outside[-1].file, outside[-1].line)


def _scoped(
    brk: GraphBreak, recipe: type[Recipe], sites: Sequence[CompileSite], read: FileReader, at_the_call: bool = True
) -> Candidate | None:
    """The setting at `sites`, or, where they are in another file than the statement that calls
    the compiled frame (a helper's compile, which other code shares), around that statement."""
    call = call_of(brk, read) if at_the_call else None
    if issubclass(recipe, SettingAtCall):  # (re-derived as it was made)
        return _applied(brk, recipe, (call,), read) if call else None
    if call is not None and all(s.path != call.path for s in sites):
        found = _applied(brk, at_call(recipe), (call,), read)  # type: ignore[arg-type]
        if found is not None:
            return found
    return _applied(brk, recipe, sites, read)


def _entry_setting(recipe: type[Recipe]) -> str:
    """The `compile:` option of a `model:` entrypoint that turns the recipe's setting on."""
    flag = getattr(recipe, "flag", recipe.variant)
    method = getattr(recipe, "method", None) if flag == "ignore_logging_functions" else None
    return f"dynamo: {{{flag}: [{method}]}}" if method else f"dynamo: {{{flag}: true}}"


def entry_value(recipe: type[Recipe]) -> tuple[str, bool | tuple[str, ...]]:
    """The Dynamo setting a compile-site recipe turns on, as a `model:` entry's option: (flag, value)."""
    flag = getattr(recipe, "flag", recipe.variant)
    return flag, (recipe.method,) if flag == "ignore_logging_functions" else True  # type: ignore[attr-defined]


def _in_entries(
    brk: GraphBreak,
    recipe: type[Recipe],
    read: FileReader,
    paths: Sequence[str],
    compiles: Compiles,
    owners: Mapping[FrameRef, str] | None,
    at_the_call: bool = True,
) -> tuple[Candidate | None, str | None]:
    """The setting in the `compile:` option of the break's `model:` entries, and, where other
    entrypoints have the break too, at the compiles they run."""
    patch = entry_patch(compiles, *entry_value(recipe))
    if isinstance(patch, str):
        return None, patch
    at_entries = Candidate(brk, recipe, (patch,), entries=compiles.models, config=patch.path)
    if not compiles.others:
        return at_entries, None
    at_code, why = _at_compile_site(brk, recipe, read, paths, replace(compiles, models=()), owners, at_the_call)
    if at_code is None:
        return None, why
    return replace(at_code, patches=(*at_code.patches, patch), entries=compiles.models, config=patch.path), None


def _with_setting(
    candidate: Candidate,
    read: FileReader,
    paths: Sequence[str],
    compiles: Compiles = UNKNOWN,
    owners: Mapping[FrameRef, str] | None = None,
    at_the_call: bool = True,
) -> tuple[Candidate | None, str | None]:
    """`candidate`'s break-line edit and its setting at the compiles of the break's frame (or in
    the `compile:` option of its `model:` entries), in one candidate (both in one file when the
    compile is next to the break), or why not. A setting around the model's call that the edit
    would overlap (an override's class made in the function that calls the model) goes to the
    compile instead."""
    assert candidate.setting is not None
    at_compile, why = _at_compile_site(candidate.brk, candidate.setting, read, paths, compiles, owners, at_the_call)
    if at_compile is None:
        flag = getattr(candidate.setting, "flag", candidate.setting.variant)
        return None, f"the {candidate.recipe.variant} rewrite needs {flag} at the compile: {why}"
    joined = replace(
        candidate,
        sites=at_compile.sites,
        setting=at_compile.recipe,
        entries=at_compile.entries,
        config=at_compile.config,
    )
    by_file: dict[str, list[engine.Request]] = {}
    for path, request in joined.requests():
        by_file.setdefault(path, []).append(request)
    patches: list[FilePatch] = []
    for path, requests in by_file.items():
        text = read(path)
        outcome = engine.apply(text, requests)
        if outcome.missed and at_the_call and issubclass(joined.setting, SettingAtCall):  # type: ignore[arg-type]
            return _with_setting(candidate, read, paths, compiles, owners, at_the_call=False)
        if outcome.missed:
            return None, f"{candidate.recipe.variant}: {outcome.missed[0][1]}"
        patches.append(FilePatch(path, text, outcome.after))
    in_config = [p for p in at_compile.patches if p.path == joined.config]
    return joined.on((*patches, *in_config)), None


def _readable(read: FileReader, paths: Iterable[str]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for path in dict.fromkeys(paths):
        try:
            texts[path] = read(path)
        except Unpatchable:  # outside the repository, unreadable: not searched
            continue
    return texts


def _applied(brk: GraphBreak, recipe: type[Recipe], sites: Sequence[CompileSite], read: FileReader) -> Candidate | None:
    patches: list[FilePatch] = []
    applied: list[CompileSite] = []
    for path in dict.fromkeys(s.path for s in sites):
        here = [s for s in sites if s.path == path]
        text = read(path)
        try:
            outcome = engine.apply(text, [engine.Request(f"{s.line}", recipe, BreakSite(s.line)) for s in here])
        except SourceError:
            continue
        if outcome.applied:
            patches.append(FilePatch(path, text, outcome.after))
            applied += [s for s in here if f"{s.line}" in outcome.applied]
    return Candidate(brk, recipe, tuple(patches), tuple(applied)) if patches else None


class _NoPatch(Exception):
    """The break's own file cannot be patched: why."""


def _call_site(
    brk: GraphBreak, read: FileReader, paths: Sequence[str], compiles: Compiles
) -> tuple[tuple[Candidate, ...], tuple[str, ...], str | None]:
    """Candidates at the repository line of the break (for a break inside a library: the line that
    calls into it), why the others do not fit, and the recipe family asked."""
    try:
        text = read(brk.file)
    except Unpatchable as exc:
        raise _NoPatch(str(exc)) from None
    stale = _stale(brk, text)
    if stale:
        raise _NoPatch(stale)
    try:
        return (*candidates(brk, text, read, paths, compiles), recipe_family(brk, text))
    except SourceError as exc:
        raise _NoPatch(f"{brk.file} does not parse ({exc}); nothing in it is patched") from None


def in_callee(brk: GraphBreak) -> bool:
    """Is the break in a function its compiled frame calls (not in the frame's own code)?"""
    frame = brk.frames[0] if brk.frames else None
    site = brk.library_site
    where = (site.path, site.function) if site else (brk.file, brk.function.rsplit(".", 1)[-1])
    return frame is not None and brk.origin is not Origin.TORCH and where != (frame.file, frame.function)


def lever(
    brk: GraphBreak, read: FileReader, paths: Sequence[str], lookup: scaffold.SourceLookup, compiles: Compiles
) -> Candidate | None:
    """`nested_graph_breaks` at the compile of the break's frame, for a break in a callee."""
    if not in_callee(brk):
        return None
    owners = (
        {f: o for f in frames_of(brk) if (o := _library_owner(f, lookup)) is not None} if brk.library_site else None
    )
    try:
        return _at_compile_site(brk, NestedBreaks, read, paths, compiles, owners)[0]
    except (Unpatchable, SourceError):
        return None


def plan_break(
    brk: GraphBreak,
    entrypoints: tuple[str, ...],
    read: FileReader,
    lookup: scaffold.SourceLookup,
    paths: Sequence[str] = (),
    compiles: Compiles = UNKNOWN,
) -> Planned | FixResult:
    if brk.origin is Origin.TORCH:
        return advice.advise(brk, "the break is inside torch itself; the options below are the documented ones")
    try:
        found, why_not, family = _call_site(brk, read, paths, compiles)
    except _NoPatch as exc:
        found, why_not, family, unpatchable = (), (), brk.fix, str(exc)
    else:
        unpatchable = None
    if found:
        return Planned(brk, entrypoints, found)
    if brk.origin is Origin.THIRD_PARTY:  # no patch at the call line: a setting at the compile, or a scaffold
        settings, why = library_settings(brk, read, lookup, paths, compiles)
        finished = _finished_override(brk, read, lookup, paths, compiles)
        if settings or finished:
            return Planned(brk, entrypoints, (*settings, *finished))
        return _tried_first(scaffold.scaffold(brk, lookup), why)
    if not variants(family):
        fed = BRANCH_FED in why_not
        return advice.advise(brk, BRANCH_FED if fed else "no mechanical fix for this kind of break", decides_branch=fed)
    if unpatchable:
        return _skip(brk, unpatchable)
    return advice.advise(brk, _joined(why_not), decides_branch=BRANCH_FED in why_not, recipe=family)


def library_settings(
    brk: GraphBreak, read: FileReader, lookup: scaffold.SourceLookup, paths: Sequence[str], compiles: Compiles = UNKNOWN
) -> tuple[tuple[Candidate, ...], tuple[str, ...]]:
    """For a break inside a library: the Dynamo settings its GB id's recipe has (a logger method
    ignored, `capture_scalar_outputs` for an `.item()` whose number decides no branch there,
    `capture_dynamic_output_shape_ops`), each at the compiles in the user's code that trace the
    break's frame; and why none is tried, where one was meant to be."""
    family = _setting_family(brk)
    settings = [v for v in variants(family) if v.at_compile_site]
    site = brk.library_site
    text = lookup(site.path) if site else None
    if not settings or site is None:
        return (), ()
    if family == "item" and (text is None or decides_branch(text, site.line)):
        why = "the number decides a branch" if text else "the library's source could not be read"
        return (), (f"capture_scalar_outputs not tried: {why} ({site.path}:{site.line})",)
    owners = {f: o for f in frames_of(brk) if (o := _library_owner(f, lookup)) is not None}
    found: list[Candidate] = []
    why_not: list[str] = []
    for setting in settings:
        recipe = _for_break(setting, brk)
        if recipe is None:
            continue
        candidate, why = _at_compile_site(brk, recipe, read, paths, compiles, owners)
        found += [candidate] if candidate else []
        why_not += [why] if why else []
    return tuple(found), tuple(why_not)


# Breaks with no recipe of their own whose message names a setting: a data-dependent operator
# (GB0033: `aten._local_scalar_dense`, the scalar an op reads from a tensor, as in
# `torch.arange(lengths.max())`) is traced with `capture_scalar_outputs`, `.item()`'s setting.
SETTING_FAMILY = {"GB0033": "item"}


def _setting_family(brk: GraphBreak) -> str | None:
    """The recipe whose compile-site settings a break inside a library may get: its GB id's, or
    the one its message's setting belongs to."""
    return by_id(brk.gb_id) or SETTING_FAMILY.get(brk.gb_id or "")


def library_setting_recipes(brk: GraphBreak) -> tuple[type[Recipe], ...]:
    """The compile-site settings a break inside a library may get."""
    if brk.origin is not Origin.THIRD_PARTY or brk.library_site is None:
        return ()
    settings = [v for v in variants(_setting_family(brk)) if v.at_compile_site]
    return (*settings, *(at_call(v) for v in settings))  # type: ignore[arg-type]


def library_setting(
    brk: GraphBreak,
    variant: str | None,
    read: FileReader,
    paths: Sequence[str],
    lookup: scaffold.SourceLookup,
    compiles: Compiles = UNKNOWN,
) -> Candidate | str:
    """The setting `variant` of a library break's kind at the compiles in the user's code that
    trace its frame, made as planning makes it, or why none is: what the job that may push
    re-derives. Whether the setting was worth trying (an `.item()` whose number decides no branch
    in the library) was the verification's to say; with the library's source unreadable here
    (`lookup` gives None), the frames' classes are not known and the search takes the library's
    classes the stack's files import."""
    found = [r for r in library_setting_recipes(brk) if r.variant == variant]
    recipe = _for_break(found[0], brk) if found else None
    if recipe is None:
        return f"no {variant} setting for a {brk.gb_id} break inside a library"
    owners = {f: o for f in frames_of(brk) if (o := _library_owner(f, lookup)) is not None}
    candidate, why = _at_compile_site(brk, recipe, read, paths, compiles, owners)
    return candidate or why or f"no compile site for {variant}"


def _finished_override(
    brk: GraphBreak,
    read: FileReader,
    lookup: scaffold.SourceLookup,
    paths: Sequence[str],
    compiles: Compiles = UNKNOWN,
) -> tuple[Candidate, ...]:
    """The scaffold's subclass finished by a recipe and used where the model is made, with the
    setting that recipe needs at the compile (gbbot/fix/override.py); () when there is none."""
    made = override.override_recipe(brk, lookup, _readable(read, (p for p in paths if p.endswith(".py"))))
    if made is None:
        return ()
    recipe, (path, line) = made
    text = read(path)
    outcome = engine.apply(text, [engine.Request(brk.fingerprint, recipe, BreakSite(line))])
    if not outcome.applied:
        return ()
    candidate = Candidate(brk, recipe, (FilePatch(path, text, outcome.after),), at=CompileSite(path, line))
    setting = getattr(recipe, "with_setting", None)
    if setting is None:
        return (candidate,)
    owners = {f: o for f in frames_of(brk) if (o := _library_owner(f, lookup)) is not None}
    joined, _why = _with_setting(replace(candidate, patches=(), setting=setting), read, paths, compiles, owners)
    return (joined,) if joined else ()


def _library_owner(frame: FrameRef, lookup: scaffold.SourceLookup) -> str | None:
    """The class whose method a library frame is, read from the library's source."""
    text = lookup(frame.file)
    where = source_map(text) if text else None
    qualname = where.qualname(frame.line + 1, "") if where else ""
    parts = qualname.split(".")
    return parts[-2] if len(parts) >= 2 and parts[-1] == frame.function else None


def _tried_first(result: FixResult, why_not: Sequence[str]) -> FixResult:
    """`result` (a scaffold, advice) saying which setting was meant to be tried and why it was not."""
    if not why_not:
        return result
    return replace(result, reason=f"{result.reason}; {'; '.join(dict.fromkeys(why_not))}")


NOT_A_PATTERN = re.compile(r"^line (\d+) is not a pattern the (\S+) recipe rewrites \((.*)\)$")


def _joined(why_not: Sequence[str]) -> str:
    """The reasons, each once; the variants of one recipe that all missed the same line said in
    one sentence ("line 516 is not a pattern the tensor_branch recipes rewrite (…; …)")."""
    said: dict[str, list[str]] = {}
    for why in dict.fromkeys(why_not):
        found = NOT_A_PATTERN.match(why)
        key = f"line {found[1]} is not a pattern the {found[2]} recipe" if found else why
        said.setdefault(key, []).extend([found[3]] if found else [])
    return "; ".join(_sentence(key, titles) for key, titles in said.items())


def _sentence(key: str, titles: list[str]) -> str:
    if not titles:
        return key
    many = len(titles) > 1
    return f"{key}{'s rewrite' if many else ' rewrites'} ({'; '.join(titles)})"


def plan(
    found: Iterable[tuple[GraphBreak, tuple[str, ...]]],
    read: FileReader,
    lookup: scaffold.SourceLookup,
    paths: Sequence[str] = (),
    config: ConfigFile | None = None,
    levers: bool = False,
) -> tuple[list[Planned], list[FixResult]]:
    """Candidates for the fixable breaks; a result for every other counted break. `paths`: the
    repository's files, where compile sites are searched (besides the break's stack); `config`:
    the configuration, which says how each entrypoint compiles. `levers`: the last round's, only
    the `nested_graph_breaks` lever, for breaks no other fix removed."""
    read = _remembered(read)
    planned: list[Planned] = []
    results: list[FixResult] = []
    for brk, entrypoints in found:
        if brk.ignored:
            continue
        if levers:
            found_lever = lever(brk, read, paths, lookup, compiles_of(entrypoints, config))
            planned += [Planned(brk, entrypoints, (found_lever,))] if found_lever else []
            continue
        outcome = plan_break(brk, entrypoints, read, lookup, paths, compiles_of(entrypoints, config))
        (planned if isinstance(outcome, Planned) else results).append(outcome)
    return planned, results


def combine(chosen: Sequence[Candidate], read: FileReader) -> tuple[list[FilePatch], list[tuple[str, str]]]:
    """One patch per file with every chosen fix in it; fixes that collide are left out, named. A
    fix that edits several files is in all of them or in none."""
    by_file: dict[str, list[tuple[Candidate, engine.Request]]] = {}
    for candidate in chosen:
        for path, request in candidate.requests():
            by_file.setdefault(path, []).append((candidate, request))
    outcomes = {path: engine.apply(read(path), [r for _, r in group]) for path, group in by_file.items()}
    missed = {key: why for outcome in outcomes.values() for key, why in outcome.missed}
    configured, missed_there = _configured(chosen, read)
    missed |= missed_there
    left_out = set(missed)
    if not left_out:
        patches = [FilePatch(path, read(path), o.after) for path, o in outcomes.items() if o.applied]
        return [*patches, *configured], list(missed.items())
    kept = [c for c in chosen if c.brk.fingerprint not in left_out]
    patches, more = combine(kept, read) if len(kept) < len(chosen) else ([], [])
    return patches, [*missed.items(), *more]


def _configured(chosen: Sequence[Candidate], read: FileReader) -> tuple[list[FilePatch], dict[str, str]]:
    """The chosen settings in the `compile:` options of `model:` entries, one patch per
    configuration file, and the fixes whose setting would not go in."""
    texts: dict[str, tuple[str, str]] = {}
    missed: dict[str, str] = {}
    for candidate in (c for c in chosen if c.entries and c.config):
        before, text = texts.get(candidate.config, (read(candidate.config), read(candidate.config)))
        flag, value = entry_value(candidate.setting or candidate.recipe)
        for name in candidate.entries:
            edited = config_edit.with_setting(text, candidate.config, name, flag, value)
            if edited is None and not config_edit.already(text, candidate.config, name, flag, value):
                missed[candidate.brk.fingerprint] = f"the `compile:` option of `{name}` could not take `{flag}`"
            text = edited or text
        texts[candidate.config] = (before, text)
    return [FilePatch(path, before, after) for path, (before, after) in texts.items() if after != before], missed
