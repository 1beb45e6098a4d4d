"""The fast-mode backend's counts (gbbot/child/_shim/sitecustomize.py writes one file per process
beside the trace): how many times each captured graph ran and each compiled callable was called.
Written by a process that ran the entrypoint's code, so read within bounds and checked field by
field; a file that is not what the shim writes is left out and named as a problem."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from gbbot.core import untrusted_json
from gbbot.core.model import CallCount, GraphRuns, RunCounts

RUNS_PREFIX = "gbbot-runs-"  # the shim's RUNS_PREFIX
MAX_FILE_BYTES = 4 << 20
MAX_FILES = 256
MAX_ENTRIES = 20000
BOUNDS = untrusted_json.Bounds(depth=3, values=4 * MAX_ENTRIES + 16, number_chars=12)
T = TypeVar("T")


def read(trace_dir: Path | None) -> tuple[RunCounts | None, tuple[str, ...]]:
    """The counts of every process that wrote some (None: no process did — not fast mode, or
    the program ended through os._exit), and what could not be read, in words."""
    found, problems = read_files(trace_dir, RUNS_PREFIX, parse, "run counts")
    if found is None:
        return None, problems
    return RunCounts(tuple(g for f in found for g in f.graphs), tuple(c for f in found for c in f.calls)), problems


def read_files(
    trace_dir: Path | None, prefix: str, parse: Callable[[str], T], what: str
) -> tuple[list[T] | None, tuple[str, ...]]:
    """Each file `prefix*.json` the shim wrote beside the trace, parsed within bounds (None: there is
    none), and those left out, named with why."""
    if trace_dir is None or not trace_dir.is_dir():
        return None, ()
    files = sorted(trace_dir.glob(f"{prefix}*.json"))[:MAX_FILES]
    found: list[T] = []
    problems: list[str] = []
    for path in files:
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                raise untrusted_json.Refused(f"over {MAX_FILE_BYTES} bytes")
            found.append(parse(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, untrusted_json.Refused) as exc:
            problems.append(f"{path.name}: {what} left out ({exc})")
    return (found if files else None), tuple(problems)


def parse(text: str) -> RunCounts:
    data = untrusted_json.loads(text, BOUNDS)
    if not isinstance(data, dict):
        raise untrusted_json.Refused("not an object")
    log = data.get("trace_log") or ""
    if not isinstance(log, str) or len(log) > 255:
        raise untrusted_json.Refused("`trace_log` is not a file name")
    graphs = tuple(_graph(g, log) for g in entries(data, "graphs"))
    calls = tuple(_call(c, log) for c in entries(data, "calls"))
    return RunCounts(graphs, calls)


def entries(data: dict, name: str) -> list[dict]:
    found = data.get(name, [])
    if not isinstance(found, list) or len(found) > MAX_ENTRIES or not all(isinstance(e, dict) for e in found):
        raise untrusted_json.Refused(f"`{name}` is not a list of at most {MAX_ENTRIES} objects")
    return found


def count(entry: dict, name: str) -> int:
    value = entry.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise untrusted_json.Refused(f"`{name}` is not a count")
    return value


def _short(entry: dict, name: str, limit: int = 4096) -> str:
    value = entry.get(name)
    if not isinstance(value, str) or len(value) > limit:
        raise untrusted_json.Refused(f"`{name}` is not a short string")
    return value


def _graph(entry: dict, log: str) -> GraphRuns:
    compile_id = entry.get("compile_id")
    if compile_id is None:
        compile_id = ""
    elif not isinstance(compile_id, str) or len(compile_id) > 64:
        raise untrusted_json.Refused("`compile_id` is not a short string")
    return GraphRuns(compile_id, count(entry, "ops"), count(entry, "nodes"), count(entry, "runs"), log)


def _call(entry: dict, log: str) -> CallCount:
    return CallCount(
        _short(entry, "file"), count(entry, "line"), _short(entry, "name", 255), count(entry, "calls"), log
    )
