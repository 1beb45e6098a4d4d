"""The local backend: each entrypoint a subprocess of gbbot, in its own process group; what escapes
the group (a daemon) is killed when its entrypoint ends (see orphans)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping

from gbbot.backends import orphans
from gbbot.backends.contract import (
    KILL_GRACE_S,
    RunRequest,
    command,
    ended,
    environment,
    signal_number,
)
from gbbot.core.model import RunOutcome, Status


def _kill_group(process: subprocess.Popen) -> None:
    """Stop the whole process group: TERM, a grace period for the leader, then KILL whatever of
    the group is left (background children that ignore TERM included)."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return  # nothing left in the group
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=KILL_GRACE_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


class _LiveProcesses:
    """Process groups still running, so an interrupt can stop them instead of waiting for them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._processes: set[subprocess.Popen] = set()

    def groups(self) -> set[int]:
        with self._lock:
            return {process.pid for process in self._processes}  # each leads its own group

    def add(self, process: subprocess.Popen) -> None:
        with self._lock:
            self._processes.add(process)

    def discard(self, process: subprocess.Popen) -> None:
        with self._lock:
            self._processes.discard(process)

    def kill_all(self) -> None:
        with self._lock:
            processes = list(self._processes)
        for process in processes:
            _kill_group(process)


LIVE = _LiveProcesses()
# Held while an entrypoint starts and while orphans are reaped: a process just started but not yet
# in LIVE would otherwise look like an orphan.
SPAWNING = threading.Lock()


def _reap_orphans(request: RunRequest) -> None:
    """Kill what this entrypoint left outside its process group, known by the TORCH_TRACE it
    inherited; once no entrypoint runs, every orphan, whatever its environment."""
    marker = f"TORCH_TRACE={request.trace_dir}"
    with SPAWNING:
        none_running = not LIVE.groups()
        orphans.reap(LIVE.groups, lambda child: none_running or orphans.environment_has(child.pid, marker))
        if none_running:
            orphans.become_subreaper(False)


def run_one(request: RunRequest, base_env: Mapping[str, str] | None = None) -> RunOutcome:
    """Run one entrypoint as a subprocess in its own process group."""
    shutil.rmtree(request.trace_dir, ignore_errors=True)  # a reused --keep-traces dir
    request.work_dir.mkdir(parents=True, exist_ok=True)
    out_path, err_path = request.work_dir / "stdout.txt", request.work_dir / "stderr.txt"
    cmd = command(request)
    base = os.environ if base_env is None else base_env
    started = time.monotonic()
    timed_out = False
    with out_path.open("wb") as out, err_path.open("wb") as err:
        try:
            with SPAWNING:
                orphans.become_subreaper()
                process = subprocess.Popen(
                    cmd,
                    shell=isinstance(cmd, str),
                    cwd=request.root,
                    env=environment(request, base),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
                LIVE.add(process)
        except OSError as exc:
            return RunOutcome(request.entrypoint.name, Status.CRASHED, None, 0.0, reason=f"could not start: {exc}")
        try:
            process.wait(timeout=request.entrypoint.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(process)  # also reaps what the entrypoint left running in the background
            LIVE.discard(process)
            _reap_orphans(request)
    signal_no = signal_number(process.returncode, isinstance(cmd, str))
    return ended(request, process.returncode, signal_no, timed_out, time.monotonic() - started, base)


class LocalBackend:
    """A contract Backend: `run_one` for each request, from gbbot's environment with `pinned` on top."""

    def __init__(self, pinned: Mapping[str, str] | None = None) -> None:
        self.pinned = dict(pinned or {})

    def __call__(self, request: RunRequest) -> RunOutcome:
        return run_one(request, {**os.environ, **self.pinned} if self.pinned else None)

    def stop_all(self) -> None:
        LIVE.kill_all()
        with SPAWNING:
            orphans.reap(LIVE.groups, lambda _child: True)


run_local = LocalBackend()
