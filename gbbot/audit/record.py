"""A report → one compact audit record, and records read back as untrusted data. Pure.

A record keeps what the tracking issue charts and compares over time (per entrypoint: status,
graphs, breaks by category, frames running eagerly) and enough of each break to rebuild the
base side of a diff from it (fingerprint, id, type, category, origin, file, line, function,
code). Records come back from a branch anyone with push access can write: each is size-capped
and checked against a declared schema before any field is used, and one that fails is skipped.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import jsonschema

from gbbot.core import untrusted_json
from gbbot.core.fixes import FixStatus
from gbbot.core.model import CompiledFrame, EntrypointReport, FrameRef, GraphBreak, Report, Status

FORMAT = 1
MAX_RECORD_BYTES = 512 * 1024
MAX_ENTRYPOINTS = 200
MAX_BREAKS_PER_ENTRYPOINT = 500
ERROR_CHARS = 500
CODE_CHARS = 300
TEXT_CHARS = 300
PATH_CHARS = 400
MAX_FRAMES = 500  # per entrypoint, and per break
# The record's JSON schema, checked on every record written or read: the limits above are its
# limits (a unit test keeps them in step).
SCHEMA_PATH = Path(__file__).parent.parent / "schema" / "audit_record.schema.json"
RECORD_SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


class RecordError(ValueError):
    """A record that is not one: too big, not JSON, or off the schema; says where."""


# --- the record's values -----------------------------------------------------------------------


@dataclass(frozen=True)
class BreakEntry:
    fingerprint: str
    gb_id: str | None
    gb_type: str
    category: str
    file: str
    line: int
    count: int
    origin: str = "user"
    function: str = ""
    code: str = ""
    doc_url: str | None = None
    frame_skipped: bool = False
    in_loop: bool = False
    ignored: bool = False
    flaky: bool = False
    frames: tuple[FrameRef, ...] = ()
    makes_eager: tuple[FrameRef, ...] = ()

    @property
    def key(self) -> str:
        return self.gb_id or self.gb_type


@dataclass(frozen=True)
class EntrypointEntry:
    name: str
    status: str
    graphs: int
    breaks: int
    frames_eager: int
    by_category: tuple[tuple[str, int], ...]
    fingerprints: tuple[BreakEntry, ...]
    exit_code: int | None = None
    error: str | None = None
    launches_per_call: float | None = None  # None: not counted (faithful mode, older records)
    frames: tuple[CompiledFrame, ...] = ()  # kept: frame, eager, eager_by

    @property
    def ran(self) -> bool:
        return self.status in (Status.OK.value, Status.SKIPPED.value)

    def counted(self) -> tuple[BreakEntry, ...]:
        """Breaks that count: not ignored."""
        return tuple(b for b in self.fingerprints if not b.ignored)


@dataclass(frozen=True)
class Record:
    commit: str
    date: str
    torch: str | None
    mode: str
    config_hash: str | None
    repeat: int
    entrypoints: tuple[EntrypointEntry, ...]
    fixes: tuple[tuple[str, str], ...] = ()  # (fingerprint, recipe) of verified fixes
    run_url: str | None = None

    def entrypoint(self, name: str) -> EntrypointEntry | None:
        return next((e for e in self.entrypoints if e.name == name), None)

    def breaks(self) -> dict[str, BreakEntry]:
        """Every counted break by fingerprint, across entrypoints (the first one seen)."""
        found: dict[str, BreakEntry] = {}
        for entry in self.entrypoints:
            for brk in entry.counted():
                found.setdefault(brk.fingerprint, brk)
        return found

    def total_breaks(self) -> int:
        return sum(b.count for e in self.entrypoints for b in e.counted() if not b.flaky)

    def total_graphs(self) -> int:
        return sum(e.graphs for e in self.entrypoints)


# --- report → record ---------------------------------------------------------------------------


def _cut(text: str | None, limit: int) -> str | None:
    if text is None:
        return None
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _last_lines(text: str | None, limit: int = ERROR_CHARS) -> str | None:
    """The end of an error: the exception is at the bottom of a traceback."""
    if not text:
        return None
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


CUT_TO = {"gb_type": TEXT_CHARS, "file": PATH_CHARS, "function": TEXT_CHARS, "code": CODE_CHARS}
KEPT = ("fingerprint", "gb_id", "line", "count", "frame_skipped", "in_loop", "ignored")


def break_entry(brk: GraphBreak, flaky: bool = False) -> BreakEntry:
    """The break as a record keeps it: its texts cut (CUT_TO), its frames bounded, a doc URL only
    when it is an https one."""
    doc = brk.doc_url if brk.doc_url and brk.doc_url.startswith("https://") else None
    return BreakEntry(
        **{k: _cut(getattr(brk, k), limit) or "" for k, limit in CUT_TO.items()},
        **{k: getattr(brk, k) for k in KEPT},
        category=brk.category.value,
        origin=brk.origin.value,
        doc_url=_cut(doc, TEXT_CHARS),
        flaky=flaky,
        frames=brk.frames[:MAX_FRAMES],
        makes_eager=brk.makes_eager[:MAX_FRAMES],
    )


def entrypoint_entry(runs: Sequence[EntrypointReport]) -> EntrypointEntry:
    """One entrypoint's runs (one per repeat) → its entry. A break every completed run saw is
    steady; one only some saw is flaky. Counts are the first run's, which the others repeat."""
    first = runs[0]
    completed = [r for r in runs if r.status is Status.OK] or [first]
    seen = Counter(b.fingerprint for r in completed for b in {b.fingerprint: b for b in r.breaks}.values())
    union = {b.fingerprint: b for r in reversed(completed) for b in r.breaks}
    ordered = sorted(union.values(), key=lambda b: (b.file, b.line, b.fingerprint))
    entries = tuple(break_entry(b, seen[b.fingerprint] < len(completed)) for b in ordered)
    categories = Counter()
    for entry in entries:
        if not entry.ignored and not entry.flaky:
            categories[entry.category] += entry.count
    worst = next((r for r in runs if r.status is not Status.OK), first)
    return EntrypointEntry(
        name=first.name,
        status=worst.status.value,
        graphs=first.graph_count,
        breaks=sum(e.count for e in entries if not e.ignored and not e.flaky),
        frames_eager=first.frames_skipped,
        by_category=tuple(sorted(categories.items())),
        fingerprints=entries[:MAX_BREAKS_PER_ENTRYPOINT],
        exit_code=worst.exit_code,
        error=_last_lines(worst.error),
        launches_per_call=_per_call(first),
        frames=tuple(CompiledFrame(f.frame, (), 0, f.eager, f.eager_by) for f in first.frames[:MAX_FRAMES]),
    )


def _per_call(entry: EntrypointReport) -> float | None:
    per_call = entry.runs.launches_per_call if entry.runs else None
    return None if per_call is None else round(per_call, 2)


def verified_fixes(report: Report) -> tuple[tuple[str, str], ...]:
    return tuple(
        (f.fingerprint, _cut(f.recipe or "fix", TEXT_CHARS) or "fix")
        for f in report.fixes or ()
        if f.status is FixStatus.VERIFIED
    )


def from_reports(reports: Sequence[Report], date: str, run_url: str | None = None) -> Record:
    """The runs of one audit (the same commit, `repeat` times) → its record."""
    first = reports[0]
    names = [e.name for e in first.entrypoints]
    per_name = {n: [e for r in reports for e in r.entrypoints if e.name == n] for n in names}
    return Record(
        commit=first.commit or "0" * 40,
        date=date,
        torch=first.torch_version,
        mode=first.mode.value,
        config_hash=first.config_hash,
        repeat=len(reports),
        entrypoints=tuple(entrypoint_entry(per_name[n]) for n in names[:MAX_ENTRYPOINTS]),
        fixes=tuple(dict.fromkeys(f for r in reports for f in verified_fixes(r))),
        run_url=run_url,
    )


# --- JSON --------------------------------------------------------------------------------------


def _break_json(brk: BreakEntry) -> dict[str, Any]:
    """Every field; flags and frames only when set: most breaks have none, and records stay compact."""
    data = {f.name: getattr(brk, f.name) for f in fields(brk)}
    data.update({k: [_frame_json(f) for f in data[k]] for k in ("frames", "makes_eager")})
    return {k: v for k, v in data.items() if v is not False and v != []}


def _frame_json(frame: FrameRef) -> list:
    named = [_cut(frame.qualname, TEXT_CHARS)] if frame.qualname else []
    return [_cut(frame.file, PATH_CHARS), frame.line, _cut(frame.function, TEXT_CHARS), *named]


def _frames_json(entry: EntrypointEntry) -> dict[str, Any]:
    if not entry.frames:
        return {}
    eager = {str(i): f.eager_by or "" for i, f in enumerate(entry.frames) if f.eager}
    return {"frames": [_frame_json(f.frame) for f in entry.frames], **({"eager": eager} if eager else {})}


def _entrypoint_json(entry: EntrypointEntry) -> dict[str, Any]:
    data = {f.name: getattr(entry, f.name) for f in fields(entry) if f.name not in ("frames", "launches_per_call")}
    per_call = {} if entry.launches_per_call is None else {"launches_per_call": entry.launches_per_call}
    fingerprints = [_break_json(b) for b in entry.fingerprints]
    return {
        **data,
        **per_call,
        "by_category": dict(entry.by_category),
        "fingerprints": fingerprints,
        **_frames_json(entry),
    }


def to_json(record: Record) -> dict[str, Any]:
    """The keys are the fields' names (`dumps` sorts them)."""
    data = {f.name: getattr(record, f.name) for f in fields(record) if f.name != "fixes"}
    entrypoints = [_entrypoint_json(e) for e in record.entrypoints]
    return {
        **data,
        "gbbot_audit": FORMAT,
        "entrypoints": entrypoints,
        **({"fixes": dict(record.fixes)} if record.fixes else {}),
    }


def dumps(record: Record) -> str:
    """One line of compact JSON, validated: never write what would be refused when read."""
    data = to_json(record)
    validate(data)
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    if len(text.encode("utf-8")) > MAX_RECORD_BYTES:
        raise RecordError(f"the record is over {MAX_RECORD_BYTES} bytes")
    return text + "\n"


def validate(data: Any) -> None:
    validator = jsonschema.Draft202012Validator(RECORD_SCHEMA)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise RecordError(f"not an audit record at {where}: {error.message[:200]}")


def _entrypoint(data: dict) -> dict:
    """An entrypoint's JSON as `record` reads it: each break with its gb_id (the schema does not
    require one), the categories in order, each frame with its eager flag (`eager`: by index)."""
    eager = data.get("eager", {})
    return {
        **data,
        "by_category": sorted(data["by_category"].items()),
        "fingerprints": [{"gb_id": None, **b} for b in data["fingerprints"]],
        "frames": [
            [f, (), 0, str(i) in eager, eager.get(str(i)) or None] for i, f in enumerate(data.get("frames", ()))
        ],
    }


def loads(raw: bytes) -> Record:
    """Untrusted bytes → a Record, or RecordError saying why not. The schema allows no key that
    is not a field of the values (and `eager`, `gbbot_audit`), so the checked JSON fills them."""
    if len(raw) > MAX_RECORD_BYTES:
        raise RecordError(f"{len(raw)} bytes, over the {MAX_RECORD_BYTES} a record may have")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise RecordError(f"not JSON ({str(exc)[:100]})") from None
    validate(data)
    return untrusted_json.record(Record, {**data, "entrypoints": [_entrypoint(e) for e in data["entrypoints"]]})


@dataclass(frozen=True)
class Loaded:
    """Records read back in date order, and what was skipped (name: why)."""

    records: tuple[Record, ...]
    skipped: tuple[str, ...] = field(default=())


def load_all(files: Iterable[tuple[str, bytes]]) -> Loaded:
    """(name, bytes) pairs → the valid records in (date, name) order; the rest named in `skipped`."""
    good: list[tuple[str, str, Record]] = []
    skipped: list[str] = []
    for name, raw in files:
        try:
            found = loads(raw)
        except RecordError as exc:
            skipped.append(f"{name}: {exc}")
            continue
        good.append((found.date, name, found))
    good.sort(key=lambda item: item[:2])
    return Loaded(tuple(r for _, _, r in good), tuple(skipped))
