"""The runs in flight, for the progress line: each one's trace directory, where a `pytest:` run's
plugin names the test running now (core/model.py, RUNNING_TEST_FILE). Backends say when a run
starts and ends; the console asks what is running while it waits."""

from __future__ import annotations

import threading
from pathlib import Path

from gbbot.core.model import RUNNING_TEST_FILE

MAX_TEST_CHARS = 200  # a node id with long parameters is cut here

_LOCK = threading.Lock()
_RUNS: dict[Path, str] = {}  # trace directory → entrypoint name


def started(name: str, trace_dir: Path) -> None:
    with _LOCK:
        _RUNS[trace_dir] = name


def finished(trace_dir: Path) -> None:
    with _LOCK:
        _RUNS.pop(trace_dir, None)


def current_test(trace_dir: Path) -> str | None:
    """The node id the plugin wrote last, or None (not a pytest: run, or no test started yet)."""
    try:
        with (trace_dir / RUNNING_TEST_FILE).open(encoding="utf-8", errors="replace") as handle:
            text = handle.read(MAX_TEST_CHARS + 1).strip()
    except OSError:
        return None
    return (text[:MAX_TEST_CHARS] + "…" if len(text) > MAX_TEST_CHARS else text) or None


def running_tests() -> list[str]:
    """`name: node id` for each run in flight that is inside a test now."""
    with _LOCK:
        runs = sorted(_RUNS.items(), key=lambda item: item[1])
    return [f"{name}: {test}" for trace_dir, name in runs if (test := current_test(trace_dir))]
