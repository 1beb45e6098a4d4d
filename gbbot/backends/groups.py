"""The process groups gbbot started and that still run, shared by the local and the warm backend:
an interrupt stops every one of them instead of waiting, and orphan reaping (see orphans) can tell
a group that is still ours from a daemon that escaped one."""

from __future__ import annotations

import threading

from gbbot.edges.process import Running, kill_group


class _LiveProcesses:
    """Process groups still running, so an interrupt can stop them instead of waiting for them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._processes: set[Running] = set()

    def groups(self) -> set[int]:
        with self._lock:
            return {process.pid for process in self._processes}  # each leads its own group

    def add(self, process: Running) -> None:
        with self._lock:
            self._processes.add(process)

    def discard(self, process: Running) -> None:
        with self._lock:
            self._processes.discard(process)

    def kill_all(self) -> None:
        with self._lock:
            processes = list(self._processes)
        for process in processes:
            kill_group(process)


LIVE = _LiveProcesses()
# Held while an entrypoint starts and while orphans are reaped: a process just started but not yet
# in LIVE would otherwise look like an orphan.
SPAWNING = threading.Lock()
