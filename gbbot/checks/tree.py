"""`gbbot check`: config → run → trace → parse → classify → report, for one source tree."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gbbot.analysis import classify, cost, frames, recompile, report
from gbbot.analysis.source import SourceTree
from gbbot.backends.choose import backend_for
from gbbot.backends.contract import Backend, RunRequest, entrypoint_dir, run_all
from gbbot.core.config import Config, Entrypoint
from gbbot.core.errors import GbbotError
from gbbot.core.model import (
    CompiledFrame,
    CompileError,
    EntrypointReport,
    EntrypointRuns,
    GraphBreak,
    Mode,
    RawBreak,
    Report,
    RunCounts,
    RunOutcome,
    Status,
    TraceLog,
)
from gbbot.edges import git
from gbbot.trace import attribution, logfiles, run_counts, tracelog


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    total: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        try:
            index, total = (int(part) for part in text.split("/"))
        except ValueError:
            raise GbbotError(f"--shard {text!r}: expected I/N, e.g. 1/4") from None
        if not 1 <= index <= total:
            raise GbbotError(f"--shard {text!r}: I must be between 1 and N")
        return cls(index, total)

    def select(self, entrypoints: Sequence[Entrypoint]) -> tuple[Entrypoint, ...]:
        """Deterministic: sorted by name, every N-th starting at I."""
        ordered = sorted(entrypoints, key=lambda e: e.name)
        return tuple(ordered[self.index - 1 :: self.total])

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


@dataclass(frozen=True)
class CheckOptions:
    mode: Mode | None = None  # None: the config's
    jobs: int = 1
    only: tuple[str, ...] = ()  # --entrypoint NAME
    shard: Shard | None = None
    keep_traces: Path | None = None
    save_results: bool = False
    backend: Backend | None = None  # None: the one the config's `runner:` names
    time_calls: bool = False  # the shim times compiled calls (faithful mode; gbbot fix --measure)
    # An overlay venv the entrypoints run in (one side of a dependency-bump diff): fresh processes
    # started with its interpreter, since the warm server forks every child from gbbot's.
    venv: Path | None = None


def select(config: Config, options: CheckOptions) -> tuple[Entrypoint, ...]:
    unknown = [name for name in options.only if config.entrypoint(name) is None]
    if unknown:
        known = ", ".join(e.name for e in config.entrypoints)
        raise GbbotError(f"unknown entrypoint {unknown[0]!r} (the config has: {known})")
    chosen = tuple(e for e in config.entrypoints if not options.only or e.name in options.only)
    return options.shard.select(chosen) if options.shard else chosen


def unattributed(raws: Iterable[RawBreak], root: str) -> tuple[str, ...]:
    """A break without any frame cannot be placed in the code; it is named here so that it is
    counted as a trace problem instead of vanishing from the report."""
    return tuple(
        f"graph break {r.root.gb_id or r.root.gb_type!r} has no user frame, so it is not listed as a break"
        for r in raws
        if classify.attribute(r, root) is None
    )


def classified(
    log: TraceLog, root: str, tree: SourceTree, config: Config | None, name: str, counts: RunCounts | None = None
) -> EntrypointParts:
    """A trace's breaks, classified, tied to the frames Dynamo compiled, and what each costs (with
    the fast-mode backend's `counts`, how often each frame and graph ran; without, the trace's
    figures alone); a compile error that ended the run is kept apart from the breaks."""
    raws = tuple(classify.user_frames(r) for r in log.breaks)
    idx = frames.index(log, root, tree.get)
    ignore = config.ignore if config else ()
    kept = tuple(r for r in raws if not r.compile_error)
    breaks = classify.classify(kept, root, tree.get, ignore, entrypoint=name, frames=idx)
    errors = classify.classify([r for r in raws if r.compile_error], root, tree.get, entrypoint=name, frames=idx)
    error = classify.compile_error(errors[0]) if errors else None
    compiled = cost.measured(frames.compiled_frames(idx, breaks, log), idx, log, counts, root)
    breaks = cost.with_costs(breaks, compiled)
    return EntrypointParts(breaks, compiled, unattributed(raws, root), cost.entrypoint_runs(counts), error)


@dataclass(frozen=True)
class EntrypointParts:
    breaks: tuple[GraphBreak, ...]
    frames: tuple[CompiledFrame, ...]
    unattributed: tuple[str, ...]
    runs: EntrypointRuns | None = None
    compile_error: CompileError | None = None


def analyse(outcome: RunOutcome, root: Path, config: Config, tree: SourceTree) -> tuple[EntrypointReport, TraceLog]:
    trace_dir = Path(outcome.trace_dir) if outcome.trace_dir else None
    tests = attribution.read(trace_dir) if trace_dir else None  # a pytest: entrypoint's tests
    found = logfiles.trace_files(trace_dir) if trace_dir and trace_dir.exists() else []
    log = tracelog.read_path(trace_dir, attribution.owners(trace_dir, tests)) if found else TraceLog((), ())
    failing = attribution.failure_reason(tests) if outcome.status is Status.FAILED else ""
    where = str(root.resolve())
    reason = "\n".join(r for r in (outcome.reason, failing) if r)
    tail = classify.relative_paths(outcome.stderr_tail, where)
    outcome = replace(outcome, reason=classify.relative_paths(reason, where), stderr_tail=tail)
    counts, unread = run_counts.read(trace_dir)
    parts = classified(log, where, tree, config, outcome.name, counts)
    recompiles = recompile.analyse(log, where, tree.get)
    no_compile = report.compiled_nothing(log, len(found))
    problems = (*parts.unattributed, *unread)
    entry = report.entrypoint_report(
        outcome,
        log,
        parts.breaks,
        no_compile,
        problems,
        recompiles,
        frames=parts.frames,
        runs=parts.runs,
        compile_error=parts.compile_error,
    )
    return entry, log


def check(
    root: Path,
    config: Config,
    options: CheckOptions = CheckOptions(),
    on_done: Callable[[RunOutcome], None] | None = None,
) -> Report:
    """Run the selected entrypoints in `root` and build the report."""
    mode = options.mode or config.mode
    entrypoints = select(config, options)
    with tempfile.TemporaryDirectory(prefix="gbbot-") as scratch:
        work = options.keep_traces or Path(scratch)
        requests = [
            RunRequest(
                e,
                root,
                entrypoint_dir(work, e.name),
                mode,
                config.scrub_env,
                options.save_results,
                config.pass_env,
                options.time_calls,
                options.venv,
            )
            for e in entrypoints
        ]
        runner = replace(config.runner, warm=False) if options.venv else config.runner
        backend = options.backend or backend_for(runner)
        outcomes = run_all(requests, backend, options.jobs, on_done)
        tree = SourceTree(root.resolve())
        analysed = [analyse(o, root, config, tree) for o in outcomes]
    version = next((log.torch_version for _, log in analysed if log.torch_version), None)
    return report.new_report(
        (entry for entry, _ in analysed),
        mode,
        version,
        git.head_sha(root),
        config.digest,
        str(options.shard) if options.shard else None,
    )


def skipped(name: str, reason: str) -> EntrypointReport:
    return EntrypointReport(name, Status.SKIPPED, None, 0.0, 0, 0, 0, (), reason)


def from_logs(path: Path, root: Path, name: str) -> Report:
    """A report from logs someone already has (a TORCH_TRACE directory or file, or saved
    TORCH_LOGS=graph_breaks text), as one entrypoint called `name`; nothing runs."""
    log = tracelog.read_path(path)
    tree = SourceTree(root)
    parts = classified(log, str(root), tree, None, name)
    outcome = RunOutcome(name, Status.OK, None, 0.0)
    entry = report.entrypoint_report(
        outcome,
        log,
        parts.breaks,
        problems=parts.unattributed,
        recompiles=recompile.analyse(log, str(root), tree.get),
        frames=parts.frames,
        compile_error=parts.compile_error,
    )
    # Logs made elsewhere do not say whether torch.compile ran with its own backend or gbbot's.
    return report.new_report([entry], None, log.torch_version, None)
