"""Stream structured logs into records: TORCH_TRACE files and saved TORCH_LOGS text.

A TORCH_TRACE record is a glog-prefixed line ending in a JSON envelope, followed by payload lines
that each start with a tab. Only the few record kinds gbbot needs are decoded; everything else
(graphs, guards, chromium events: most of a trace by size) is passed over without parsing.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

BREAK_ARTIFACT = "dynamo_graph_break_reason"
BREAK_WANTED = (f'"{BREAK_ARTIFACT}"', '{"compilation_metrics"', '"torch_version"')
# What recompilations are read from besides the metrics: where each compile started (its stack
# names files by ids that `str` records define) and the symbols automatic dynamic shapes created.
RECOMPILE_KINDS = {"dynamo_start": "start", "str": "str", "create_symbol": "symbol"}
WANTED = BREAK_WANTED + tuple(f'{{"{name}"' for name in RECOMPILE_KINDS)
# glog prefix, an optional compile id ("[0/1] "; not kept: nothing downstream uses it), the logger.
LOG_LINE_RE = re.compile(r"^[VIWEC]\d{4} [\d:.]+ +\d+ \S+:\d+\] (?:\[[^\]]*\] )?\[__graph_breaks\] ?(?P<msg>.*)$")
BREAK_START = "Graph break"  # "Graph break in user code at …", "Graph break (user stack suppressed…"


@dataclass(frozen=True)
class TraceRecord:
    kind: str  # "break" | "metrics" | "torch_version" | "start" | "str" | "symbol"
    envelope: dict
    payload: str | None
    lineno: int


@dataclass(frozen=True)
class TraceProblem:
    lineno: int
    message: str


def _kind(envelope: dict) -> str | None:
    if "compilation_metrics" in envelope:
        return "metrics"
    for name, kind in RECOMPILE_KINDS.items():
        if name in envelope:
            return kind
    name = (envelope.get("artifact") or {}).get("name")
    if name == BREAK_ARTIFACT:
        return "break"
    if name == "torch_version":
        return "torch_version"
    return None


def _envelope(line: str) -> dict | None:
    start = line.find("] {")
    if start < 0:
        return None
    try:
        value = json.loads(line[start + 2 :])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _damaged(envelope: dict, payload: str | None) -> bool:
    """Does the payload fail the checksum its header announces (cut short, edited)?"""
    expected = envelope.get("has_payload")
    if not expected:
        return False
    return hashlib.md5((payload or "").encode("utf-8"), usedforsecurity=False).hexdigest() != expected


def _finish(
    envelope: dict, payload_lines: list[str] | None, lineno: int, source: str
) -> Iterator[TraceRecord | TraceProblem]:
    kind = _kind(envelope)
    if kind is None:
        return
    payload = None if payload_lines is None else "\n".join(payload_lines)
    if _damaged(envelope, payload):
        # Still yielded: what the damaged text says is worth more than nothing, and the
        # problem tells the reader not to trust it blindly.
        yield TraceProblem(lineno, f"{source}:{lineno}: {kind} record is damaged or truncated (checksum mismatch)")
    yield TraceRecord(kind, envelope, payload, lineno)


def iter_trace_records(
    lines: Iterable[str], source: str = "trace", wanted: tuple[str, ...] = WANTED
) -> Iterator[TraceRecord | TraceProblem]:
    """Pure: lines of one TORCH_TRACE file → the records gbbot reads (`wanted`: markers of the
    record kinds to decode), and problems met."""
    envelope: dict | None = None
    payload: list[str] | None = None
    start = 0
    for lineno, raw in enumerate(lines, 1):
        line = raw.rstrip("\n")
        if line.startswith("\t"):
            if payload is not None:
                payload.append(line[1:])
            continue
        if envelope is not None:
            yield from _finish(envelope, payload, start, source)
        envelope, payload, start = None, None, lineno
        if not any(marker in line for marker in wanted):
            continue
        envelope = _envelope(line)
        if envelope is None:
            yield TraceProblem(lineno, f"{source}:{lineno}: unreadable record header, skipped")
        elif envelope.get("has_payload"):
            payload = []
    if envelope is not None:
        yield from _finish(envelope, payload, start, source)


def iter_log_breaks(lines: Iterable[str]) -> Iterator[str]:
    """Pure: TORCH_LOGS=graph_breaks text → one message per graph break.

    Lines the program printed in between (no glog prefix) are ignored.
    """
    message: list[str] = []
    for raw in lines:
        match = LOG_LINE_RE.match(raw.rstrip("\n"))
        if not match:
            continue
        text = match["msg"]
        if text.startswith(BREAK_START) and message:
            yield "\n".join(message)
            message = []
        if text.startswith(BREAK_START) or message:
            message.append(text)
    if message:
        yield "\n".join(message)


def trace_files(path: Path) -> list[Path]:
    """The log files of a TORCH_TRACE directory (or the file itself)."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*.log") if p.is_file())


def open_lines(path: Path) -> Iterator[str]:
    """Stream a file's lines; undecodable bytes become U+FFFD instead of stopping the read."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        yield from handle


def looks_like_trace(path: Path) -> bool:
    """A TORCH_TRACE file starts with a glog line whose tail is a JSON envelope."""
    for line in open_lines(path):
        return "] {" in line and line[:1] in "VIWEC"
    return False
