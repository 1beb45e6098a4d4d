"""Report: build from run outcomes and traces; the breaks a policy counts; JSON schema v1 in and out."""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema

from gbbot import __version__
from gbbot.analysis import break_diff
from gbbot.core import counts, fixes, limits, untrusted_json, words
from gbbot.core.errors import ReportError
from gbbot.core.model import (
    RECOMPILE_ORDER,
    SIDE_ORDER,
    Change,
    ChangeState,
    CompiledFrame,
    CompileError,
    DependencyChange,
    Diff,
    EntrypointDiff,
    EntrypointReport,
    EntrypointRuns,
    GraphBreak,
    Mode,
    Reason,
    Recompilation,
    Recompiled,
    Report,
    RunOutcome,
    Status,
    Tool,
    TraceLog,
    Why,
)

SCHEMA_PATH = Path(__file__).parent.parent / "schema" / "report.schema.json"
# Fields written only when non-empty: reports without pytest entrypoints look as they always did.
OMITTED_WHEN_EMPTY = frozenset(
    {"tests", "statement", "qualname", "from_base", "resumes_at", "new_break", "by_new_break"} | {"lost_baseline"}
)
ERROR_TAIL_CHARS = 4000


def graph_count(log: TraceLog) -> int:
    """Graphs compiled: frames whose metrics show a non-empty graph."""
    return sum(1 for m in log.metrics if m.graph_op_count)


def frames_skipped(log: TraceLog, breaks: Iterable[GraphBreak], frames: Iterable[CompiledFrame] = ()) -> int:
    """Distinct frames that run eagerly: a frame Dynamo restarted is one frame, not two. Counted
    from the compiled frames when there are any; else from the metrics and the breaks' sites."""
    frames = tuple(frames)
    if frames:
        return sum(1 for f in frames if f.eager)
    from_metrics = len({(m.co_filename, m.co_name) for m in log.metrics if m.fail_type})
    return max(from_metrics, len({(b.file, b.function) for b in breaks if b.frame_skipped}))


NO_TRACE_FILES = "no trace files were written"
NO_FRAME_COMPILED = "no frame was compiled"


def compiled_nothing(log: TraceLog, trace_files: int) -> str | None:
    """Why a run that exited cleanly says nothing about graph breaks, or None when it compiled.
    (It never imported torch, its torch.compile sits behind a flag that is off, it compiled in a
    child whose environment was wiped, or it swallowed the exception that stopped it.)"""
    if trace_files == 0:
        return NO_TRACE_FILES
    if not log.metrics and not log.breaks:
        return NO_FRAME_COMPILED
    return None


def _status(outcome: RunOutcome, no_compile: str | None) -> tuple[Status, str | None]:
    if outcome.status is not Status.OK:
        detail = output_tail(outcome)[-ERROR_TAIL_CHARS:]
        return outcome.status, "\n".join(part for part in (outcome.reason, detail) if part) or None
    if no_compile:
        return Status.NO_COMPILE, f"compiled nothing: {no_compile}"
    return Status.OK, None


def output_tail(outcome: RunOutcome) -> str:
    """The end of what a run that did not end cleanly wrote: stderr, or stdout when stderr is
    empty (a script that reports on stdout and exits 1); both, labelled, for a timeout, whose last
    output on either says where it hung."""
    err, out = outcome.stderr_tail.strip(), outcome.stdout_tail.strip()
    if outcome.status is Status.TIMEOUT and err and out:
        return f"stdout:\n{out[-ERROR_TAIL_CHARS // 2 :]}\nstderr:\n{err[-ERROR_TAIL_CHARS // 2 :]}"
    return err or out


def entrypoint_report(
    outcome: RunOutcome,
    log: TraceLog,
    breaks: tuple[GraphBreak, ...],
    no_compile: str | None = None,
    problems: tuple[str, ...] = (),
    recompiles: tuple[Recompilation, ...] = (),
    frames: tuple[CompiledFrame, ...] = (),
    runs: EntrypointRuns | None = None,
    compile_error: CompileError | None = None,
) -> EntrypointReport:
    """`no_compile`: why a clean run compiled nothing (see compiled_nothing); `problems`: more
    trace problems than the log's own (breaks that could not be attributed)."""
    status, error = _status(outcome, no_compile)
    return EntrypointReport(
        name=outcome.name,
        status=status,
        exit_code=outcome.exit_code,
        duration_s=outcome.duration_s,
        graph_count=graph_count(log),
        break_count=sum(b.count for b in breaks),
        frames_skipped=frames_skipped(log, breaks, frames),
        breaks=breaks,
        error=error,
        trace_problems=(*log.problems, *problems),
        env_withheld=outcome.env_withheld,
        recompiles=recompiles,
        frames=frames,
        runs=runs,
        compile_error=compile_error,
    )


def new_report(
    entrypoints: Iterable[EntrypointReport],
    mode: Mode | None,
    torch_version: str | None,
    commit: str | None,
    config_hash: str | None = None,
    shard: str | None = None,
) -> Report:
    return Report(
        tool=Tool("gbbot", __version__),
        torch_version=torch_version,
        mode=mode,
        commit=commit,
        entrypoints=tuple(entrypoints),
        config_hash=config_hash,
        shard=shard,
    )


# --- the breaks a policy counts ----------------------------------------------------------------


def counted(report: Report) -> list[GraphBreak]:
    return [b for b in report.breaks if not b.ignored]


def is_new(report: Report, brk: GraphBreak) -> bool:
    """Whether the policy's "new" takes `brk`: new by the diff, or any break without one."""
    return report.diff is None or report.diff.state(brk) is ChangeState.NEW


def new_breaks(report: Report) -> list[GraphBreak]:
    return [b for b in counted(report) if is_new(report, b)]


# --- JSON --------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value):
        return {
            f.name: _plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if (getattr(value, f.name) or f.name not in OMITTED_WHEN_EMPTY)
        }
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _diff_json(diff: Diff) -> dict:
    """The typed changes as schema v1's lists: fingerprints per state, overall and per entrypoint,
    the base's records of what was fixed or hidden, and what hides each hidden one."""

    def listed(state: ChangeState, changes: tuple[Change, ...] = diff.changes) -> list[str]:
        return [c.fingerprint for c in changes if c.state is state]

    hidden = diff.changed(ChangeState.HIDDEN)
    return {
        "base": {"ref": diff.base_ref, "sha": diff.base_sha},
        "new": listed(ChangeState.NEW),
        "fixed": listed(ChangeState.FIXED),
        "persisting": listed(ChangeState.PERSISTING),
        "entrypoints": [_entrypoint_diff_json(e, diff.compared) for e in diff.entrypoints],
        "fixed_breaks": [_plain(b) for b in diff.breaks(ChangeState.FIXED)],
        "baseline_source": diff.baseline_source,
        "notes": list(diff.notes),
        **({"recompiles": _recompiles_json(diff.recompiles)} if diff.recompiles is not None else {}),
        "hidden": listed(ChangeState.HIDDEN),
        "hidden_breaks": [_plain(c.brk) for c in hidden],
        "hidden_by": {c.fingerprint: c.hidden_by.fingerprint if c.hidden_by else "" for c in hidden},
        "revealed": listed(ChangeState.REVEALED),
        **({"dependencies": _dependencies_json(diff.dependencies)} if diff.dependencies is not None else {}),
    }


def _said(reason: Reason | None) -> str | None:
    return words.say(reason) if reason is not None else None


def _heard(text: str | None) -> Reason | None:
    """A reason as a report's JSON words it."""
    return Reason(Why.SAID, (text,)) if text is not None else None


def _entrypoint_diff_json(entry: EntrypointDiff, compared: tuple[Change, ...]) -> dict:
    mine = tuple(c for c in compared if c.entrypoints == (entry.name,))

    def listed(state: ChangeState) -> list[str]:
        return [c.fingerprint for c in mine if c.state is state]

    return {
        "name": entry.name,
        **{state.value: listed(state) for state in (ChangeState.NEW, ChangeState.FIXED, ChangeState.PERSISTING)},
        "graph_delta": entry.graph_delta,
        "no_baseline": _said(entry.no_baseline),
        "hidden": listed(ChangeState.HIDDEN),
        "revealed": listed(ChangeState.REVEALED),
        "still_failing": _said(entry.still_failing),
        **({"lost_baseline": words.say(entry.lost_baseline)} if entry.lost_baseline else {}),
    }


def _recompiles_json(found: tuple[Recompiled, ...]) -> dict:
    listed = {state.value: [f for f, s in found if s is state] for state in RECOMPILE_ORDER}
    return {k: v for k, v in listed.items() if v or k not in OMITTED_WHEN_EMPTY}


def _dependencies_json(found: DependencyChange) -> dict:
    return {
        "packages": [{"name": p.name, "base": p.base, "head": p.head} for p in found.packages],
        "causes": {fingerprint: cause.value for fingerprint, cause in found.causes},
        "code_changed": found.code_changed,
    }


def to_json(report: Report) -> dict:
    data = {
        "schema_version": report.schema_version,
        "tool": _plain(report.tool),
        "torch_version": report.torch_version,
        "mode": report.mode.value if report.mode else None,
        "commit": report.commit,
        "config_hash": report.config_hash,
        "shard": report.shard,
        "entrypoints": [_plain(e) for e in report.entrypoints],
    }
    if report.packages:
        data["packages"] = dict(report.packages)
    if report.diff is not None:
        data["diff"] = _diff_json(report.diff)
    data["counts"] = counts.as_json(counts.counts(report))
    # What later steps added: the fix results (written even when there are none, since a fix step
    # did look), then the merged shards.
    extra: dict[str, Any] = {}
    if report.fixes is not None:
        extra["fixes"] = [fixes.to_json(f) for f in report.fixes]
    if report.merged_shards:
        extra["merged_shards"] = list(report.merged_shards)
    if extra:
        data["extra"] = extra
    return data


def dumps(report: Report) -> str:
    return json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n"


@functools.cache
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def validate(data: Any) -> None:
    """Raise ReportError naming the first schema violation (reports can be untrusted input)."""
    validator = jsonschema.Draft202012Validator(schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ReportError(f"report does not match schema v1 at {where}: {error.message[:300]}")


REASONS = ("no_baseline", "still_failing", "lost_baseline")  # an entrypoint's, in EntrypointDiff's order
RETIRED = ("base_from_head",)  # what older reports said that no diff says now: read and dropped


def _diff(data: dict, breaks: tuple[GraphBreak, ...]) -> Diff:
    """Schema v1's lists → typed changes. A head-side fingerprint takes the head's first record of
    it (`breaks`: the report's), a fixed or hidden one the base's record the JSON carries; a
    fingerprint with no record to take is not read (a hand-made JSON's)."""
    kept = [{k: v for k, v in e.items() if k not in RETIRED} for e in data.get("entrypoints", ())]
    changes = _overall(data, breaks)
    records = {c.fingerprint: c.brk for c in changes}
    each = [
        Change(records[f], s, (e["name"],))
        for e in kept
        for s in SIDE_ORDER
        for f in e.get(s.value, ())
        if f in records
    ]
    compared = break_diff.recorded(each, changes)
    return Diff(
        base_ref=data["base"]["ref"],
        base_sha=data["base"]["sha"],
        changes=break_diff.located(changes, compared),
        entrypoints=tuple(
            EntrypointDiff(e["name"], e.get("graph_delta"), *(_heard(e.get(k)) for k in REASONS)) for e in kept
        ),
        baseline_source=data.get("baseline_source", "run"),
        notes=tuple(data.get("notes", ())),
        recompiles=tuple((f, ChangeState(k)) for k, found in data["recompiles"].items() for f in found)
        if "recompiles" in data
        else None,
        dependencies=untrusted_json.record(DependencyChange, data["dependencies"]) if "dependencies" in data else None,
        compared=compared,
    )


def _overall(data: dict, breaks: tuple[GraphBreak, ...]) -> tuple[Change, ...]:
    """The diff's changes, one per break, from v1's overall lists (see _diff)."""
    first = {b.fingerprint: b for b in reversed(breaks)}  # each fingerprint's first record
    at = {b.fingerprint: b for b in breaks}
    by = data.get("hidden_by", {})

    def on_head(state: ChangeState) -> list[Change]:
        return [Change(first[f], state) for f in data.get(state.value, ()) if f in first]

    def gone(state: ChangeState) -> list[Change]:
        listed = set(data.get(state.value, ()))
        found = (untrusted_json.record(GraphBreak, b) for b in data.get(f"{state.value}_breaks", ()))
        return [Change(b, state, hidden_by=at.get(by.get(b.fingerprint, ""))) for b in found if b.fingerprint in listed]

    return (
        *on_head(ChangeState.NEW),
        *gone(ChangeState.FIXED),
        *on_head(ChangeState.PERSISTING),
        *gone(ChangeState.HIDDEN),
        *on_head(ChangeState.REVEALED),
    )


def from_json(data: Any) -> Report:
    """Validated JSON → Report."""
    validate(data)
    read = untrusted_json.record(Report, {**data, **data.get("extra", {}), "diff": None})
    return dataclasses.replace(read, diff=_diff(data["diff"], read.breaks)) if data.get("diff") else read


def load(path: Path) -> Report:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(f"{path}: no such report file") from None
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: not a readable JSON report ({exc})") from None
    return _from_file(path, data)


def _from_file(path: Path, data: Any) -> Report:
    try:
        return from_json(data)
    except ReportError as exc:
        raise ReportError(f"{path}: {exc}") from None


UNTRUSTED = untrusted_json.Bounds(
    depth=limits.REPORT_JSON_DEPTH_MAX,
    values=limits.REPORT_JSON_VALUES_MAX,
    number_chars=limits.REPORT_NUMBER_CHARS_MAX,
)


def _breaks_over(data: Any) -> str | None:
    """Why the report carries more breaks than gbbot reads, or None (looked at before the schema,
    whose cost grows with them). Shapes the schema would refuse are left to it."""
    entrypoints = data.get("entrypoints") if isinstance(data, dict) else None
    counts = [len(e["breaks"]) for e in entrypoints or () if isinstance(e, dict) and isinstance(e.get("breaks"), list)]
    diff = data.get("diff") if isinstance(data, dict) else None
    fixed = diff.get("fixed_breaks") if isinstance(diff, dict) else None
    total = sum(counts) + (len(fixed) if isinstance(fixed, list) else 0)
    if max(counts, default=0) > limits.REPORT_ENTRYPOINT_BREAKS_MAX:
        return f"{max(counts)} breaks in one entrypoint, over the {limits.REPORT_ENTRYPOINT_BREAKS_MAX} gbbot reads"
    if total > limits.REPORT_BREAKS_MAX:
        return f"{total} breaks, over the {limits.REPORT_BREAKS_MAX} gbbot reads"
    return None


def load_untrusted(path: Path) -> Report:
    """A report someone else wrote: size, nesting, value count, numbers and breaks bounded before
    it is built or schema-checked. Any refusal is one ReportError line naming the file."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(limits.REPORT_FILE_MAX_BYTES + 1)
    except OSError as exc:
        raise ReportError(f"{path}: cannot read the report artifact ({exc.strerror})") from None
    if len(raw) > limits.REPORT_FILE_MAX_BYTES:
        raise ReportError(f"{path}: over the {limits.REPORT_FILE_MAX_BYTES} bytes a report may have")
    try:
        data = untrusted_json.loads(raw.decode("utf-8"), UNTRUSTED)
    except ValueError as exc:  # Refused, or not UTF-8
        raise ReportError(f"{path}: not a report gbbot reads: {exc}") from None
    over = _breaks_over(data)
    if over:
        raise ReportError(f"{path}: {over}")
    return _from_file(path, data)


def write(report: Report, path: Path) -> None:
    data = to_json(report)
    validate(data)  # never write what we would refuse to read
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
