"""Compiled frames: the code objects Dynamo compiled, which break each compile met, whether a
frame runs eagerly and because of which break. Pure.

A break sits in some function (its site); the frame Dynamo was compiling when it met the break is
often a caller that inlined that function. When the break cannot be compiled around (a graph
break inside a loop), the caller's whole frame runs eagerly, and everything else in it goes
untraced. Every record of a trace names its compile (`frame_id`, `frame_compile_id`, counted per
trace file); a frame's `compilation_metrics` name its code object (`co_filename`,
`co_firstlineno`, `co_name`) and say whether the compile fell back to eager (`fail_type`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from gbbot.analysis.classify import SourceLookup, display_path, in_repo
from gbbot.core.model import CompiledFrame, FrameMetrics, FrameRef, GraphBreak, RawBreak, TraceLog
from gbbot.trace.tracelog import original_function

CompileKey = tuple[str, int, int]  # (trace file, frame_id, compile_index)


def compile_key(log: str, frame_id: int | None, compile_index: int | None) -> CompileKey | None:
    return None if frame_id is None or compile_index is None else (log, frame_id, compile_index)


@dataclass(frozen=True)
class FrameIndex:
    """Which frame each compile compiled, and the compiles that made their frame run eagerly."""

    refs: Mapping[CompileKey, FrameRef] = field(default_factory=dict)
    eager: frozenset[CompileKey] = frozenset()

    def of(self, raw: RawBreak) -> FrameRef | None:
        key = compile_key(raw.log, raw.frame_id, raw.compile_index)
        return self.refs.get(key) if key else None

    def made_eager(self, raw: RawBreak) -> FrameRef | None:
        """The frame `raw` made run eagerly: its compile fell back to eager at it."""
        key = compile_key(raw.log, raw.frame_id, raw.compile_index)
        if key is None or key not in self.eager or raw.fullgraph_failure or raw.compile_error:
            return None
        return self.refs.get(key) if (raw.frame_skipped or raw.ends_frame) else None


def _original_lines(metrics: Iterable[FrameMetrics], root: str) -> dict[tuple[str, str], list[int]]:
    """(file, function) → the first lines of the frames compiled under that name, not resumes."""
    found: dict[tuple[str, str], list[int]] = {}
    for m in metrics:
        if original_function(m.co_name) == m.co_name and m.co_firstlineno is not None:
            found.setdefault((display_path(m.co_filename, root), m.co_name), []).append(m.co_firstlineno)
    return found


def identity(
    m: FrameMetrics, root: str, originals: Mapping[tuple[str, str], list[int]], lookup: SourceLookup
) -> FrameRef:
    """The frame a compile compiled. A resume function (`torch_dynamo_resume_in_f_at_12`) starts
    at the break it resumes after; its frame is `f`'s: the nearest `f` compiled above it."""
    file = display_path(m.co_filename, root)
    function = original_function(m.co_name)
    line = m.co_firstlineno or 0
    if function != m.co_name:
        above = [first for first in originals.get((file, function), ()) if first <= line]
        line = max(above, default=line)
    source = lookup(file) if in_repo(m.co_filename, root) else None
    scope = source.scope(line) if source else None
    qualname = scope.qualname if scope and scope.start == line and scope.qualname.endswith(function) else ""
    return FrameRef(file, line, function, qualname)


def index(log: TraceLog, root: str, lookup: SourceLookup = lambda _path: None) -> FrameIndex:
    originals = _original_lines(log.metrics, root)
    refs: dict[CompileKey, FrameRef] = {}
    failed: set[CompileKey] = set()
    for m in log.metrics:
        key = compile_key(m.log, m.frame_id, m.compile_index)
        if key is None:
            continue
        refs.setdefault(key, identity(m, root, originals, lookup))
        if m.fail_type:
            failed.add(key)
    # A compile that raised (fullgraph=True, or an error) stopped the program: no frame runs eagerly.
    stopped = {
        compile_key(r.log, r.frame_id, r.compile_index) for r in log.breaks if r.fullgraph_failure or r.compile_error
    }
    return FrameIndex(refs, frozenset(failed - stopped))


def compiled_frames(idx: FrameIndex, breaks: Iterable[GraphBreak], log: TraceLog) -> tuple[CompiledFrame, ...]:
    """The entrypoint's frames in the order their first compile began, each with its compiles,
    the breaks traced in it and the break that made it run eagerly (when one did)."""
    breaks = tuple(breaks)
    compiles: dict[FrameRef, dict[str, None]] = {}
    graphs: dict[FrameRef, int] = {}
    for m in log.metrics:
        key = compile_key(m.log, m.frame_id, m.compile_index)
        ref = idx.refs.get(key) if key else None
        if ref is None:
            continue
        compiles.setdefault(ref, {})[f"{m.frame_id}/{m.compile_index}"] = None
        graphs[ref] = graphs.get(ref, 0) + (1 if m.graph_op_count else 0)
    eager = {idx.refs[key] for key in idx.eager}
    return tuple(
        CompiledFrame(
            frame=ref,
            compile_ids=tuple(ids),
            graphs=graphs.get(ref, 0),
            eager=ref in eager,
            eager_by=next((b.fingerprint for b in breaks if ref in b.makes_eager), None),
            breaks=tuple(b.fingerprint for b in breaks if ref in b.frames),
        )
        for ref, ids in compiles.items()
    )
