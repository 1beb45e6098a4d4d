"""The process groups gbbot started and that still run, shared by the local and the warm backend:
an interrupt stops every one of them instead of waiting, and orphan reaping (see orphans) can tell
a group that is still ours from a daemon that escaped one."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, TypeVar

from gbbot.backends import orphans

Kind = TypeVar("Kind")


class _LiveProcesses:
    """Process groups still running, so an interrupt can stop them instead of waiting for them:
    each entry leads its own group (`.pid`), a process the local backend started or a warm child."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._processes: set[Any] = set()

    def groups(self) -> set[int]:
        with self._lock:
            return {process.pid for process in self._processes}

    def of(self, kind: type[Kind]) -> list[Kind]:
        with self._lock:
            return [process for process in self._processes if isinstance(process, kind)]

    def add(self, process: Any) -> None:
        with self._lock:
            self._processes.add(process)

    def discard(self, process: Any) -> None:
        with self._lock:
            self._processes.discard(process)


LIVE = _LiveProcesses()
# Held while an entrypoint starts and while orphans are reaped: a process just started but not yet
# in LIVE would otherwise look like an orphan.
SPAWNING = threading.Lock()


def reap_orphans(trace_dir: Path) -> None:
    """Kill what an entrypoint left outside its process group, known by the TORCH_TRACE it
    inherited; once no entrypoint runs, every orphan, whatever its environment."""
    marker = f"TORCH_TRACE={trace_dir}"
    with SPAWNING:
        none_running = not LIVE.groups()
        orphans.reap(LIVE.groups, lambda child: none_running or orphans.environment_has(child.pid, marker))
        if none_running:
            orphans.become_subreaper(False)
