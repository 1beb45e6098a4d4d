"""The numbers a report states, defined once. Pure.

Every view (terminal, markdown, check run, policy line, action outputs, JSON) takes its numbers
from here, so that one fact never reads as two numbers: a break is counted once however many
entrypoints hit it (distinct), and how often it was hit is its occurrences, per entrypoint and in
total.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, fields

from gbbot.core.model import Cause, ChangeState, Diff, FrameRef, GraphBreak, Report, Status

CLEAN = (Status.OK, Status.SKIPPED)
# The counts only a diff has, each the number of its breaks in the state of that name.
DIFF_STATES = (ChangeState.NEW, ChangeState.FIXED, ChangeState.HIDDEN, ChangeState.PERSISTING, ChangeState.REVEALED)


@dataclass(frozen=True)
class BreakCounts:
    """One distinct break across the report's entrypoints."""

    fingerprint: str
    occurrences: tuple[tuple[str, int], ...]  # (entrypoint, times hit there), in report order
    eager_in: tuple[str, ...]  # entrypoints in which its whole frame runs eagerly

    @property
    def total(self) -> int:
        return sum(n for _, n in self.occurrences)

    @property
    def entrypoints(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.occurrences)

    @property
    def frame_eager(self) -> bool:
        return bool(self.eager_in)


@dataclass(frozen=True)
class Counts:
    distinct: int  # breaks not ignored, each once
    occurrences: int  # how often those were hit, all entrypoints together
    ignored: int  # distinct ignored breaks
    graphs: int
    frames_eager: int  # frames that run eagerly in at least one entrypoint
    entrypoints: int
    not_clean: tuple[str, ...]  # entrypoints that failed, timed out, crashed or compiled nothing
    trace_problems: int  # records gbbot read but could not use or attribute
    new: int | None = None  # None without a diff
    fixed: int | None = None
    hidden: int | None = None
    persisting: int | None = None
    revealed: int | None = None  # on the head only because their frame no longer runs eagerly


def per_break(report: Report) -> dict[str, BreakCounts]:
    """Fingerprint → its counts, in the order the report first lists each break."""
    hits: dict[str, dict[str, int]] = {}
    eager: dict[str, dict[str, None]] = {}
    for entry in report.entrypoints:
        for brk in entry.breaks:
            by_entry = hits.setdefault(brk.fingerprint, {})
            by_entry[entry.name] = by_entry.get(entry.name, 0) + brk.count
            if brk.frame_skipped:
                eager.setdefault(brk.fingerprint, {})[entry.name] = None
    return {f: BreakCounts(f, tuple(by_entry.items()), tuple(eager.get(f, {}))) for f, by_entry in hits.items()}


def distinct(breaks: Iterable[GraphBreak]) -> int:
    return len({b.fingerprint for b in breaks})


def eager_frames(report: Report) -> tuple[FrameRef, ...]:
    """The compiled frames that run eagerly in at least one entrypoint, each once."""
    return tuple({f.frame: None for e in report.entrypoints for f in e.frames if f.eager})


def made_eager(brk: GraphBreak) -> tuple[FrameRef, ...]:
    """The frames this break makes run eagerly: the report's (the frame Dynamo was compiling,
    often a caller that inlined the break's function), else, from a report made before frames
    were recorded, the break's own function (line 0: its first line is not known)."""
    if brk.makes_eager:
        return brk.makes_eager
    return (FrameRef(brk.file, 0, brk.function),) if brk.frame_skipped else ()


def _eager_frames(report: Report) -> int:
    """Distinct frames seen running eagerly, counted from the entrypoints' compiled frames. An
    entrypoint read from a report made before frames were recorded counts as it did then: the
    sites (file, function) of breaks that made a frame eager, at least its own count."""
    older = [e for e in report.entrypoints if not e.frames]
    sites = {(b.file, b.function) for e in older for b in e.breaks if b.frame_skipped}
    return len(eager_frames(report)) + max([len(sites), *(e.frames_skipped for e in older)])


def counts(report: Report) -> Counts:
    counted = [b for b in report.breaks if not b.ignored]
    d = report.diff
    changed = {state.value: len(d.changed(state)) for state in DIFF_STATES} if d else {}
    return Counts(
        distinct=distinct(counted),
        occurrences=sum(b.count for b in counted),
        ignored=distinct(b for b in report.breaks if b.ignored),
        graphs=sum(e.graph_count for e in report.entrypoints),
        frames_eager=_eager_frames(report),
        entrypoints=len(report.entrypoints),
        not_clean=tuple(e.name for e in report.entrypoints if e.status not in CLEAN),
        trace_problems=sum(len(e.trace_problems) for e in report.entrypoints),
        **changed,
    )


def as_json(c: Counts) -> dict:
    """The counts as the report's JSON states them: a diff's only with a diff."""
    diff = {state.value for state in DIFF_STATES}
    data = {f.name: getattr(c, f.name) for f in fields(c) if c.new is not None or f.name not in diff}
    return {**data, "not_clean": list(c.not_clean)}


def by_cause(diff: Diff, cause: Cause) -> tuple[Counter[ChangeState], int, int]:
    """On a dependency change, what is put down to `cause`: the breaks by state, and the
    recompilation problems that came and went."""
    found = diff.dependencies
    if found is None:
        return Counter(), 0, 0
    breaks = Counter(c.state for c in diff.changes if found.cause(c.fingerprint) is cause)
    came = sum(1 for f in diff.recompiled(ChangeState.NEW, ChangeState.NEW_LIMIT) if found.cause(f) is cause)
    return breaks, came, sum(1 for f in diff.recompiled(ChangeState.FIXED) if found.cause(f) is cause)
