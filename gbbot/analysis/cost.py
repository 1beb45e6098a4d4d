"""What each break costs, from the run that found it. Pure.

From the trace, per compiled frame (analysis/frames.py: a function with the resume functions
Dynamo made after its breaks): its graphs' op counts and Dynamo's compile time. From the fast-mode
backend's counts (trace/run_counts.py): how many times each graph ran and each compiled callable
was called. Together, how often each frame was entered — a frame that runs eagerly once per call
of the compiled callable that starts in it, any other once per run of its own first graph — and
so what a break costs: "`forward` runs eagerly on each of 128 calls", "splits `forward` into 3
graphs of 41 / 2 / 37 ops: 3 graph launches and eager code between on each of 128 calls". Breaks
are ordered by how many times that cost is paid, the rule of classify.impact_order breaking ties.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from gbbot.analysis.classify import display_path, impact_order
from gbbot.analysis.frames import CompileKey, FrameIndex, compile_key
from gbbot.core.model import (
    BreakCost,
    CompiledFrame,
    EntrypointRuns,
    FrameMetrics,
    FrameRef,
    GraphBreak,
    RunCounts,
    TraceLog,
)


@dataclass(frozen=True)
class _Compile:
    """One compile of a frame, measured."""

    own: bool  # a compile of the function itself, not of one of its resume functions
    ops: tuple[int, ...]  # its graphs' op counts (none: it made no graph)
    runs: tuple[int, ...] | None  # how many times each ran; None: not counted
    seconds: float | None


def entrypoint_runs(counts: RunCounts | None) -> EntrypointRuns | None:
    if counts is None:
        return None
    return EntrypointRuns(sum(c.calls for c in counts.calls), sum(g.runs for g in counts.graphs))


def measured(
    frames: Iterable[CompiledFrame], idx: FrameIndex, log: TraceLog, counts: RunCounts | None, root: str
) -> tuple[CompiledFrame, ...]:
    """Each compiled frame with its figures: graphs' op counts and runs, entries, compile time."""
    by_ref: dict[FrameRef, list[_Compile]] = {}
    for m in log.metrics:
        key = compile_key(m.log, m.frame_id, m.compile_index)
        if key is not None and key in idx.refs:
            by_ref.setdefault(idx.refs[key], []).append(_compile(m, key, counts))
    calls = _calls(counts, root)
    return tuple(_figures(f, by_ref.get(f.frame, []), calls, counts is not None) for f in frames)


def _compile(m: FrameMetrics, key: CompileKey, counts: RunCounts | None) -> _Compile:
    own = not m.co_name.startswith("torch_dynamo_resume_in_")
    if counts is None:
        return _Compile(own, (m.graph_op_count,) if m.graph_op_count else (), None, m.compile_time_s)
    compile_id = f"{key[1]}/{key[2]}"
    graphs = [g for g in counts.graphs if g.compile_id == compile_id and g.log in (key[0], "")]
    return _Compile(own, tuple(g.ops for g in graphs), tuple(g.runs for g in graphs), m.compile_time_s)


def _calls(counts: RunCounts | None, root: str) -> Mapping[FrameRef, int]:
    """Calls of each compiled callable, by the frame it starts in."""
    found: dict[FrameRef, int] = {}
    for c in counts.calls if counts else ():
        ref = FrameRef(display_path(c.file, root), c.line, c.name)
        found[ref] = found.get(ref, 0) + c.calls
    return found


def _figures(frame: CompiledFrame, compiles: list[_Compile], calls: Mapping[FrameRef, int], counted: bool):
    runs = tuple(n for c in compiles for n in c.runs or ()) if counted else None
    seconds = [c.seconds for c in compiles if c.seconds is not None]
    return replace(
        frame,
        graph_ops=tuple(n for c in compiles for n in c.ops),
        graph_runs=runs,
        entries=_entries(frame, compiles, calls) if counted else None,
        compile_time_s=round(sum(seconds), 6) if seconds else None,
    )


def _entries(frame: CompiledFrame, compiles: list[_Compile], calls: Mapping[FrameRef, int]) -> int | None:
    """How many times the frame was entered: the calls of the compiled callable that starts in
    it, when there is one; else the runs of its own first graphs (each entry runs one of them);
    else, when its own compiles made no graph, the most runs of a resume function's graph (each
    entry that reached the break). None: nothing tells (a frame run eagerly deep inside another)."""
    if frame.frame in calls:
        return calls[frame.frame]
    own = [n for c in compiles if c.own for n in c.runs or ()]
    if own:
        return sum(own)
    resumed = [n for c in compiles if not c.own for n in c.runs or ()]
    return max(resumed) if resumed and not frame.eager else None


def break_cost(brk: GraphBreak, frames: Mapping[FrameRef, CompiledFrame]) -> BreakCost | None:
    """The cost of `brk`, from the compiled frames it was traced in. A break in a callee Dynamo
    inlined is traced in each frame on the way (the caller's first, then the callee's, …); each runs
    as its graphs within a call of the first, so the cost is counted per entry of that one. A
    break that makes a frame run eagerly costs that frame's entries."""
    traced = [frames[ref] for ref in (*brk.makes_eager, *brk.frames) if ref in frames]
    if not traced:
        return None
    outer = traced[0]
    split = list({f.frame: f for f in traced}.values())
    counted = outer.graph_runs is not None
    launches = sum(n for f in split for n in f.graph_runs or ())
    seconds = [f.compile_time_s for f in split if f.compile_time_s is not None]
    return BreakCost(
        function=outer.frame.function,
        runs_eagerly=bool(brk.makes_eager),
        entries=outer.entries,
        graph_ops=tuple(n for f in split for n in f.graph_ops),
        launches_per_call=round(launches / outer.entries, 3) if counted and outer.entries else None,
        compile_time_s=round(sum(seconds), 6) if seconds else None,
    )


def measured_order(brk: GraphBreak) -> tuple:
    """Most paid first: how many times its frame was entered; then the rule."""
    entries = brk.cost.entries if brk.cost and brk.cost.entries is not None else -1
    return (-entries, *impact_order(brk))


def with_costs(breaks: Iterable[GraphBreak], frames: Iterable[CompiledFrame]) -> tuple[GraphBreak, ...]:
    """Each break with its cost, in measured order (the rule's order when nothing was measured)."""
    by_ref = {f.frame: f for f in frames}
    costed = [replace(b, cost=break_cost(b, by_ref)) for b in breaks]
    return tuple(sorted(costed, key=measured_order))
