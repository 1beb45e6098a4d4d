"""Which test wrote which trace records: the sidecar gbbot's pytest plugin keeps next to the trace.

Torch appends each structured-trace record to its file in one write and flushes it, so the bytes
a trace file grew by while a test ran (setup and teardown included) are exactly that test's
records. The plugin notes those byte spans per test in `gbbot-tests.json` inside the TORCH_TRACE
directory (a `.json` file: trace readers look only at `*.log`); gbbot turns them into line ranges
and tags each graph break with its test.
"""

from __future__ import annotations

import bisect
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gbbot.core.words import plural
from gbbot.trace.tracelog import TestAt

SIDECAR = "gbbot-tests.json"
VERSION = 1


@dataclass(frozen=True)
class Span:
    file: str  # relative to the trace directory
    start: int  # byte offsets, end exclusive
    end: int


@dataclass(frozen=True)
class TestRun:
    id: str  # the pytest node id
    outcome: str  # passed | failed | skipped
    spans: tuple[Span, ...] = ()
    message: str = ""  # the failure, in one line


@dataclass(frozen=True)
class TestSession:
    tests: tuple[TestRun, ...]
    errors: tuple[str, ...] = ()  # collection errors, one line each
    exit_status: int | None = None  # pytest's, once the session finished

    @property
    def failed(self) -> tuple[TestRun, ...]:
        return tuple(t for t in self.tests if t.outcome == "failed")


# --- the sidecar, written by the plugin and read by gbbot -----------------------------------------


def grown(before: Mapping[str, int], after: Mapping[str, int]) -> tuple[Span, ...]:
    """Pure: the byte spans trace files grew by between two size snapshots."""
    return tuple(
        Span(name, before.get(name, 0), size) for name, size in sorted(after.items()) if size > before.get(name, 0)
    )


def sizes(trace_dir: Path) -> dict[str, int]:
    """Each trace file's size now, by its path relative to the trace directory."""
    if not trace_dir.is_dir():
        return {}
    return {str(p.relative_to(trace_dir)): p.stat().st_size for p in trace_dir.rglob("*.log") if p.is_file()}


def to_json(session: TestSession) -> dict[str, Any]:
    return {
        "version": VERSION,
        "exit_status": session.exit_status,
        "errors": list(session.errors),
        "tests": [
            {
                "id": t.id,
                "outcome": t.outcome,
                "message": t.message,
                "spans": [[s.file, s.start, s.end] for s in t.spans],
            }
            for t in session.tests
        ],
    }


def write(trace_dir: Path, session: TestSession) -> None:
    """Replaced whole after every test, so a run killed halfway still attributes what it ran."""
    trace_dir.mkdir(parents=True, exist_ok=True)
    partial = trace_dir / f".{SIDECAR}.{os.getpid()}"
    partial.write_text(json.dumps(to_json(session)), encoding="utf-8")
    os.replace(partial, trace_dir / SIDECAR)


def _test_run(item: Mapping[str, Any]) -> TestRun:
    spans = tuple(Span(str(f), int(a), int(b)) for f, a, b in item.get("spans", ()))
    return TestRun(str(item["id"]), str(item["outcome"]), spans, str(item.get("message", "")))


def read(trace_dir: Path) -> TestSession | None:
    """The sidecar of a pytest run, or None when there is none (or it cannot be read: the breaks
    are still reported, only without their tests)."""
    try:
        data = json.loads((trace_dir / SIDECAR).read_text(encoding="utf-8"))
        return TestSession(
            tuple(_test_run(item) for item in data["tests"]),
            tuple(str(e) for e in data.get("errors", ())),
            data.get("exit_status"),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


# --- byte spans → line numbers ------------------------------------------------------------------


def _line_starts(path: Path, offsets: list[int]) -> dict[int, int]:
    """The 1-based number of the first line starting at or after each offset, in one pass."""
    wanted = sorted(set(offsets))
    found: dict[int, int] = {}
    position, lineno, i = 0, 1, 0
    with path.open("rb") as handle:
        for line in handle:
            while i < len(wanted) and wanted[i] <= position:
                found[wanted[i]] = lineno
                i += 1
            position += len(line)
            lineno += 1
    for offset in wanted[i:]:
        found[offset] = lineno
    return found


def line_owner(path: Path, spans: list[tuple[Span, str]]) -> TestAt:
    """A trace file's line number → the test whose span holds that line."""
    starts = _line_starts(path, [o for span, _ in spans for o in (span.start, span.end)])
    ranges = sorted((starts[span.start], starts[span.end], test) for span, test in spans)
    firsts = [first for first, _, _ in ranges]

    def test_at(lineno: int) -> str | None:
        i = bisect.bisect_right(firsts, lineno) - 1
        return ranges[i][2] if i >= 0 and lineno < ranges[i][1] else None

    return test_at


def owners(trace_dir: Path, session: TestSession | None):
    """For parse.read_path: each trace file's line → test mapping (None for files no test wrote)."""
    by_file: dict[str, list[tuple[Span, str]]] = {}
    for test in session.tests if session else ():
        for span in test.spans:
            by_file.setdefault(span.file, []).append((span, test.id))

    def for_file(path: Path) -> TestAt | None:
        try:
            name = str(path.relative_to(trace_dir))
        except ValueError:
            return None
        return line_owner(path, by_file[name]) if name in by_file else None

    return for_file


def failure_reason(session: TestSession | None) -> str:
    """Why a pytest entrypoint failed, naming the tests; empty when the sidecar says nothing."""
    if session is None:
        return ""
    failed = session.failed
    if failed:
        lines = [f"{plural(len(failed), 'failing test')}:"]
        lines += [f"  {t.id}" + (f": {t.message}" if t.message else "") for t in failed]
        return "\n".join(lines)
    if session.errors:
        return "pytest could not collect the tests:\n" + "\n".join(f"  {e}" for e in session.errors)
    if not session.tests and session.exit_status == 5:
        return "pytest ran no tests: none collected, or all deselected (check the pytest: arguments)"
    return ""
