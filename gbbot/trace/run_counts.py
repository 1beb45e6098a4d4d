"""The fast-mode backend's counts (gbbot/child/_shim/sitecustomize.py writes one file per process
beside the trace): how many times each captured graph ran and each compiled callable was called.
Written by a process that ran the entrypoint's code, so read within bounds and checked field by
field; a file that is not what the shim writes is left out and named as a problem."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from gbbot.core import untrusted_json
from gbbot.core.model import CallCount, GraphRuns, RunCounts

RUNS_PREFIX = "gbbot-runs-"  # the shim's RUNS_PREFIX
MAX_FILE_BYTES = 4 << 20
MAX_FILES = 256
MAX_ENTRIES = 20000
BOUNDS = untrusted_json.Bounds(depth=3, values=4 * MAX_ENTRIES + 16, number_chars=12)


def read(trace_dir: Path | None) -> tuple[RunCounts | None, tuple[str, ...]]:
    """The counts of every process that wrote some (None: no process did — not fast mode, or
    the program ended through os._exit), and what could not be read, in words."""
    if trace_dir is None or not trace_dir.is_dir():
        return None, ()
    files = sorted(trace_dir.glob(f"{RUNS_PREFIX}*.json"))[:MAX_FILES]
    graphs: list[GraphRuns] = []
    calls: list[CallCount] = []
    problems: list[str] = []
    for path in files:
        try:
            found = parse(_text(path))
        except (OSError, UnicodeDecodeError, untrusted_json.Refused) as exc:
            problems.append(f"{path.name}: run counts left out ({exc})")
            continue
        graphs += found.graphs
        calls += found.calls
    return (RunCounts(tuple(graphs), tuple(calls)) if files else None), tuple(problems)


def _text(path: Path) -> str:
    if path.stat().st_size > MAX_FILE_BYTES:
        raise untrusted_json.Refused(f"over {MAX_FILE_BYTES} bytes")
    return path.read_text(encoding="utf-8")


def parse(text: str) -> RunCounts:
    data = untrusted_json.loads(text, BOUNDS)
    if not isinstance(data, dict):
        raise untrusted_json.Refused("not an object")
    log = data.get("trace_log") or ""
    if not isinstance(log, str) or len(log) > 255:
        raise untrusted_json.Refused("`trace_log` is not a file name")
    graphs = tuple(_graph(g, log) for g in _entries(data, "graphs"))
    calls = tuple(_call(c, log) for c in _entries(data, "calls"))
    return RunCounts(graphs, calls)


def _entries(data: dict, name: str) -> Iterable[dict]:
    found = data.get(name, [])
    if not isinstance(found, list) or len(found) > MAX_ENTRIES or not all(isinstance(e, dict) for e in found):
        raise untrusted_json.Refused(f"`{name}` is not a list of at most {MAX_ENTRIES} objects")
    return found


def _count(entry: dict, name: str) -> int:
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
    return GraphRuns(compile_id, _count(entry, "ops"), _count(entry, "nodes"), _count(entry, "runs"), log)


def _call(entry: dict, log: str) -> CallCount:
    return CallCount(
        _short(entry, "file"), _count(entry, "line"), _short(entry, "name", 255), _count(entry, "calls"), log
    )
