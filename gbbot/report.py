"""Report: build from run outcomes and traces; JSON schema v1 in and out; the policy's verdict."""

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
from gbbot.errors import ReportError
from gbbot.model import (
    Category,
    Diff,
    EntrypointDiff,
    EntrypointReport,
    Frame,
    GraphBreak,
    Mode,
    Origin,
    Report,
    RunOutcome,
    Status,
    Tool,
    TraceLog,
)

SCHEMA_PATH = Path(__file__).parent / "schema" / "report.schema.json"
# Fields written only when non-empty: reports without pytest entrypoints look as they always did.
OMITTED_WHEN_EMPTY = frozenset({"tests"})
ERROR_TAIL_CHARS = 4000


def graph_count(log: TraceLog) -> int:
    """Graphs compiled: frames whose metrics show a non-empty graph."""
    return sum(1 for m in log.metrics if m.graph_op_count)


def frames_skipped(log: TraceLog, breaks: Iterable[GraphBreak]) -> int:
    from_metrics = sum(1 for m in log.metrics if m.fail_type)
    return max(from_metrics, sum(1 for b in breaks if b.frame_skipped))


def entrypoint_report(outcome: RunOutcome, log: TraceLog, breaks: tuple[GraphBreak, ...]) -> EntrypointReport:
    error = None
    if outcome.status is not Status.OK:
        detail = outcome.stderr_tail.strip()[-ERROR_TAIL_CHARS:]
        error = "\n".join(part for part in (outcome.reason, detail) if part) or None
    return EntrypointReport(
        name=outcome.name,
        status=outcome.status,
        exit_code=outcome.exit_code,
        duration_s=outcome.duration_s,
        graph_count=graph_count(log),
        break_count=sum(b.count for b in breaks),
        frames_skipped=frames_skipped(log, breaks),
        breaks=breaks,
        error=error,
        trace_problems=log.problems,
        env_withheld=outcome.env_withheld,
    )


def new_report(
    entrypoints: Iterable[EntrypointReport],
    mode: Mode,
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


# --- policy ------------------------------------------------------------------------------------


def counted(report: Report) -> list[GraphBreak]:
    return [b for b in report.breaks if not b.ignored]


def new_breaks(report: Report) -> list[GraphBreak]:
    if report.diff is None:
        return counted(report)
    new = set(report.diff.new)
    return [b for b in counted(report) if b.fingerprint in new]


def policy_failed(report: Report, fail_on: str) -> bool:
    """fail_on: new → only breaks the diff calls new (every break without a baseline); any → any
    break not ignored; none → never."""
    if fail_on == "none":
        return False
    return bool(counted(report) if fail_on == "any" else new_breaks(report))


# --- JSON --------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value):
        return {
            f.name: _plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if getattr(value, f.name) or f.name not in OMITTED_WHEN_EMPTY
        }
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _diff_json(diff: Diff) -> dict:
    return {
        "base": {"ref": diff.base_ref, "sha": diff.base_sha},
        "new": list(diff.new),
        "fixed": list(diff.fixed),
        "persisting": list(diff.persisting),
        "entrypoints": [_plain(e) for e in diff.entrypoints],
        "fixed_breaks": [_plain(b) for b in diff.fixed_breaks],
        "baseline_source": diff.baseline_source,
        "notes": list(diff.notes),
    }


def to_json(report: Report) -> dict:
    data = {
        "schema_version": report.schema_version,
        "tool": _plain(report.tool),
        "torch_version": report.torch_version,
        "mode": report.mode.value,
        "commit": report.commit,
        "config_hash": report.config_hash,
        "shard": report.shard,
        "entrypoints": [_plain(e) for e in report.entrypoints],
    }
    if report.diff is not None:
        data["diff"] = _diff_json(report.diff)
    if report.extra:
        data["extra"] = report.extra
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


def _frame(data: dict) -> Frame:
    return Frame(data["file"], data["line"], data["function"], data.get("code", ""))


def _break(data: dict) -> GraphBreak:
    fields = {f.name for f in dataclasses.fields(GraphBreak)}
    values = {k: v for k, v in data.items() if k in fields}
    values.update(
        category=Category(data["category"]),
        origin=Origin(data["origin"]),
        hints=tuple(data["hints"]),
        caused=tuple(data["caused"]),
        consequences=tuple(data.get("consequences", ())),
        tests=tuple(data.get("tests", ())),
        user_stack=tuple(_frame(f) for f in data["user_stack"]),
    )
    return GraphBreak(**values)


def _entrypoint(data: dict) -> EntrypointReport:
    return EntrypointReport(
        name=data["name"],
        status=Status(data["status"]),
        exit_code=data["exit_code"],
        duration_s=data["duration_s"],
        graph_count=data["graph_count"],
        break_count=data["break_count"],
        frames_skipped=data["frames_skipped"],
        breaks=tuple(_break(b) for b in data["breaks"]),
        error=data.get("error"),
        trace_problems=tuple(data.get("trace_problems", ())),
        env_withheld=tuple(data.get("env_withheld", ())),
    )


def _diff(data: dict) -> Diff:
    return Diff(
        base_ref=data["base"]["ref"],
        base_sha=data["base"]["sha"],
        new=tuple(data["new"]),
        fixed=tuple(data["fixed"]),
        persisting=tuple(data["persisting"]),
        entrypoints=tuple(
            EntrypointDiff(**{**e, **{k: tuple(e.get(k, ())) for k in ("new", "fixed", "persisting")}})
            for e in data.get("entrypoints", ())
        ),
        fixed_breaks=tuple(_break(b) for b in data.get("fixed_breaks", ())),
        baseline_source=data.get("baseline_source", "run"),
        notes=tuple(data.get("notes", ())),
    )


def from_json(data: Any) -> Report:
    """Validated JSON → Report."""
    validate(data)
    return Report(
        tool=Tool(**data["tool"]),
        torch_version=data["torch_version"],
        mode=Mode(data["mode"]),
        commit=data["commit"],
        entrypoints=tuple(_entrypoint(e) for e in data["entrypoints"]),
        diff=_diff(data["diff"]) if data.get("diff") else None,
        config_hash=data.get("config_hash"),
        shard=data.get("shard"),
        extra=data.get("extra", {}),
    )


def load(path: Path) -> Report:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(f"{path}: no such report file") from None
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: not a readable JSON report ({exc})") from None
    try:
        return from_json(data)
    except ReportError as exc:
        raise ReportError(f"{path}: {exc}") from None


def write(report: Report, path: Path) -> None:
    data = to_json(report)
    validate(data)  # never write what we would refuse to read
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
