"""What each break costs, from the run that found it. Pure.

From the trace, per compiled frame: its graphs' op counts and Dynamo's compile time. From the
fast-mode backend's counts (trace/run_counts.py): how many times each graph ran and each compiled
callable was called. Together: how often each frame was entered — a frame that runs eagerly is
entered once per call of the compiled callable that starts in it; any other frame once per run
of one of its graphs — and so what a break in it costs: "runs eagerly on each of 128 calls",
"adds a graph launch per call". Breaks are then ordered by that measured cost (how many times
it is paid), the rule of classify.impact_order breaking ties.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from gbbot.analysis.classify import display_path, impact_order
from gbbot.core.model import BreakCost, EntrypointRuns, FrameMetrics, FrameRuns, GraphBreak, RunCounts, TraceLog

RESUME = "torch_dynamo_resume_in_"  # Dynamo names the function it resumes in after a break so
RESUME_AT = re.compile(r"_at_\d+$")


def frame_runs(log: TraceLog, counts: RunCounts | None, root: str) -> EntrypointRuns | None:
    """Every compiled frame of the trace, measured (files shown relative to `root` when inside
    it); None when the trace has no compiled frame."""
    frames: dict[tuple[str, int], list[FrameMetrics]] = {}
    for m in log.metrics:
        if m.frame_id is not None:
            frames.setdefault((m.log, m.frame_id), []).append(m)
    if not frames:
        return None
    measured = tuple(_frame(key, compiles, counts, root) for key, compiles in sorted(frames.items()))
    if counts is None:
        return EntrypointRuns(None, None, measured)
    return EntrypointRuns(sum(c.calls for c in counts.calls), sum(g.runs for g in counts.graphs), measured)


def _frame(key: tuple[str, int], compiles: list[FrameMetrics], counts: RunCounts | None, root: str) -> FrameRuns:
    log, frame_id = key
    first = compiles[0]
    ids = tuple(f"{frame_id}/{m.compile_index}" for m in compiles if m.compile_index is not None)
    eager = any(m.fail_type for m in compiles)
    times = [m.compile_time_s for m in compiles if m.compile_time_s is not None]
    counted = [g for g in counts.graphs if g.log == log and g.compile_id in ids] if counts else []
    ops = tuple(g.ops for g in counted) if counted else tuple(m.graph_op_count for m in compiles if m.graph_op_count)
    runs = tuple(g.runs for g in counted) if counts is not None else None
    return FrameRuns(
        file=display_path(first.co_filename, root),
        line=first.co_firstlineno,
        function=first.co_name,
        compile_ids=ids,
        graph_ops=ops,
        graph_runs=runs,
        runs_eagerly=eager,
        entries=_entries(first, eager, runs, counts, log),
        compile_time_s=round(sum(times), 6) if times else None,
        log=log,
    )


def _entries(
    first: FrameMetrics, eager: bool, runs: tuple[int, ...] | None, counts: RunCounts | None, log: str
) -> int | None:
    """How many times the frame was entered: for one that runs eagerly, the calls of the compiled
    callable that starts in it (a frame Dynamo gave up on deeper down is not counted: None);
    otherwise the runs of its graphs (None for a frame that made no graph)."""
    if counts is None:
        return None
    if eager:
        called = [
            c.calls
            for c in counts.calls
            if (c.log == log or not c.log)
            and (c.file, c.line, c.name) == (first.co_filename, first.co_firstlineno, first.co_name)
        ]
        return sum(called) if called else None
    return sum(runs) if runs else None


def base_name(function: str) -> str:
    """The function a resume function resumes in: `torch_dynamo_resume_in_forward_at_39` → forward."""
    if not function.startswith(RESUME):
        return function
    return RESUME_AT.sub("", function[len(RESUME) :])


def _owner(frame: FrameRuns, frames: tuple[FrameRuns, ...]) -> FrameRuns:
    """The frame of the function itself, for one of its resume functions (the nearest function of
    that name starting at or above the line it resumes at: one file can hold two `forward`s)."""
    if not frame.function.startswith(RESUME):
        return frame
    name, line = base_name(frame.function), frame.line or 0
    above = [f for f in frames if _same_code_file(f, frame) and f.function == name and (f.line or 0) <= line]
    return max(above, key=lambda f: f.line or 0, default=frame)


def _same_code_file(a: FrameRuns, b: FrameRuns) -> bool:
    return a.log == b.log and a.file == b.file


def split_of(frame: FrameRuns, frames: tuple[FrameRuns, ...]) -> list[FrameRuns]:
    """A function's frame and the resume functions Dynamo made after its breaks, in order."""
    owner = _owner(frame, frames)
    return [f for f in frames if f is owner or (f.function.startswith(RESUME) and _owner(f, frames) is owner)]


def break_cost(brk: GraphBreak, runs: EntrypointRuns) -> BreakCost | None:
    """The cost of `brk`, from the compiled frames it broke. A break in a callee Dynamo inlined is
    reported in each frame on the way (the caller's, the callee's, …): each of their functions
    runs as its graphs and its resume functions' graphs, all within a call of the outermost one
    (the first Dynamo entered), so the cost is counted per entry of that one."""
    by_id = {(f.log, cid): f for f in runs.frames for cid in f.compile_ids}
    broken = [by_id[(log, cid)] for log, _, cid in (c.rpartition(":") for c in brk.compiles) if (log, cid) in by_id]
    if not broken:
        return None
    owners = sorted({id(o): o for o in (_owner(f, runs.frames) for f in broken)}.values(), key=_order)
    outer = owners[0]
    split = sorted({id(f): f for o in owners for f in split_of(o, runs.frames)}.values(), key=_order)
    entries = outer.entries or max((f.entries or 0 for f in split_of(outer, runs.frames)), default=0) or None
    launches = [n for f in split for n in (f.graph_runs or ())]
    times = [f.compile_time_s for f in split if f.compile_time_s is not None]
    counted = any(f.graph_runs is not None for f in split)
    return BreakCost(
        function=outer.function,
        runs_eagerly=any(f.runs_eagerly for f in broken),
        entries=entries,
        calls=runs.calls,
        graph_ops=tuple(n for f in split for n in f.graph_ops),
        launches_per_call=round(sum(launches) / entries, 3) if entries and counted else None,
        compile_time_s=round(sum(times), 6) if times else None,
    )


def _order(frame: FrameRuns) -> tuple:
    """The order Dynamo entered frames in: their ids count up from 0 in each trace file."""
    first = frame.compile_ids[0] if frame.compile_ids else ""
    number = first.partition("/")[0]
    return (frame.log, int(number) if number.isdigit() else 0)


def measured_order(brk: GraphBreak) -> tuple:
    """Most paid first: how many times its frame was entered; then the rule."""
    entries = brk.cost.entries if brk.cost and brk.cost.entries is not None else -1
    return (-entries, *impact_order(brk))


def with_costs(breaks: Iterable[GraphBreak], runs: EntrypointRuns | None) -> tuple[GraphBreak, ...]:
    """Each break with its cost, in measured order (the rule's order when nothing was measured)."""
    costed = [replace(b, cost=break_cost(b, runs)) if runs else b for b in breaks]
    return tuple(sorted(costed, key=measured_order))
