"""The records that flow through gbbot: frozen values, no I/O.

parse → RawBreak, classify → GraphBreak, run → RunOutcome, report → Report.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Status(str, enum.Enum):
    OK = "ok"
    FAILED = "failed"  # exited non-zero
    TIMEOUT = "timeout"
    CRASHED = "crashed"  # killed by a signal, or could not start
    SKIPPED = "skipped"


class Category(str, enum.Enum):
    """Dynamo's hint categories (torch/_dynamo/graph_break_hints.py) plus UNKNOWN."""

    USER_ERROR = "USER_ERROR"
    DYNAMO_BUG = "DYNAMO_BUG"
    DIFFICULT = "DIFFICULT"
    FUNDAMENTAL = "FUNDAMENTAL"
    SUPPORTABLE = "SUPPORTABLE"
    CAUSED_BY_EARLIER_GRAPH_BREAK = "CAUSED_BY_EARLIER_GRAPH_BREAK"
    INFERENCE_MODE = "INFERENCE_MODE"
    SPARSE_TENSOR = "SPARSE_TENSOR"
    UNKNOWN = "UNKNOWN"


class Origin(str, enum.Enum):
    USER = "user"
    THIRD_PARTY = "third_party"
    TORCH = "torch"


class Mode(str, enum.Enum):
    FAST = "fast"
    FAITHFUL = "faithful"


@dataclass(frozen=True)
class Frame:
    """One entry of a user code traceback; `file` as printed (absolute) until classified."""

    file: str
    line: int
    function: str
    code: str = ""


@dataclass(frozen=True)
class BreakMessage:
    """One link of a graph-break message: gb_type, explanation, hints, doc link."""

    gb_type: str
    gb_id: str | None = None
    explanation: str = ""
    hints: tuple[str, ...] = ()
    doc_url: str | None = None


@dataclass(frozen=True)
class RawBreak:
    """A graph break as read from one trace record, before classification."""

    root: BreakMessage
    consequences: tuple[BreakMessage, ...]  # later links of a chained message (e.g. GB7000)
    stack: tuple[Frame, ...]  # user code traceback, outermost first
    frame_skipped: bool  # Dynamo fell back to eager for the whole frame
    location: Frame | None = None  # "Graph break in user code at FILE:LINE"
    test: str | None = None  # the pytest node id that was running when it was traced


@dataclass(frozen=True)
class FrameMetrics:
    """The parts of a `compilation_metrics` record gbbot uses."""

    co_name: str
    co_filename: str
    graph_op_count: int | None
    fail_type: str | None
    fail_reason: str | None = None


@dataclass(frozen=True)
class TraceLog:
    """What a structured trace (or a TORCH_LOGS text) holds, plus what could not be read."""

    breaks: tuple[RawBreak, ...]
    metrics: tuple[FrameMetrics, ...]
    torch_version: str | None = None
    problems: tuple[str, ...] = ()  # records damaged or unusable, in words


@dataclass(frozen=True)
class GraphBreak:
    fingerprint: str
    gb_id: str | None
    gb_type: str
    category: Category
    origin: Origin
    file: str
    line: int
    function: str
    code: str
    explanation: str
    hints: tuple[str, ...]
    doc_url: str | None
    frame_skipped: bool
    in_loop: bool
    count: int
    caused: tuple[str, ...]
    user_stack: tuple[Frame, ...]
    fix: str | None = None
    ignored: bool = False
    consequences: tuple[str, ...] = ()  # gb_types folded in, for display
    tests: tuple[str, ...] = ()  # pytest node ids during which it was traced (pytest: entrypoints)

    @property
    def key(self) -> str:
        return self.gb_id or self.gb_type


@dataclass(frozen=True)
class RunOutcome:
    """How one entrypoint's process ended."""

    name: str
    status: Status
    exit_code: int | None
    duration_s: float
    stderr_tail: str = ""
    stdout_tail: str = ""
    trace_dir: str | None = None
    result_path: str | None = None
    reason: str = ""  # why skipped / crashed, in words
    env_withheld: tuple[str, ...] = ()  # names of gbbot's variables the entrypoint did not get


@dataclass(frozen=True)
class EntrypointReport:
    name: str
    status: Status
    exit_code: int | None
    duration_s: float
    graph_count: int
    break_count: int
    frames_skipped: int
    breaks: tuple[GraphBreak, ...]
    error: str | None = None
    trace_problems: tuple[str, ...] = ()
    env_withheld: tuple[str, ...] = ()  # names only, sorted: never a value


@dataclass(frozen=True)
class EntrypointDiff:
    """One entrypoint's side of a diff; `no_baseline` says in words why there is none."""

    name: str
    new: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()
    persisting: tuple[str, ...] = ()
    graph_delta: int | None = None
    no_baseline: str | None = None


@dataclass(frozen=True)
class Diff:
    base_ref: str
    base_sha: str
    new: tuple[str, ...]
    fixed: tuple[str, ...]
    persisting: tuple[str, ...]
    entrypoints: tuple[EntrypointDiff, ...]
    fixed_breaks: tuple[GraphBreak, ...] = ()  # the base's records of what was fixed, to render
    baseline_source: str = "run"  # run | cache | file
    notes: tuple[str, ...] = ()  # what a reader must know about the comparison (dirty tree, labelled baseline)


@dataclass(frozen=True)
class Tool:
    name: str = "gbbot"
    version: str = ""


@dataclass(frozen=True)
class Report:
    tool: Tool
    torch_version: str | None
    mode: Mode
    commit: str | None
    entrypoints: tuple[EntrypointReport, ...]
    diff: Diff | None = None
    config_hash: str | None = None
    shard: str | None = None
    schema_version: int = 1
    extra: dict = field(default_factory=dict)

    @property
    def breaks(self) -> tuple[GraphBreak, ...]:
        return tuple(b for e in self.entrypoints for b in e.breaks)
