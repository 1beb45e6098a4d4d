"""The records that flow through gbbot: frozen values, no I/O.

parse → RawBreak, classify → GraphBreak, run → RunOutcome, report → Report.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from gbbot.core.fixes import FixResult

# In a pytest: run's TORCH_TRACE directory, gbbot's pytest plugin keeps the node id of the test
# running now (gbbot/child/pytest_plugin.py): the progress line and a timeout's reason name it.
RUNNING_TEST_FILE = "gbbot-running-test.txt"


class Status(str, enum.Enum):
    OK = "ok"
    FAILED = "failed"  # exited non-zero
    TIMEOUT = "timeout"
    CRASHED = "crashed"  # killed by a signal, or could not start
    SKIPPED = "skipped"
    # Ran and exited 0 but compiled nothing: its "no graph breaks" would be a false green.
    NO_COMPILE = "no_compile"
    INTERRUPTED = "interrupted"  # stopped by Ctrl-C or SIGTERM to gbbot, not by anything it did


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
    rank: int | None = None  # the distributed rank whose trace it came from, when there were several
    # Under fullgraph=True the break raised instead of splitting the graph: only the frame's
    # compilation_metrics record tells of it.
    fullgraph_failure: bool = False
    test: str | None = None  # the pytest node id that was running when it was traced
    # Which compile traced it (the envelope's frame_id / frame_compile_id, counted per trace file
    # `log`): what ties a break to the frame Dynamo was compiling, often a caller of its function.
    frame_id: int | None = None
    compile_index: int | None = None
    log: str = ""
    # The record ends its frame's compile instead of splitting the graph there (Dynamo fell back
    # to eager for the frame, or could not resume and skipped the rest of it): torch does not
    # count such a record in counters["graph_break"], and neither do occurrences.
    ends_frame: bool = False
    # The compile raised an error that is no graph break (a shape mismatch found while tracing):
    # the run stopped there. Such a record is the entrypoint's failure, never one of its breaks.
    compile_error: bool = False


@dataclass(frozen=True)
class FrameMetrics:
    """The parts of a `compilation_metrics` record gbbot uses."""

    co_name: str
    co_filename: str
    graph_op_count: int | None
    fail_type: str | None
    fail_reason: str | None = None
    # Which compile of which frame (the envelope's frame_id / frame_compile_id) and why it
    # recompiled: what recompilations are read from.
    frame_id: int | None = None
    compile_index: int | None = None
    co_firstlineno: int | None = None
    recompile_reason: str | None = None
    fail_file: str | None = None  # the user frame the failure happened in
    fail_line: int | None = None
    log: str = ""  # the trace file it came from: each file counts its frame ids from 0
    compile_time_s: float | None = None  # Dynamo's time on this compile (entire_frame_compile_time_s)


@dataclass(frozen=True)
class FrameStart:
    """A `dynamo_start` record: the Python stack (outermost first) when a compile began."""

    frame_id: int
    compile_index: int
    stack: tuple[Frame, ...]
    log: str = ""  # the trace file it came from: each file counts its frame ids from 0


@dataclass(frozen=True)
class DynamicSymbol:
    """A `create_symbol` record: a size or scalar that a compile made dynamic, by its source."""

    frame_id: int
    compile_index: int
    source: str  # e.g. "L['x'].size()[0]", "L['n']"
    log: str = ""  # the trace file it came from: each file counts its frame ids from 0


@dataclass(frozen=True)
class GraphRuns:
    """One graph the fast-mode backend captured: the compile that made it, its size, how many
    times it ran during the entrypoint."""

    compile_id: str  # "frame/compile" as the trace's envelopes number them, e.g. "1/0"
    ops: int  # call_function / call_method / call_module nodes
    nodes: int
    runs: int
    log: str = ""  # the trace file of the process that ran it


@dataclass(frozen=True)
class CallCount:
    """How many times one compiled callable (the code it starts in) was called."""

    file: str
    line: int
    name: str
    calls: int
    log: str = ""


@dataclass(frozen=True)
class RunCounts:
    """What an entrypoint did with what Dynamo made, counted by the fast-mode backend."""

    graphs: tuple[GraphRuns, ...] = ()
    calls: tuple[CallCount, ...] = ()


@dataclass(frozen=True)
class TraceLog:
    """What a structured trace (or a TORCH_LOGS text) holds, plus what could not be read."""

    breaks: tuple[RawBreak, ...]
    metrics: tuple[FrameMetrics, ...]
    torch_version: str | None = None
    problems: tuple[str, ...] = ()  # records damaged or unusable, in words
    starts: tuple[FrameStart, ...] = ()
    symbols: tuple[DynamicSymbol, ...] = ()


@dataclass(frozen=True)
class LibrarySite:
    """Where inside an installed package (or torch) a break happened, for a break reported at the
    repository line that called into it. `path` is relative to the install root, so it starts
    with the package's directory (transformers/models/bert/modeling_bert.py)."""

    package: str
    path: str
    line: int
    function: str = ""
    code: str = ""


@dataclass(frozen=True)
class BreakCost:
    """What a break costs, from the run that found it: the compiled frame it broke (with the
    resume functions Dynamo made after it), how often that frame was entered, and its graphs."""

    function: str  # the compiled frame's code name
    runs_eagerly: bool  # the whole frame ran uncompiled
    entries: int | None  # times the frame was entered; None: not counted (faithful mode)
    graph_ops: tuple[int, ...]  # the frame's graphs (it, then its resume functions), op counts
    launches_per_call: float | None  # runs of those graphs per call
    compile_time_s: float | None  # Dynamo's time compiling them


@dataclass(frozen=True)
class EntrypointRuns:
    """What an entrypoint ran of what Dynamo made, counted by the fast-mode backend."""

    calls: int  # calls of its compiled callables (models, functions)
    graph_launches: int  # runs of captured graphs, in all

    @property
    def launches_per_call(self) -> float | None:
        return self.graph_launches / self.calls if self.calls else None


@dataclass(frozen=True)
class FrameRef:
    """A compiled frame's identity: the code object Dynamo traced (`co_filename`,
    `co_firstlineno`, `co_name` of its compilation_metrics). `file` is repository-relative, or
    from the package directory on for a library (transformers/generation/utils.py). A resume
    function Dynamo made after a break is its original function's frame."""

    file: str
    line: int
    function: str
    # The enclosing class and function names as the source says them (Block.forward), for
    # display; not part of the identity. "" when the source was not at hand.
    qualname: str = field(default="", compare=False)

    @property
    def name(self) -> str:
        return self.qualname or self.function

    @property
    def across(self) -> tuple[str, str] | tuple[str, str, int]:
        """What stays the same of a frame from one commit to another: its file and qualname (an
        edit above moves its first line); without the source, its name and first line too."""
        return (self.file, self.qualname) if self.qualname else (self.file, self.function, self.line)

    def __str__(self) -> str:
        return f"{self.name} ({self.file.rsplit('/', 1)[-1]}:{self.line})"


@dataclass(frozen=True)
class CompiledFrame:
    """One frame Dynamo compiled in an entrypoint: its compiles, what they produced, and whether
    it runs eagerly (a compile of it fell back to eager) and because of which break."""

    frame: FrameRef
    compile_ids: tuple[str, ...]  # "frame_id/compile_index", in trace order
    graphs: int  # compiles that produced a non-empty graph
    eager: bool
    eager_by: str | None = None  # fingerprint of the break that made it run eagerly
    breaks: tuple[str, ...] = ()  # fingerprints of the breaks traced in it
    # Measured in the same run (analysis/cost.py): each graph's op count (its own compiles', then
    # its resume functions', in trace order), how many times each ran (None: not counted, as in
    # faithful mode), how many times the frame was entered, Dynamo's compile time for it.
    graph_ops: tuple[int, ...] = ()
    graph_runs: tuple[int, ...] | None = None
    entries: int | None = None
    compile_time_s: float | None = None


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
    library_site: LibrarySite | None = None  # the frame that broke, when outside the repository
    ranks: int = 1  # distributed ranks that saw it (one trace per rank); `count` is per rank
    fullgraph_failure: bool = False  # this break made a fullgraph=True compile fail
    tests: tuple[str, ...] = ()  # pytest node ids during which it was traced (pytest: entrypoints)
    # The whole statement `code` is one line of (`image_ids = torch.repeat_interleave(` and the
    # lines after it), for display; "" when the statement is that one line. Not part of identity.
    statement: str = ""
    # The compiled frames it was traced in, first traced first (the frame being compiled, which
    # is its own function's or a caller's that inlined it), and the frames it made run eagerly.
    frames: tuple[FrameRef, ...] = ()
    makes_eager: tuple[FrameRef, ...] = ()
    cost: BreakCost | None = None  # measured in the run that found it (fast mode counts runs)

    @property
    def key(self) -> str:
        return self.gb_id or self.gb_type

    @property
    def frame(self) -> FrameRef | None:
        """The frame it was first traced in: the compile that met it."""
        return self.frames[0] if self.frames else None

    @property
    def eager_callers(self) -> tuple[FrameRef, ...]:
        """The frames it makes run eagerly other than its own function's: a caller whose loop
        inlined its function, say. Without the source a frame's name has no class, and one of
        the same file and bare name counts as its own."""
        bare = self.function.rsplit(".", 1)[-1]
        return tuple(
            f
            for f in self.makes_eager
            if f.file != self.file or (f.qualname != self.function if f.qualname else f.function != bare)
        )


@dataclass(frozen=True)
class CompileError:
    """A compile that raised and ended the run (torch's USER_ERROR kind: the code fails in eager
    too, or Dynamo cannot go on): the entrypoint's failure, counted in no break total."""

    gb_type: str
    gb_id: str | None
    category: Category
    file: str  # repository-relative, where the user's code was when it raised
    line: int
    function: str
    code: str
    explanation: str  # its first sentence

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What makes two runs' errors the same error: its kind and where, not its line number."""
        return (self.gb_id or self.gb_type, self.file, self.function, " ".join(self.code.split()))


@dataclass(frozen=True)
class RecompileReason:
    """One distinct reason a frame recompiled: the guard that failed, by kind."""

    fingerprint: str  # file + function qualname + guard kind
    kind: str  # a guard kind of gbbot/data/recompile_rules.yaml
    guard: str  # the first failing guard's text, shortened
    count: int  # recompilations it caused
    dynamic: bool  # automatic dynamic: recompiled once, then the value stayed dynamic
    cause: str
    advice: str
    line: int | None = None  # the user line the guard points at, in `file` of the frame
    code: str = ""


@dataclass(frozen=True)
class Recompilation:
    """A frame that compiled more than once, attributed like a break (innermost repo frame)."""

    fingerprint: str  # file + function qualname
    file: str
    line: int
    function: str
    compilations: int
    limit_hit: bool  # hit the recompile limit: runs eagerly for the rest of the process
    reasons: tuple[RecompileReason, ...]
    doc_url: str
    frame: FrameRef | None = None  # the compiled frame that recompiled
    # The compiled frame is an installed package's function (einops' `rearrange` hitting the limit):
    # where, while `file`/`line` stay the repository line that called into it.
    library_site: LibrarySite | None = None
    # The compiled frame is a resume function Dynamo made after a break at this line of `file`
    # (`torch_dynamo_resume_in_forward_at_12`): it exists because of that break.
    resumes_at: int | None = None
    # Set by a diff: the fingerprint of the new break this resume function was made after. Its
    # recompilations are that break's doing, not a recompilation problem of their own.
    new_break: str | None = None

    @property
    def info_only(self) -> bool:
        """Automatic dynamic shapes at work: nothing to fix."""
        return not self.limit_hit and all(r.dynamic for r in self.reasons)


@dataclass(frozen=True)
class Reads:
    """What one entrypoint's process read, as recorded while it ran (the interpreter's installation
    left out): absolute paths of the files it opened for reading, of the directories it listed and
    by whom, the module names the import system looked for in each directory, and the first way it
    started another program, whose reads nobody saw. gbbot/analysis/reads.py decides what they imply."""

    files: frozenset[str]
    directories: frozenset[str]  # listed by the program: every entry could matter
    spawned: str | None = None  # e.g. "subprocess.Popen"
    absent: frozenset[str] = frozenset()  # files it tried to open that were not there after it ran
    overflow: bool = False  # more paths than a record holds: the lists are not the whole story
    # directory → the module names the import system looked for there
    searched: Mapping[str, frozenset[str]] = field(default_factory=dict)
    metadata: frozenset[str] = frozenset()  # searched for installed packages (*.dist-info, *.egg-info)

    MAX_PATHS: ClassVar[int] = 20_000  # per list, as a child caps it; past it the record says it overflowed


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
    reads: Reads | None = None  # None: the backend does not record what a run reads


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
    recompiles: tuple[Recompilation, ...] = ()  # impact order
    frames: tuple[CompiledFrame, ...] = ()  # trace order; () in a report made before frames were read
    runs: EntrypointRuns | None = None  # None: not counted (faithful mode, an older report)
    compile_error: CompileError | None = None  # the compile error that ended the run, if one did
    # Not run on a diff's head: this is the base's result, and why (its reads show the change cannot
    # reach it).
    from_base: str | None = None


class Why(str, enum.Enum):
    """What a reason says, by id; gbbot/core/words.py words each, with the arguments named here."""

    NO_BASELINE = "no-baseline"  # entrypoint, base commit, why (a Reason), breaks counted as new (0: none)
    NOT_IN_BASE = "not-in-base"  # the base's config or report does not have the entrypoint
    NOT_DEFINED = "not-defined"  # the line of its error that says what is missing ("" when none)
    LACKS = "lacks"  # what the base's checkout lacked (a Reason), that error line, whether the change adds it
    UNTRACKED = "untracked"  # path: only in the working tree
    ADDED = "added"  # path: new in the change
    MISSING_MODULE = "missing-module"  # module: on neither side
    TIMED_OUT = "timed-out"
    SKIPPED = "skipped"  # why, as the run said it ("" when it did not)
    ENDED = "ended"  # how (a Status value), exit code or None, the output's last line
    STILL_FAILING = "still-failing"  # entrypoint, the compile error's id, where it is
    SAID = "said"  # words read back from a report


@dataclass(frozen=True)
class Reason:
    """Why something is so, as data: an id and its arguments (pylint's style); worded once, by
    gbbot/core/words.py, for every surface."""

    why: Why
    args: tuple = ()


@dataclass(frozen=True)
class EntrypointDiff:
    """One entrypoint's side of a diff besides its changes (`Diff.compared`)."""

    name: str
    graph_delta: int | None = None
    no_baseline: Reason | None = None  # why it has nothing to compare with (Why.NO_BASELINE)
    # Set when head and base failed with the same compile error: compared, not "no baseline".
    still_failing: Reason | None = None
    # An entrypoint the change did not add whose base gave nothing to compare with: why ("it timed
    # out there"). The comparison could not be made: its breaks count as new.
    lost_baseline: Reason | None = None


class ChangeState(str, enum.Enum):
    """What a change did to one distinct break or recompilation problem, as the report's JSON names
    its lists."""

    NEW = "new"
    FIXED = "fixed"
    PERSISTING = "persisting"
    HIDDEN = "hidden"  # gone from the head only because a frame it lies in now runs eagerly: not fixed
    REVEALED = "revealed"  # on the head only because a frame it lies in ran eagerly on the base: not new
    # Recompilation problems only: a new one whose frame hits the recompile limit on the head only
    # (it is new too), and one of a resume function a new break made (that break's, not new).
    NEW_LIMIT = "new_limit"
    BY_NEW_BREAK = "by_new_break"

    @property
    def on_head(self) -> bool:
        """Whether the head has the break (new, revealed, persisting), so its record is the head's."""
        return self in (ChangeState.NEW, ChangeState.REVEALED, ChangeState.PERSISTING)


# An entrypoint's own changes in the order a diff keeps them: what the head has, then what went.
SIDE_ORDER = (ChangeState.NEW, ChangeState.REVEALED, ChangeState.PERSISTING, ChangeState.FIXED, ChangeState.HIDDEN)
# Recompilation problems in the order a diff keeps them, state by state (as the report's JSON lists them).
RECOMPILE_ORDER = tuple(ChangeState(s) for s in ("new", "fixed", "persisting", "new_limit", "hidden", "by_new_break"))


@dataclass(frozen=True)
class Change:
    """One distinct break and what the change did to it, settled once by
    gbbot/analysis/break_diff.py: in one entrypoint's own comparison (`Diff.compared`), or over
    the diff's entrypoints, folded (`Diff.changes`)."""

    brk: GraphBreak  # the head's first record of it; the base's record when it is fixed or hidden
    state: ChangeState
    entrypoints: tuple[str, ...] = ()  # those whose own comparison gives it this state, in report order
    # Hidden: the head break that makes its frame run eagerly (None: no break record names one).
    hidden_by: GraphBreak | None = None

    @property
    def fingerprint(self) -> str:
        return self.brk.fingerprint


# A recompilation problem's fingerprint and what the change did to it (recompilations are compared
# over whole reports, not per entrypoint).
Recompiled = tuple[str, ChangeState]


@dataclass(frozen=True)
class PackageChange:
    """A distribution whose version differs between the base's environment and the head's."""

    name: str
    base: str | None  # None: not installed in the base's environment
    head: str | None  # None: not installed in the head's


class Cause(str, enum.Enum):
    """What brought a break that came or went, on a pull request that changes its dependencies."""

    DEPENDENCIES = "dependencies"  # none of its frames crosses a line the pull request changed
    CODE = "code"  # a frame of it crosses a line the pull request changed
    BOTH = "both"  # code and dependencies changed, and it has no repository frame to tell by


@dataclass(frozen=True)
class DependencyChange:
    """A diff whose sides each ran in an environment built from their own requirements: which
    versions differ, and what each break that came or went is put down to (by fingerprint)."""

    packages: tuple[PackageChange, ...]
    causes: tuple[tuple[str, Cause], ...] = ()
    code_changed: bool = False  # the pull request changes Python code too

    def cause(self, fingerprint: str) -> Cause | None:
        return dict(self.causes).get(fingerprint)

    @property
    def summary(self) -> str:
        """`tinydep 1.0 → 2.0`, `torch 2.13.0 → 2.14.1, numpy 1.26.4 → 2.0.0`, the first three."""
        shown = [f"{p.name} {p.base or '(none)'} → {p.head or '(none)'}" for p in self.packages[:3]]
        more = len(self.packages) - 3
        return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


@dataclass(frozen=True)
class Diff:
    base_ref: str
    base_sha: str
    changes: tuple[Change, ...]  # each distinct break compared, each once, folded over the entrypoints
    entrypoints: tuple[EntrypointDiff, ...]
    baseline_source: str = "run"  # run | cache | file | record (an audit record)
    notes: tuple[str, ...] = ()  # what a reader must know about the comparison (dirty tree, labelled baseline)
    recompiles: tuple[Recompiled, ...] | None = None
    # Each side ran in its own environment (the change touches what `setup:` installs).
    dependencies: DependencyChange | None = None
    # Each entrypoint's own comparison: one per (entrypoint, break), in SIDE_ORDER, with the record
    # (and, hidden, the hider) of `changes`.
    compared: tuple[Change, ...] = ()

    def changed(self, state: ChangeState) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.state is state)

    def breaks(self, state: ChangeState) -> tuple[GraphBreak, ...]:
        """The records of one state's breaks (the base's for fixed and hidden ones)."""
        return tuple(c.brk for c in self.changes if c.state is state)

    def state(self, brk: GraphBreak) -> ChangeState | None:
        """What the change did to `brk` (a record of either side), or None when it was not compared
        (ignored, or in no entrypoint the diff covers)."""
        return self._states.get(brk.fingerprint)

    @functools.cached_property
    def _states(self) -> Mapping[str, ChangeState]:
        return {c.fingerprint: c.state for c in self.changes}

    def recompiled(self, *states: ChangeState) -> tuple[str, ...]:
        """The fingerprints of recompilation problems in `states`, one state after the other."""
        found = self.recompiles or ()
        return tuple(f for state in states for f, s in found if s is state)


@dataclass(frozen=True)
class Tool:
    name: str = "gbbot"
    version: str = ""


@dataclass(frozen=True)
class Report:
    tool: Tool
    torch_version: str | None
    mode: Mode | None  # None: not known (a report parsed from logs someone else made)
    commit: str | None
    entrypoints: tuple[EntrypointReport, ...]
    diff: Diff | None = None
    config_hash: str | None = None
    shard: str | None = None
    schema_version: int = 1
    # What `gbbot fix` concluded per break, in report order (the JSON's `extra.fixes`); None: no
    # fix step looked at this report, () : one did and had nothing to say.
    fixes: tuple[FixResult, ...] | None = None
    merged_shards: tuple[str | None, ...] = ()  # the shards `gbbot merge` joined (`extra.merged_shards`)
    # A baseline rebuilt from an audit record: the breaks the record saw in some runs only, to
    # settle against the head. Never in the JSON.
    flaky: tuple[str, ...] = ()
    # The versions that ran, where the sides of a diff ran in environments of their own: torch,
    # and each distribution whose version differs between them (name, version).
    packages: tuple[tuple[str, str], ...] = ()

    @property
    def breaks(self) -> tuple[GraphBreak, ...]:
        return tuple(b for e in self.entrypoints for b in e.breaks)
