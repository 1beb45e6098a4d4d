"""Run entrypoints, one process (or container) each, with TORCH_TRACE pointed at a private dir.

The only module that starts user code. Tokens never reach it: the environment is scrubbed.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import gbbot
from gbbot.config import Entrypoint
from gbbot.config import Runner as RunnerConfig
from gbbot.interrupt import sigterm_as_interrupt
from gbbot.model import Mode, RunOutcome, Status

SHIM_DIR = Path(__file__).parent / "_shim"
PACKAGE_PARENT = Path(gbbot.__file__).resolve().parent.parent
TAIL_BYTES = 16_384
KILL_GRACE_S = 3.0
# Never handed to user code: the Actions token, action inputs that carry tokens, the runner's own
# credentials (ACTIONS_RUNTIME_TOKEN, ACTIONS_ID_TOKEN_REQUEST_*), and anything that looks secret.
SCRUBBED = (
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "INPUT_*TOKEN*",
    "ACTIONS_*",
    "*_TOKEN",
    "*SECRET*",
    "*PASSWORD*",
)


def scrub_environment(environ: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """Pure: drop every variable whose name matches a scrubbed pattern (case-insensitive)."""
    patterns = [p.upper() for p in (*SCRUBBED, *extra)]
    return {
        name: value
        for name, value in environ.items()
        if not any(fnmatch.fnmatchcase(name.upper(), p) for p in patterns)
    }


@dataclass(frozen=True)
class RunRequest:
    entrypoint: Entrypoint
    root: Path  # the repository (or worktree) the entrypoint runs in
    work_dir: Path  # private: trace, output, result
    mode: Mode = Mode.FAST
    scrub: tuple[str, ...] = ()
    save_result: bool = False

    @property
    def trace_dir(self) -> Path:
        return self.work_dir / "trace"

    @property
    def result_path(self) -> Path:
        return self.work_dir / "result.pt"


def command(request: RunRequest, python: str = sys.executable) -> list[str] | str:
    entrypoint = request.entrypoint
    if entrypoint.run is not None:
        return entrypoint.run
    args = [python, "-m", "gbbot.launch", str(entrypoint.call)]
    return [*args, str(request.result_path)] if request.save_result else args


def environment(
    request: RunRequest,
    base: Mapping[str, str],
    shim_dir: Path = SHIM_DIR,
    package_parent: Path = PACKAGE_PARENT,
) -> dict[str, str]:
    """The entrypoint's environment: scrubbed, its own `env:` on top, and gbbot's variables last
    (PYTHONPATH is joined, not replaced: the fast-mode shim must stay first). A container sees the
    shim and gbbot.launch at other paths (`shim_dir`, `package_parent`)."""
    env = scrub_environment(base, request.scrub)
    own = dict(request.entrypoint.env)
    paths = [str(shim_dir)] if request.mode is Mode.FAST else []
    paths += [p for p in (own.pop("PYTHONPATH", ""), env.get("PYTHONPATH", "")) if p]
    if request.entrypoint.call:
        paths.append(str(package_parent))
    env.update(own)
    env.update(
        TORCH_TRACE=str(request.trace_dir),
        GBBOT_MODE=request.mode.value,
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(paths),
    )
    return env


def tail(path: Path, limit: int = TAIL_BYTES) -> str:
    """The end of a file that may be megabytes long, cut at a line start."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            data = handle.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if size > limit and "\n" in text:
        text = "[…]\n" + text.split("\n", 1)[1]
    return text


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


def signal_number(returncode: int | None, through_shell: bool) -> int | None:
    """The signal that killed the process: a negative code, or 128+N reported by the shell."""
    if returncode is not None and returncode < 0:
        return -returncode
    if through_shell and returncode is not None and 128 < returncode < 160:
        return returncode - 128
    return None


def _status(returncode: int | None, timed_out: bool, signal_no: int | None) -> Status:
    if timed_out:
        return Status.TIMEOUT
    if returncode == 0:
        return Status.OK
    return Status.CRASHED if returncode is None or signal_no else Status.FAILED


class Runner(Protocol):
    def __call__(self, request: RunRequest) -> RunOutcome: ...


def runner_for(settings: RunnerConfig) -> Runner:
    """The backend the config's `runner:` asks for: local subprocesses, or sibling containers."""
    if settings.backend == "container":
        from gbbot.container import ContainerRunner  # the docker SDK is imported only when used

        return ContainerRunner.connect(settings)
    return run_local


def run_local(request: RunRequest, base_env: Mapping[str, str] | None = None) -> RunOutcome:
    """Run one entrypoint as a subprocess in its own process group."""
    shutil.rmtree(request.trace_dir, ignore_errors=True)  # a reused --keep-traces dir
    request.work_dir.mkdir(parents=True, exist_ok=True)
    out_path, err_path = request.work_dir / "stdout.txt", request.work_dir / "stderr.txt"
    cmd = command(request)
    started = time.monotonic()
    timed_out = False
    with out_path.open("wb") as out, err_path.open("wb") as err:
        try:
            process = subprocess.Popen(
                cmd,
                shell=isinstance(cmd, str),
                cwd=request.root,
                env=environment(request, os.environ if base_env is None else base_env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            return RunOutcome(request.entrypoint.name, Status.CRASHED, None, 0.0, reason=f"could not start: {exc}")
        LIVE.add(process)
        try:
            process.wait(timeout=request.entrypoint.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(process)  # also reaps what the entrypoint left running in the background
            LIVE.discard(process)
    duration = time.monotonic() - started
    signal_no = signal_number(process.returncode, isinstance(cmd, str))
    status = _status(process.returncode, timed_out, signal_no)
    reason = f"timed out after {request.entrypoint.timeout:g} s; process group killed" if timed_out else ""
    if status is Status.CRASHED:
        reason = f"killed by signal {signal_no}"
    return RunOutcome(
        name=request.entrypoint.name,
        status=status,
        exit_code=process.returncode,
        duration_s=round(duration, 3),
        stderr_tail=tail(err_path),
        stdout_tail=tail(out_path),
        trace_dir=str(request.trace_dir),
        result_path=str(request.result_path) if request.result_path.exists() else None,
        reason=reason,
    )


def run_all(
    requests: Sequence[RunRequest],
    runner: Runner = run_local,
    jobs: int = 1,
    on_done: Callable[[RunOutcome], None] | None = None,
) -> list[RunOutcome]:
    """Run every request, `jobs` at a time; results in request order."""

    def one(request: RunRequest) -> RunOutcome:
        outcome = runner(request)
        if on_done is not None:
            on_done(outcome)
        return outcome

    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        with sigterm_as_interrupt():
            return list(pool.map(one, requests))
    except KeyboardInterrupt:
        # Ctrl-C or a cancelled CI job: stop what runs now, start nothing more.
        pool.shutdown(wait=False, cancel_futures=True)
        LIVE.kill_all()
        raise
    finally:
        pool.shutdown(wait=True)
