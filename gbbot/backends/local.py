"""The local backend: each entrypoint a subprocess of gbbot, in its own process group; what escapes
the group (a daemon) is killed when its entrypoint ends (see orphans)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping, Sequence

from gbbot.backends import orphans
from gbbot.backends.contract import (
    RunRequest,
    command,
    ended,
    environment,
    not_started,
    signal_number,
)
from gbbot.backends.groups import LIVE, SPAWNING, reap_orphans
from gbbot.core.model import RunOutcome, Status
from gbbot.edges import process, runas, vault
from gbbot.edges.interrupt import STOPPING


def run_one(request: RunRequest, base_env: Mapping[str, str] | None = None) -> RunOutcome:
    """Run one entrypoint as a subprocess in its own process group."""
    shutil.rmtree(request.trace_dir, ignore_errors=True)  # a reused --keep-traces dir
    request.work_dir.mkdir(parents=True, exist_ok=True)
    runas.grant(request.work_dir)  # the entrypoint writes its trace there
    out_path, err_path = request.work_dir / "stdout.txt", request.work_dir / "stderr.txt"
    cmd = command(request)
    if STOPPING.is_set():
        return not_started(request)
    base = vault.environ() if base_env is None else base_env
    started = time.monotonic()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        try:
            with SPAWNING:
                orphans.become_subreaper()
                running = runas.start(
                    cmd, cwd=request.root, env=environment(request, base), venv=request.venv, stdout=out, stderr=err
                )
                LIVE.add(running)
            if STOPPING.is_set():  # the stop came while it started: stop_all did not see it
                process.kill_group(running)
        except OSError as exc:
            return RunOutcome(request.entrypoint.name, Status.CRASHED, None, 0.0, reason=f"could not start: {exc}")
        try:
            timed_out = not process.wait(running, request.entrypoint.timeout)
        finally:
            process.kill_group(running)  # also reaps what the entrypoint left running in the background
            LIVE.discard(running)
            reap_orphans(request.trace_dir)
    signal_no = signal_number(running.returncode, isinstance(cmd, str))
    return ended(request, running.returncode, signal_no, timed_out, time.monotonic() - started, base)


class LocalBackend:
    """A contract Backend: `run_one` for each request, from gbbot's environment with `pinned` on top."""

    def __init__(self, pinned: Mapping[str, str] | None = None) -> None:
        self.pinned = dict(pinned or {})

    def __call__(self, request: RunRequest) -> RunOutcome:
        return run_one(request, {**vault.environ(), **self.pinned} if self.pinned else None)

    def prepare(self, requests: Sequence[RunRequest], jobs: int) -> None:
        """Nothing to get ready: each process starts when its turn comes."""

    def stop_all(self) -> None:
        for running in LIVE.of(process.Running):
            process.kill_group(running)
        with SPAWNING:
            orphans.reap(LIVE.groups, lambda _child: True)


run_local = LocalBackend()
