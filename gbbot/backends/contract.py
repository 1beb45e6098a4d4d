"""What every backend shares: the request, the environment handed to an entrypoint, the tails of
its output, how an exit reads as a status, and running many requests `jobs` at a time.

Tokens never reach user code: an entrypoint inherits only allow-listed variables.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import gbbot
from gbbot.core import call_args
from gbbot.core.config import Entrypoint
from gbbot.core.errors import GbbotError
from gbbot.core.model import Mode, RunOutcome, Status
from gbbot.core.secret_names import ALLOWED, NEVER, SECRET_LOOKING, carries_credentials, matches
from gbbot.edges import git, installed, running, vault
from gbbot.edges.interrupt import STOPPING, sigterm_as_interrupt

PACKAGE_DIR = Path(gbbot.__file__).parent
SHIM_DIR = PACKAGE_DIR / "child" / "_shim"
PACKAGE_PARENT = Path(gbbot.__file__).resolve().parent.parent
TAIL_BYTES = 16_384


def inherits(
    name: str,
    pass_env: Sequence[str] = (),
    scrub: Sequence[str] = (),
    held: Collection[str] = (),
    widened: Sequence[str] = (),
    credentials: Collection[str] = (),
) -> bool:
    """Pure: whether an entrypoint gets gbbot's variable `name`. `widened` (GBBOT_PASS_ENV, set by
    whoever started gbbot) adds names and globs to the allow-list; so does `pass_env` (the config:
    a file of the repository, which the pull request can edit), but never for a name in `held`,
    what gbbot held at start; `scrub` removes names even if allowed. A name in `credentials` (a
    proxy whose URL holds a password) passes only when `widened` names it exactly."""
    # Names that look like credentials (core/secret_names) pass only when listed exactly, never by
    # a glob; the NEVER ones (the token, the action's inputs, ACTIONS_*) in no case.
    if matches(name, NEVER) or matches(name, scrub):
        return False
    if name in credentials:
        return name.upper() in {listed.upper() for listed in widened}
    lists = (*widened, *(() if name in held else pass_env))
    if name.upper() in {listed.upper() for listed in lists}:
        return True
    return not matches(name, SECRET_LOOKING) and matches(name, (*ALLOWED, *lists))


def inherited(base: Mapping[str, str], pass_env: Sequence[str], scrub: Sequence[str]) -> dict[str, str]:
    """What a process running the repository's code gets of `base`: `inherits`, with what gbbot
    holds and its starter's widening (edges/vault)."""
    held, widened = frozenset(vault.held_names()), vault.widened()
    credentials = {name for name, value in base.items() if carries_credentials(name, value)}
    return {name: value for name, value in base.items() if inherits(name, pass_env, scrub, held, widened, credentials)}


@dataclass(frozen=True)
class RunRequest:
    entrypoint: Entrypoint
    root: Path  # the repository (or worktree) the entrypoint runs in
    work_dir: Path  # private: trace, output, result
    mode: Mode = Mode.FAST
    scrub: tuple[str, ...] = ()
    save_result: bool = False
    pass_env: tuple[str, ...] = ()
    time_calls: bool = False  # faithful mode: the shim times each compiled call (gbbot fix --measure)
    # The environment it runs in: an overlay venv built for one side of a dependency-bump diff
    # (checks/environments); None: gbbot's, or the run-as user's venv.
    venv: Path | None = None

    @property
    def trace_dir(self) -> Path:
        return self.work_dir / "trace"

    @property
    def result_path(self) -> Path:
        return self.work_dir / "result.pt"


def entrypoint_dir(parent: Path, name: str) -> Path:
    """`parent / name`, the one way a per-entrypoint directory is made: refused unless it stays
    strictly inside `parent`, symlinks resolved (gbbot deletes and writes there)."""
    base = parent.resolve()
    inside = (base / name).resolve()
    if inside == base or not inside.is_relative_to(base):
        raise GbbotError(f"entrypoint name {name!r} would leave {parent}; names are single path components")
    return parent / name


class Backend(Protocol):
    """A backend: runs one request to its end, and stops every run still going when asked (a
    Ctrl-C or a cancelled job must not wait for entrypoints to finish)."""

    def __call__(self, request: RunRequest) -> RunOutcome: ...

    def prepare(self, requests: Sequence[RunRequest], jobs: int) -> None:
        """What will be asked, in order, `jobs` at a time (() once it is over): a backend may get
        the next request's process ready while the ones before it run."""

    def stop_all(self) -> None: ...


def command(request: RunRequest, python: str = sys.executable) -> list[str] | str:
    entrypoint = request.entrypoint
    if entrypoint.run is not None:
        return entrypoint.run
    if entrypoint.pytest is not None:
        # --gbbot: the plugin notes which trace records each test wrote (gbbot/child/pytest_plugin.py)
        return [python, "-m", "pytest", "-p", "gbbot.child.pytest_plugin", "--gbbot", *entrypoint.pytest]
    if entrypoint.model is not None:
        args = [python, "-m", "gbbot.child.launch", "--model", call_args.encode_model(entrypoint), entrypoint.model]
        return [*args, str(request.result_path)] if request.save_result else args
    given = entrypoint.args or entrypoint.kwargs
    arguments = ["--arguments", call_args.encode(entrypoint.args, entrypoint.kwargs)] if given else []
    args = [python, "-m", "gbbot.child.launch", *arguments, str(entrypoint.call)]
    return [*args, str(request.result_path)] if request.save_result else args


def environment(
    request: RunRequest,
    base: Mapping[str, str],
    shim_dir: Path = SHIM_DIR,
    package_parent: Path = PACKAGE_PARENT,
) -> dict[str, str]:
    """The entrypoint's environment: what it `inherits` of `base`, its own `env:` on top, and
    gbbot's variables last (PYTHONPATH is joined, not replaced: the shim must stay first; it is there
    in fast mode, and when the calls are timed).
    A container sees the shim and gbbot.child.launch at other paths (`shim_dir`, `package_parent`)."""
    env = inherited(base, request.pass_env, request.scrub)
    own = dict(request.entrypoint.env)
    paths = [str(shim_dir)] if request.mode is Mode.FAST or request.time_calls else []
    paths += [p for p in (own.pop("PYTHONPATH", ""), env.get("PYTHONPATH", "")) if p]
    if request.entrypoint.kind != "run":  # gbbot.child's launcher or pytest plugin runs in it
        paths.append(str(package_parent))
    env.update(own)
    env.update(
        TORCH_TRACE=str(request.trace_dir),
        GBBOT_MODE=request.mode.value,
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(paths),
    )
    if request.time_calls:
        env["GBBOT_TIME"] = "1"
    return env


def withheld(request: RunRequest, base: Mapping[str, str]) -> tuple[str, ...]:
    """The names of `base` the entrypoint does not get, sorted; never their values."""
    return tuple(sorted(set(base) - set(inherited(base, request.pass_env, request.scrub))))


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


def signal_number(returncode: int | None, through_shell: bool) -> int | None:
    """The signal that killed the process: a negative code, or 128+N reported by the shell."""
    if returncode is not None and returncode < 0:
        return -returncode
    if through_shell and returncode is not None and 128 < returncode < 160:
        return returncode - 128
    return None


def status_of(returncode: int | None, timed_out: bool, signal_no: int | None) -> Status:
    if timed_out:
        return Status.TIMEOUT
    if returncode == 0:
        return Status.OK
    return Status.CRASHED if returncode is None or signal_no else Status.FAILED


def ended(
    request: RunRequest,
    code: int | None,
    signal_no: int | None,
    timed_out: bool,
    duration: float,
    base: Mapping[str, str],
    unexplained_crash: str = "",
) -> RunOutcome:
    """How a run of `request` ended, whichever backend ran it: status, reason, output tails, and
    where its trace and result are. `unexplained_crash` words a crash with no signal to name."""
    status = status_of(code, timed_out, signal_no)
    reason = f"timed out after {request.entrypoint.timeout:g} s; process group killed" if timed_out else ""
    reason += timed_out_in(request) if timed_out else ""
    if status is Status.CRASHED:
        reason = f"killed by signal {signal_no}" if signal_no or not unexplained_crash else unexplained_crash
    if STOPPING.is_set() and status is not Status.OK:  # gbbot stopped it: nothing the entrypoint did
        status, reason = Status.INTERRUPTED, STOPPED
    return replace(outcome(request, status, code, duration, reason), env_withheld=withheld(request, base))


def outcome(request: RunRequest, status: Status, code: int | None, duration: float, reason: str) -> RunOutcome:
    """A run that ended: what every backend reports of it, the tails of its output and where its
    trace and result are."""
    return RunOutcome(
        name=request.entrypoint.name,
        status=status,
        exit_code=code,
        duration_s=round(duration, 3),
        stderr_tail=tail(request.work_dir / "stderr.txt"),
        stdout_tail=tail(request.work_dir / "stdout.txt"),
        trace_dir=str(request.trace_dir),
        result_path=str(request.result_path) if request.result_path.exists() else None,
        reason=reason,
    )


STOPPED = "stopped: gbbot was interrupted (Ctrl-C or SIGTERM)"


def not_started(request: RunRequest) -> RunOutcome:
    """A request whose turn came after gbbot began to stop: it is not started."""
    return RunOutcome(request.entrypoint.name, Status.INTERRUPTED, None, 0.0, reason=STOPPED)


def timed_out_in(request: RunRequest) -> str:
    """For a pytest: run that timed out, the test it was in: the one to shorten or leave out."""
    test = running.current_test(request.trace_dir) if request.entrypoint.pytest is not None else None
    return f"; the test running then: {test}" if test else ""


def run_all(
    requests: Sequence[RunRequest],
    backend: Backend,
    jobs: int = 1,
    on_done: Callable[[RunOutcome], None] | None = None,
) -> list[RunOutcome]:
    """Run every request, `jobs` at a time; results in request order. Each repository they run in
    has its git config pinned first (edges/git: what the entrypoints change there is undone)."""
    installed.remember()
    for root in {request.root for request in requests}:
        git.pin(root)

    def one(request: RunRequest) -> RunOutcome:
        running.started(request.entrypoint.name, request.trace_dir)
        try:
            outcome = backend(request)
        finally:
            running.finished(request.trace_dir)
        if on_done is not None:
            on_done(outcome)
        return outcome

    STOPPING.clear()
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        with sigterm_as_interrupt():
            backend.prepare(requests, jobs)
            return list(pool.map(one, requests))
    except KeyboardInterrupt:
        # Ctrl-C or a cancelled CI job: stop what runs now, start nothing more, and stop what a
        # backend starts while this is under way (edges/interrupt.STOPPING).
        STOPPING.set()
        pool.shutdown(wait=False, cancel_futures=True)
        backend.stop_all()
        raise
    finally:
        pool.shutdown(wait=True)
        backend.prepare((), jobs)
