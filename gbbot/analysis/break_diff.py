"""Two reports (head, base) → Diff: which breaks a change brought (new), removed (fixed) or kept
(persisting), per entrypoint and overall. Pure.

Breaks are compared by fingerprint (docs/architecture.md, "Breaks"), which already survives edits above a break,
functions moved within a file and whitespace changes. A file that git saw renamed changes the
path inside the fingerprint, so the base's fingerprints are recomputed with the head's path first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from typing import Any

from gbbot.analysis import classify, dependence, recompile
from gbbot.core.config import IgnoreRule
from gbbot.core.model import (
    RECOMPILE_ORDER,
    Change,
    ChangeState,
    CompileError,
    Diff,
    EntrypointDiff,
    EntrypointReport,
    FrameRef,
    GraphBreak,
    Origin,
    Reason,
    Recompiled,
    Report,
    Status,
    Why,
)

# How a missing module, function or script reads in a failed run's stderr.
NOT_DEFINED_RE = re.compile(
    r"ModuleNotFoundError: .*|AttributeError: module .* has no attribute .*"
    r"|can't open file .*|No such file or directory.*|command not found.*"
)
REASON_CHARS = 300


# --- renames -----------------------------------------------------------------------------------


def _key(brk: GraphBreak, path: str) -> tuple[str, ...] | None:
    """classify's fingerprint key for `brk` as if its file were at `path`; None when the record
    does not carry what the key needs (a break outside user code without a traceback)."""
    if brk.origin is not Origin.USER and not brk.user_stack:
        return None
    innermost = brk.user_stack[-1] if brk.user_stack else None
    return classify.fingerprint_key(brk.key, path, brk.function, brk.code, brk.origin, innermost)


def _occurrences(breaks: Sequence[GraphBreak]) -> dict[str, int]:
    """Each break's index among the entrypoint's breaks with the same key, counted from the last
    line up (as classify numbers them)."""
    groups: dict[tuple[str, ...], list[GraphBreak]] = {}
    for brk in breaks:
        key = _key(brk, brk.file)
        if key is not None:
            groups.setdefault(key, []).append(brk)
    return {b.fingerprint: i for same in groups.values() for i, b in enumerate(sorted(same, key=lambda b: -b.line))}


def renamed(breaks: Sequence[GraphBreak], renames: Mapping[str, str]) -> tuple[GraphBreak, ...]:
    """One entrypoint's base breaks with files moved to their head paths and fingerprints to
    match. A record whose fingerprint cannot be rebuilt exactly is left as it is."""
    occurrence = _occurrences(breaks)
    out = []
    for brk in breaks:
        old_key, new_path = _key(brk, brk.file), renames.get(brk.file)
        index = occurrence.get(brk.fingerprint)
        if new_path is None or old_key is None or index is None:
            out.append(brk)
        elif classify.fingerprint(old_key, index) != brk.fingerprint:
            out.append(brk)  # built some other way (another gbbot version): cannot be mapped
        else:
            new_key = (old_key[0], new_path, *old_key[2:])
            out.append(replace(brk, file=new_path, fingerprint=classify.fingerprint(new_key, index)))
    return tuple(out)


def rename_report(base: Report, renames: Mapping[str, str]) -> Report:
    if not renames:
        return base
    entrypoints = tuple(
        replace(
            e,
            breaks=tuple(_moved_frames(b, renames) for b in renamed(e.breaks, renames)),
            compile_error=_moved(e.compile_error, renames) if e.compile_error else None,
            frames=tuple(replace(f, frame=_moved(f.frame, renames)) for f in e.frames),
        )
        for e in base.entrypoints
    )
    return replace(base, entrypoints=entrypoints)


def _moved(frame: FrameRef | CompileError, renames: Mapping[str, str]) -> Any:
    return replace(frame, file=renames[frame.file]) if frame.file in renames else frame


def _moved_frames(brk: GraphBreak, renames: Mapping[str, str]) -> GraphBreak:
    """A base break's frames at their head paths: frames are compared across the two sides."""
    moved = tuple(_moved(f, renames) for f in brk.frames)
    return replace(brk, frames=moved, makes_eager=tuple(_moved(f, renames) for f in brk.makes_eager))


def relative_renames(renames: Mapping[str, str], prefix: str) -> dict[str, str]:
    """Top-level-relative renames → relative to a config root `prefix` ("" for the top level),
    the form report paths take."""
    if not prefix:
        return dict(renames)
    lead = prefix.rstrip("/") + "/"
    return {
        old[len(lead) :]: new[len(lead) :]
        for old, new in renames.items()
        if old.startswith(lead) and new.startswith(lead)
    }


# --- why there is no baseline ------------------------------------------------------------------


def why_no_baseline(base: EntrypointReport | None, gap: dependence.Gap | None = None) -> Reason:
    """Why an entrypoint has nothing to compare with on the base (`gap`: what the base's checkout
    lacked, where that is known)."""
    if base is None:
        return Reason(Why.NOT_IN_BASE)
    error = base.error or ""
    found = NOT_DEFINED_RE.search(error)
    missing = _short(found.group(0)) if found else ""
    if base.status is Status.FAILED and gap is not None:
        return Reason(Why.LACKS, (gap.reason, missing, gap.new_in_change))
    if base.status is Status.FAILED and (found or base.exit_code == 127):
        return Reason(Why.NOT_DEFINED, (missing,))
    if base.status is Status.TIMEOUT:
        return Reason(Why.TIMED_OUT)
    if base.status is Status.SKIPPED:
        return Reason(Why.SKIPPED, (_short(error),))
    return Reason(Why.ENDED, (base.status.value, base.exit_code, _last_line(error)))


def _short(text: str) -> str:
    return recompile.shorten(text, REASON_CHARS)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return _short(lines[-1]) if lines else ""


# --- the comparison ----------------------------------------------------------------------------


def _counted(breaks: Iterable[GraphBreak], ignore: Sequence[IgnoreRule], entrypoint: str) -> dict[str, GraphBreak]:
    """Fingerprint → break, without ignored ones; the head's ignore rules are applied again so
    that they hold for a baseline made with other rules too."""
    return {b.fingerprint: b for b in breaks if not b.ignored and not classify.is_ignored(b, ignore, entrypoint)}


@dataclass(frozen=True)
class _Side:
    """One entrypoint compared: what it says besides its changes, its changes (new, revealed,
    persisting, fixed, hidden, in that order) and the base's breaks it was compared with."""

    result: EntrypointDiff
    changes: tuple[Change, ...]
    base: Mapping[str, GraphBreak]  # empty without a baseline


# --- gone, hidden, revealed: the one rule ------------------------------------------------------
#
# Dynamo never traces a frame that runs eagerly, so a break inside such a frame cannot show up,
# fixed or not. Which frame that is comes from the compiles (gbbot/analysis/frames.py), never
# from a break's function name: the frame that runs eagerly is often the caller that inlined it.


FrameKey = tuple  # FrameRef.across: a frame as both sides know it


@dataclass(frozen=True)
class EagerFrames:
    """One entrypoint's frames that run eagerly, each with the break that makes it so (None:
    no break record names it), and every frame it compiled, to place stack entries in. Frames
    are keyed as both sides know them (FrameRef.across). A report made before frames were
    recorded has none: its eager sites stand in, keyed by the break's (file, qualname)."""

    eager: Mapping[FrameKey, str | None]
    compiled: Mapping[tuple[str, str], tuple[FrameRef, ...]]  # (file, co_name) → frames, by first line
    framed: bool
    traced: frozenset[FrameKey] = frozenset()  # frames compiled that do not run eagerly

    @classmethod
    def of(cls, entry: EntrypointReport) -> EagerFrames:
        if not entry.frames:
            sites = {(b.file, b.function): b.fingerprint for b in entry.breaks if b.frame_skipped}
            return cls(sites, {}, False)
        compiled: dict[tuple[str, str], list[FrameRef]] = {}
        for f in entry.frames:
            compiled.setdefault((f.frame.file, f.frame.function), []).append(f.frame)
        ordered = {k: tuple(sorted(v, key=lambda r: r.line)) for k, v in compiled.items()}
        traced = frozenset(f.frame.across for f in entry.frames if not f.eager)
        return cls({f.frame.across: f.eager_by for f in entry.frames if f.eager}, ordered, True, traced)


def frames_of(brk: GraphBreak, *sides: EagerFrames) -> tuple[FrameKey, ...]:
    """The frames a break was traced in, then those its stack passes through: a stack entry lies
    in the nearest compiled frame of its file and function name that starts above it. For a side
    without frames, the break's own site stands in."""
    found: dict[FrameKey, None] = {f.across: None for f in brk.frames}
    for side in sides:
        if not side.framed:
            found[(brk.file, brk.function)] = None
            continue
        for entry in brk.user_stack:
            above = [f for f in side.compiled.get((entry.file, entry.function), ()) if f.line <= entry.line]
            if above:
                found[above[-1].across] = None
    return tuple(found)


def line_in(brk: GraphBreak, frame: FrameKey, side: EagerFrames) -> int | None:
    """The line of `frame`'s own code that the break's stack passes through (the break's line, or
    the call into the callee that holds it), or None when the stack does not pass through it."""
    for entry in reversed(brk.user_stack):  # innermost first: a recursive frame meets its deepest
        above = [f for f in side.compiled.get((entry.file, entry.function), ()) if f.line <= entry.line]
        if above and above[-1].across == frame:
            return entry.line
    return None


def newly_eager(head: EagerFrames, base: EagerFrames, base_breaks: Iterable[str]) -> dict[FrameKey, str | None]:
    """The head's frames that run eagerly and did not in the base, or that a new break makes
    run eagerly: frame → that break."""
    before = set(base_breaks)
    return {
        frame: by
        for frame, by in head.eager.items()
        if (by is not None and by not in before) or (base.framed and frame not in base.eager)
    }


def hidden_by(
    brk: GraphBreak, newly: Mapping[FrameKey, str | None], head: EagerFrames, *sides: EagerFrames
) -> str | None:
    """For a base break the head does not have: the head break that hides it ("" when its frame
    runs eagerly with no break named for it), or None when nothing hides it, so it is fixed. A
    frame it was traced in that the head still traces (a callee inlined into a caller that now
    runs eagerly is compiled on its own too) would have shown it: then it is fixed."""
    frames = frames_of(brk, head, *sides)
    if any(frame in head.traced for frame in frames):
        return None
    for frame in frames:
        if frame in newly:
            return newly[frame] or ""
    return None


# Known only where the change is a patch gbbot made (fix verification): then a gone break that
# Dynamo passed on its way to the head's new stop is fixed, not hidden.
LineMap = dependence.LineMap


def passed(gone: GraphBreak, hider: GraphBreak, base: EagerFrames, head: EagerFrames, to_base: LineMap) -> bool:
    """Did Dynamo trace past `gone`'s line before stopping at `hider`, in a frame `hider` makes run
    eagerly? Compared as lines of the base's file, in the frame's own code (the break's line, or
    the call into the callee that holds it)."""
    for frame in hider.makes_eager:
        at, stop = line_in(gone, frame.across, base), line_in(hider, frame.across, head)
        stop = to_base(frame.file, stop) if stop is not None else None
        if at is not None and stop is not None and at < stop:
            return True
    return False


def revealed(brk: GraphBreak, base: EagerFrames, *sides: EagerFrames) -> bool:
    """A head break the base did not have is revealed, not new, when a frame it lies in ran
    eagerly in the base: Dynamo never looked at it there."""
    return any(frame in base.eager for frame in frames_of(brk, base, *sides))


# Whether a break's code is in one side's source: True, False (its line or its function is gone),
# or None when that cannot be said (no source at hand, no repository line on its way).
CodeCheck = dependence.CodeCheck


def unknown(_brk: GraphBreak) -> bool | None:
    return None


def still_failing(head: EntrypointReport, base: EntrypointReport | None) -> Reason | None:
    """Set when head and base ended with the same compile error: the same failure on both
    sides is no missing baseline, and nothing about it is new."""
    if base is None or head.compile_error is None or base.compile_error is None:
        return None
    if head.compile_error.key != base.compile_error.key:
        return None
    error = head.compile_error
    return Reason(Why.STILL_FAILING, (head.name, error.gb_id or error.gb_type, error.file, error.line))


def settle(
    head: EntrypointReport,
    base: EntrypointReport,
    now: Mapping[str, GraphBreak],
    before: Mapping[str, GraphBreak],
    in_head: CodeCheck = unknown,
    in_base: CodeCheck = unknown,
    to_base: LineMap | None = None,
) -> tuple[Change, ...]:
    """One entrypoint's breaks on two sides, settled by the rule: of those only the head has,
    which are new and which revealed; of those only the base has, which are fixed and which
    hidden (by which head break). `now` and `before`: the breaks to compare of each side, by
    fingerprint (the head's own ignore rules applied); the entrypoints' frames say what ran
    eagerly where. A gone break whose code the head no longer has is fixed whatever its frame
    does; a head break is revealed only when `in_base` shows that what it depends on is the
    base's (gbbot/analysis/dependence.py: its repository lines and the callee it is about), and
    new otherwise, unknown included. `to_base`: where the head's lines are known as base lines
    (see LineMap)."""
    had = {b.fingerprint for b in base.breaks}
    head_eager, base_eager = _head_frames(head, had), EagerFrames.of(base)
    newly = newly_eager(head_eager, base_eager, had)
    gone = {f: b for f, b in before.items() if f not in now}
    stops = {b.fingerprint: b for b in head.breaks}
    hidden = {
        f: (b, by)
        for f, b in gone.items()
        if in_head(b) is not False
        and (by := hidden_by(b, newly, head_eager, base_eager)) is not None
        and (to_base is None or by not in stops or not passed(b, stops[by], base_eager, head_eager, to_base))
    }
    appeared = {f: b for f, b in now.items() if f not in before}
    shown = {f: b for f, b in appeared.items() if in_base(b) is True and revealed(b, base_eager, head_eager)}
    first = {b.fingerprint: b for b in reversed(head.breaks)}  # each fingerprint's first record
    name = (head.name,)
    return (
        *(Change(b, ChangeState.NEW, name) for f, b in appeared.items() if f not in shown),
        *(Change(b, ChangeState.REVEALED, name) for b in shown.values()),
        *(Change(b, ChangeState.FIXED, name) for f, b in gone.items() if f not in hidden),
        *(Change(b, ChangeState.HIDDEN, name, first.get(by)) for b, by in hidden.values()),
    )


def _head_frames(head: EntrypointReport, had: Set[str]) -> EagerFrames:
    """The head's eager frames, a frame it still traces counted as traced only if no break the
    base did not have (`had`) stopped its trace first: a decorator's frame around `generate` is
    traced on both sides, and on the head the new break inside `generate`'s loop is what it meets."""
    frames = EagerFrames.of(head)
    cut = {f.across for b in head.breaks if b.fingerprint not in had for f in b.frames}
    return replace(frames, traced=frames.traced - cut)


# Why a base run that failed could not run the entrypoint, from its error (dependence.gap).
Gaps = Callable[[str], "dependence.Gap | None"]


def no_gap(_error: str) -> dependence.Gap | None:
    return None


def _no_baseline(
    head: EntrypointReport, base: EntrypointReport | None, base_sha: str, now: Mapping[str, GraphBreak], gaps: Gaps
) -> EntrypointDiff:
    """An entrypoint the base did not run cleanly: nothing shows any of its breaks on the base, so
    every one is new (new is what the base is not shown to have, unknown included), and the
    reason says why the comparison could not be made. One the change did not add (the base has
    it, but it failed, crashed, timed out there or lacked what only the working tree has) also
    says, above the headline, that it lost its baseline."""
    gap = gaps(base.error or "") if base is not None and base.status is Status.FAILED else None
    why = why_no_baseline(base, gap)
    # Without word of what the base lacked, a base that does not define the entrypoint is taken
    # as one the change adds.
    new_here = gap.new_in_change if gap is not None else why.why in (Why.NOT_IN_BASE, Why.NOT_DEFINED)
    lost = None if new_here else why
    said = Reason(Why.NO_BASELINE, (head.name, base_sha, why, len(now) if lost else 0))
    return EntrypointDiff(head.name, no_baseline=said, lost_baseline=lost)


def _compare(
    head: EntrypointReport,
    base: EntrypointReport | None,
    base_sha: str,
    ignore: Sequence[IgnoreRule],
    code: tuple[CodeCheck, CodeCheck] = (unknown, unknown),
    gaps: Gaps = no_gap,
) -> _Side:
    now = _counted(head.breaks, ignore, head.name)
    name = (head.name,)
    still = still_failing(head, base)
    if base is None or (base.status is not Status.OK and not still):
        every = tuple(Change(b, ChangeState.NEW, name) for b in now.values())
        return _Side(_no_baseline(head, base, base_sha, now, gaps), every, {})
    before = _counted(base.breaks, ignore, head.name)
    # A head run that did not finish saw only some of its breaks, and one that failed as the base
    # did gave nothing to call gone: nothing can be called fixed.
    compared = before if head.status is Status.OK and not still else {f: now[f] for f in before if f in now}
    settled = settle(head, base, now, compared, *code)
    if still:  # the same failure on both sides: what it kept, and what it added, are said
        settled = tuple(c for c in settled if c.state is ChangeState.NEW)
    persisting = tuple(Change(b, ChangeState.PERSISTING, name) for f, b in now.items() if f in before)
    on_head = tuple(c for c in settled if c.state.on_head)
    changes = (*on_head, *persisting, *(c for c in settled if not c.state.on_head))
    return _Side(EntrypointDiff(head.name, head.graph_count - base.graph_count, still_failing=still), changes, before)


@dataclass(frozen=True)
class Comparison:
    """What a diff compares the head with besides the base's report: the base's name and commit,
    the files git saw renamed since (old path → new path), the head's ignore rules, where the
    base's report came from, what a reader must know about it, whether a break's code (by its head
    path) is in the head's source and whether what a head break depends on is the base's (see
    CodeCheck), and what the base's checkout lacked when it could not run an entrypoint (`gaps`)."""

    base_ref: str
    base_sha: str
    renames: Mapping[str, str] = field(default_factory=dict)
    ignore: Sequence[IgnoreRule] = ()
    source: str = "run"  # run | cache | file | record
    notes: Sequence[str] = ()
    in_head: CodeCheck = unknown
    in_base: CodeCheck = unknown
    gaps: Gaps = no_gap


def diff(head: Report, base: Report, how: Comparison) -> Diff:
    """Compare each of the head's entrypoints with the base's of the same name (the base's other
    entrypoints, removed or outside this shard, play no part), then fold their changes
    (`overall`). A gone break whose code (by its head path) `in_head` shows the head no longer
    has is fixed, whatever its frame did. `in_base` (gbbot/analysis/dependence.py): whether a
    head break's repository lines and the callee it is about are the base's; unknown is new. An
    entrypoint the base did not run has no baseline; its breaks are new only when it is new in
    the change (`gaps` says what the base's checkout lacked)."""
    by_name = {e.name: e for e in rename_report(base, how.renames).entrypoints}
    sides = [
        _compare(e, by_name.get(e.name), how.base_sha, how.ignore, (how.in_head, how.in_base), how.gaps)
        for e in head.entrypoints
    ]
    each = tuple(c for s in sides for c in s.changes)
    changes = overall(head, each, {f for s in sides for f in s.base})
    return Diff(
        base_ref=how.base_ref,
        base_sha=how.base_sha,
        changes=changes,
        entrypoints=tuple(s.result for s in sides),
        baseline_source=how.source,
        notes=tuple(how.notes),
        recompiles=recompile_diff(head, base, _new_breaks(head, changes)),
        compared=recorded(each, changes),
    )


def overall(head: Report, compared: Sequence[Change], before: Set[str]) -> tuple[Change, ...]:
    """The entrypoints' changes folded, each distinct break once (`before`: the base's breaks in
    any entrypoint compared). A break is persisting when the base had it in some entrypoint and
    the head has it; revealed when only the head has it and it is revealed in some entrypoint;
    new when only the head has it otherwise. One only the base has is hidden when it is hidden
    in some entrypoint, and fixed otherwise. Its record is the head's first when the head has
    it, else the base's from the last entrypoint that gave it its state; its entrypoints those
    whose own comparison gives it that state."""

    def last(*states: ChangeState) -> dict[str, Change]:
        """Each fingerprint some entrypoint gives one of `states`, in the order first given, with
        the last entrypoint's change."""
        return {c.fingerprint: c for c in compared if c.state in states}

    now = last(ChangeState.NEW, ChangeState.REVEALED, ChangeState.PERSISTING)
    hidden = {f: c for f, c in last(ChangeState.HIDDEN).items() if f not in now}
    fixed = {f: c for f, c in last(ChangeState.FIXED).items() if f not in now and f not in hidden}
    shown = {f: c for f, c in last(ChangeState.REVEALED).items() if f not in before}
    first = {b.fingerprint: b for b in reversed(head.breaks)}  # each fingerprint's first record
    at = {b.fingerprint: b for b in head.breaks}
    changes = (
        *(Change(first[f], ChangeState.NEW) for f in now if f not in before and f not in shown),
        *fixed.values(),
        *(Change(first[f], ChangeState.PERSISTING) for f in now if f in before),
        *(replace(c, hidden_by=at.get(c.hidden_by.fingerprint) if c.hidden_by else None) for c in hidden.values()),
        *(Change(first[f], ChangeState.REVEALED) for f in shown),
    )
    return located(changes, compared)


def recorded(compared: Sequence[Change], changes: Sequence[Change]) -> tuple[Change, ...]:
    """Each entrypoint's changes with the diff's record of each break and, hidden, what hides it
    (what the report's JSON gives back)."""
    of = {c.fingerprint: c for c in changes}
    return tuple(
        replace(c, brk=of[f].brk, hidden_by=of[f].hidden_by if c.state is ChangeState.HIDDEN else None)
        for c in compared
        if (f := c.fingerprint) in of
    )


def _new_breaks(head: Report, changes: Sequence[Change]) -> tuple[GraphBreak, ...]:
    """Every head record of a break the change adds (one per stack it was met on)."""
    new = {c.fingerprint for c in changes if c.state is ChangeState.NEW}
    return tuple(b for b in head.breaks if b.fingerprint in new)


def located(changes: Sequence[Change], compared: Sequence[Change]) -> tuple[Change, ...]:
    """Each change with the entrypoints whose own comparison gives its break its state."""
    where: dict[tuple[str, ChangeState], tuple[str, ...]] = {}
    for e in compared:
        where[e.fingerprint, e.state] = (*where.get((e.fingerprint, e.state), ()), *e.entrypoints)
    return tuple(replace(c, entrypoints=where.get((c.fingerprint, c.state), ())) for c in changes)


def recompile_diff(head: Report, base: Report, new_breaks: Sequence[GraphBreak] = ()) -> tuple[Recompiled, ...]:
    """Recompilations new, fixed or persisting between the entrypoints both reports share that the
    base ran cleanly; the base's others give nothing to compare with, so all there is new, but
    for the recompilations of resume functions that `new_breaks` made (theirs)."""
    usable = {e.name for e in base.entrypoints if e.status is Status.OK}
    shared = {e.name for e in head.entrypoints} & usable
    only_shared = replace(base, entrypoints=tuple(e for e in base.entrypoints if e.name in shared))
    return recompile.compare(head, only_shared, new_breaks)


def joined(a: ChangeState, b: ChangeState) -> ChangeState:
    """One break's states in two diffs of disjoint entrypoints against one base → its state over
    both: on the head in one and gone in the other, it was on the base and is still on the head
    (persisting); revealed anywhere is not new; hidden anywhere is not fixed."""
    if ChangeState.PERSISTING in (a, b) or a.on_head != b.on_head:
        return ChangeState.PERSISTING
    if a.on_head:
        return ChangeState.REVEALED if ChangeState.REVEALED in (a, b) else ChangeState.NEW
    return ChangeState.HIDDEN if ChangeState.HIDDEN in (a, b) else ChangeState.FIXED


def folded(contributions: Sequence[tuple[str, ChangeState]]) -> dict[str, ChangeState]:
    """Each fingerprint's state over every diff, folded by `joined`, in the order the report's
    lists keep: a state's fingerprints as the diffs first give them that state; a break persisting
    only because the diffs disagree comes after the others, as it was first new, else revealed."""
    state: dict[str, ChangeState] = {}
    first: dict[tuple[str, ChangeState], int] = {}
    for i, (f, s) in enumerate(contributions):
        state[f] = joined(state[f], s) if f in state else s
        first.setdefault((f, s), i)

    def place(f: str) -> tuple[int, int]:
        s = state[f]
        tiers = (s, ChangeState.NEW, ChangeState.REVEALED) if s is ChangeState.PERSISTING else (s,)
        return min((t, first[(f, p)]) for t, p in enumerate(tiers) if (f, p) in first)

    return {f: state[f] for s in ChangeState for f in sorted((f for f in state if state[f] is s), key=place)}


def union(diffs: Sequence[Diff]) -> Diff:
    """Diffs of disjoint entrypoint sets (shards) against one base → one Diff: each break's states
    folded (`folded`). Its record is the head's first when the head has it, else the base's last
    one in the state it ends in; its entrypoints those that gave it that state."""
    head = diffs[0]
    every = [c for d in diffs for c in d.changes]
    of: dict[str, list[Change]] = {}
    for c in every:
        of.setdefault(c.fingerprint, []).append(c)
    changes = []
    for f, state in folded([(c.fingerprint, c.state) for c in every]).items():
        mine = of[f]
        on_head = [c for c in mine if c.state.on_head]
        record = on_head[0] if on_head else [c for c in mine if c.state is state][-1]
        names = tuple(n for c in mine if c.state is state for n in c.entrypoints)
        changes.append(replace(record, state=state, entrypoints=names))
    return Diff(
        base_ref=head.base_ref,
        base_sha=head.base_sha,
        changes=tuple(changes),
        entrypoints=tuple(e for d in diffs for e in d.entrypoints),
        baseline_source=head.baseline_source,
        notes=tuple({n: None for d in diffs for n in d.notes}),
        recompiles=_recompile_union([d.recompiles for d in diffs if d.recompiles is not None]),
        compared=recorded([c for d in diffs for c in d.compared], changes),
    )


RECOMPILE_STATES = (ChangeState.NEW, ChangeState.FIXED, ChangeState.PERSISTING, ChangeState.HIDDEN)


def _recompile_union(diffs: Sequence[tuple[Recompiled, ...]]) -> tuple[Recompiled, ...] | None:
    """As `union` does for breaks, by the same fold (a recompilation problem is never revealed);
    one that some shard puts down to a new break is that break's, unless it persists."""
    if not diffs:
        return None
    state = folded([(f, s) for d in diffs for f, s in d if s in RECOMPILE_STATES])

    def kept(wanted: ChangeState) -> list[str]:
        return [f for d in diffs for f, s in d if s is wanted and state.get(f) is not ChangeState.PERSISTING]

    by_break = dict.fromkeys(kept(ChangeState.BY_NEW_BREAK))
    found = [
        *((f, s) for f, s in state.items() if not (s is ChangeState.NEW and f in by_break)),
        *((f, ChangeState.NEW_LIMIT) for f in kept(ChangeState.NEW_LIMIT)),
        *((f, ChangeState.BY_NEW_BREAK) for f in by_break),
    ]
    return tuple(sorted(found, key=lambda p: RECOMPILE_ORDER.index(p[1])))


def with_diff(head: Report, result: Diff, base: Report | None = None) -> Report:
    """The head with its diff, each recompilation of code a new break made (`base`: what the
    base compiled) marked with that break."""
    new = _new_breaks(head, result.changes)
    return replace(recompile.attributed(head, recompile.by_new_breaks(head, new, base)), diff=result)
