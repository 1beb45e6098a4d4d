"""The warm backend: entrypoints that are Python programs run in a fresh fork of a server that has
already imported torch (see warm_server), so `import torch` is paid once per gbbot run, not once
per entrypoint. Everything else runs as the local backend runs it, and so does everything when the
server cannot fork safely; the report is the same either way.

Built on the local backend (its fallback) and its bookkeeping of live process groups and orphans
(groups), where a warm child is a group too.
"""

from __future__ import annotations

import atexit
import contextlib
import fnmatch
import os
import queue
import shlex
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from gbbot.backends import expected_imports, orphans, reads_record
from gbbot.backends import warm_protocol as protocol
from gbbot.backends.contract import (
    PACKAGE_DIR,
    SHIM_DIR,
    Backend,
    RunRequest,
    command,
    ended,
    environment,
    inherits,
    not_started,
    signal_number,
)
from gbbot.backends.groups import LIVE, SPAWNING, reap_orphans
from gbbot.core.model import Reads, RunOutcome
from gbbot.core.untrusted_json import Refused
from gbbot.edges import installed, machine, process, runas, vault
from gbbot.edges.console import say
from gbbot.edges.interrupt import STOPPING
from gbbot.edges.process import KILL_GRACE_S

SERVER_FILE = Path(__file__).with_name("warm_server.py")
READS_FILE = "reads.json"  # a child's record of what it read, in its work dir
IMPORTED_FILE = "imported.json"  # the installed modules it imported, for the server to learn
# Shell syntax the warm path does not interpret: a command using any of it runs through the shell.
SHELL_SYNTAX = set("|&;<>()$`\\*?[]{}~#!\n\r")
# Variables the server's imports may have read once: a child whose value differs would not see
# its own, so it runs in a fresh process instead. The child applies the HANDLED ones itself.
IMPORT_TIME = ("TORCH*", "PYTORCH*", "OMP_*", "MKL_*", "KMP_*", "GOMP_*", "OPENBLAS_*", "CUDA*",
               "NVIDIA*", "LD_*", "PYTHON*", "HF_*", "TRANSFORMERS_*", "TOKENIZERS_*")  # fmt: skip
# Inductor reads its cache directory when it first compiles, which a child does after the fork (the
# server's warm-up compile generates no code).
HANDLED = (
    "TORCH_TRACE",
    "TORCH_LOGS",
    "TORCH_LOGS_OUT",
    "PYTHONPATH",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "TORCHINDUCTOR_CACHE_DIR",
)
# Kept out of the server's environment: set per child.
PER_CHILD = (
    "TORCH_TRACE",
    "GBBOT_MODE",
    "GBBOT_TIME",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "TORCHINDUCTOR_CACHE_DIR",
)
# numpy's OpenBLAS starts its thread pool at import, which would make every fork unsafe; a fresh
# process's BLAS threads are the one thing a warm child does not get (torch's own are unchanged).
SERVER_ONLY = {"OPENBLAS_NUM_THREADS": "1"}
# Every wait on the server has a deadline: PR code can stop it (SIGSTOP) or kill it. Importing
# torch and the preload list may take minutes on a loaded runner; an answer to a fork, or the exit
# of a child that has ended, takes milliseconds unless the server is busy with one learned import
# or the warm-up compile (seconds).
READY_DEADLINE_S = 600.0
REPLY_DEADLINE_S = 30.0


@dataclass(frozen=True)
class Launch:
    """How a child runs the program: a script path or a module, with its arguments."""

    kind: str  # "script" | "module"
    target: str
    args: tuple[str, ...]
    program: str  # argv[0] as written, for the interpreter's own messages


def words(cmd: list[str] | str) -> list[str] | None:
    """The argument vector of a command, or None when a shell would do more than split words."""
    if isinstance(cmd, list):
        return cmd
    if SHELL_SYNTAX & set(cmd):
        return None
    try:
        split = shlex.split(cmd)
    except ValueError:
        return None
    return split if split and "=" not in split[0] else None


def same_interpreter(program: str, root: Path, path_var: str, python: str = sys.executable) -> bool:
    """Whether `program` starts this very interpreter (same installation and virtualenv)."""
    found = shutil.which(program, path=path_var) if os.sep not in program else str(root / program)
    if not found or not os.access(found, os.X_OK):
        return False
    found = os.path.abspath(found)
    return Path(found).parent == Path(python).parent and os.path.realpath(found) == os.path.realpath(python)


def launch_of(request: RunRequest, env: Mapping[str, str]) -> Launch | None:
    """`python [-m] X args…` (this interpreter) → a Launch; anything else (a pipeline, torchrun, an
    interpreter option, another Python) → None: it runs in a fresh process."""
    argv = words(command(request))
    if not argv or len(argv) < 2 or not same_interpreter(argv[0], request.root, env.get("PATH", "")):
        return None
    if argv[1] == "-m" and len(argv) > 2:
        return Launch("module", argv[2], tuple(argv[3:]), argv[0])
    if argv[1].startswith("-") or not (request.root / argv[1]).is_file():
        return None
    return Launch("script", argv[1], tuple(argv[2:]), argv[0])


def import_time_difference(env: Mapping[str, str], server_env: Mapping[str, str]) -> str | None:
    """The first variable the server read at import whose value the entrypoint has otherwise."""
    names = sorted(set(env) | set(server_env))
    read = (n for n in names if n not in HANDLED and any(fnmatch.fnmatchcase(n, p) for p in IMPORT_TIME))
    return next((n for n in read if env.get(n) != server_env.get(n)), None)


# --- the server, seen from gbbot -------------------------------------------------------------


@dataclass(frozen=True)
class Lost:
    """Not a message: what a run waiting on the server learns when the server is gone."""

    reason: str


Reply = protocol.Reply | Lost


class Server:
    """One warm server process and the conversation with it: requests from any thread, replies
    routed to the thread that asked by a reader thread."""

    def __init__(
        self, preload: tuple[str, ...] | None, base: Mapping[str, str], program: Sequence[str] | None = None
    ) -> None:
        self.preload = preload  # None: learn it, from what the children import
        self.program = tuple(program or (sys.executable, str(SERVER_FILE)))  # the server's argv before its own
        # what it imports under: the allow-listed environment, without the per-child names
        self.env = {k: v for k, v in base.items() if inherits(k) and k not in PER_CHILD}
        self._lock = threading.Lock()
        self._started = False
        self._reason: str | None = None
        self._told = False
        self._replies: dict[int, queue.Queue[Reply]] = {}
        self._forked: dict[int, int] = {}  # request id → pid, while the child has not exited
        self._next = 0
        self._sock: socket.socket | None = None
        self._process: process.Running | None = None

    def unusable(self) -> str | None:
        """Why entrypoints cannot run warm (the server is started on first use), or None."""
        with self._lock:
            if not self._started:
                self._started = True
                self._reason = self._start()
            return self._reason

    def give_up(self, reason: str) -> None:
        """Run everything fresh from now on, and say why once."""
        with self._lock:
            self._reason = self._reason or reason
        self.tell_once()

    def tell_once(self) -> None:
        with self._lock:
            told, self._told = self._told, True
        if not told and self._reason and not STOPPING.is_set():
            say(f"warm server off, entrypoints run in fresh processes: {self._reason}")

    def _start(self) -> str | None:
        ours, theirs = socket.socketpair()
        try:
            self._process = runas.start(  # its children run the repository's code
                # `--learn` without a `preload:` list: it imports what each child imported, once,
                # for the later ones
                [*self.program, str(theirs.fileno()), *(["--learn"] if self.preload is None else self.preload)],
                pass_fds=(theirs.fileno(),),
                env={**self.env, **SERVER_ONLY},
                cwd="/",
                session=False,  # its own group: Ctrl-C reaches gbbot, which stops the runs; not the server
            )
        except OSError as exc:
            return f"could not start: {exc}"
        finally:
            theirs.close()
        self._sock = ours
        lines = ours.makefile("rb")
        not_ready = self._hello(ours, lines)
        if not_ready is not None:
            return not_ready
        names = installed.before_any_code()
        if names is not None:
            ours.sendall(protocol.encode(protocol.Installed(tuple(sorted(names)))))
        threading.Thread(target=self._read, args=(lines,), name="gbbot-warm", daemon=True).start()
        atexit.register(self.close)
        runas.before_credentials(self.end)
        return None

    def _hello(self, ours: socket.socket, lines: BinaryIO) -> str | None:
        """Why the server cannot fork, from its first line (None: it is ready)."""
        ours.settimeout(READY_DEADLINE_S)
        try:
            hello = lines.readline()
        except TimeoutError:
            self.lose(f"it did not say it was ready within {READY_DEADLINE_S:g} s")
            return self._reason
        ours.settimeout(None)
        if not hello:
            return "the server exited while importing"
        try:
            ready = protocol.decode(hello)
        except protocol.ProtocolError as exc:
            return f"the server said something else than it was ready: {exc}"
        if not isinstance(ready, protocol.Ready):
            return f"the server said {type(ready).__name__} before it was ready"
        return ready.reason

    def _read(self, lines: BinaryIO) -> None:
        lost = "the server stopped"
        try:
            for line in lines:
                message = protocol.decode(line)
                with self._lock:
                    replies = self._replies.get(getattr(message, "id", -1))
                    if isinstance(message, protocol.Exited):
                        self._forked.pop(message.id, None)
                if replies is not None and not isinstance(message, protocol.Fork | protocol.Go):
                    replies.put(message)
        except protocol.ProtocolError as exc:
            lost = f"the server sent what is not a reply: {exc}"
        except OSError:  # the connection reset: killed
            pass
        self.lose(lost)

    def lose(self, reason: str) -> None:
        """The server is gone, or no longer answers: every run waiting on it learns why, later ones
        run in fresh processes, and the server's process group is killed (a stopped server too)."""
        with self._lock:
            self._reason = self._reason or reason
            waiting = list(self._replies.values())
            self._replies.clear()
        for replies in waiting:
            replies.put(Lost(self._reason))
        self.kill()

    def kill(self) -> None:
        """The server's process group killed, without waiting for anything (no lock: a thread
        may hold it while the server starts)."""
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGKILL)

    def fork(self, spec: protocol.ChildSpec) -> tuple[int, int, queue.Queue[Reply]] | str:
        """Start a child: (the request's id, its pid, where its exit will arrive), or why not."""
        replies: queue.Queue[Reply] = queue.Queue()
        with self._lock:
            if self._reason:
                return self._reason
            self._next += 1
            request = protocol.Fork(self._next, spec)
            self._replies[self._next] = replies
            assert self._sock is not None
            self._sock.sendall(protocol.encode(request))
        try:
            reply = replies.get(timeout=REPLY_DEADLINE_S)
        except queue.Empty:
            self.lose(f"it did not answer a request within {REPLY_DEADLINE_S:g} s")
            return self._reason or "the server stopped"
        if isinstance(reply, protocol.Forked):
            with self._lock:
                self._forked[request.id] = reply.pid
            return request.id, reply.pid, replies
        return reply.reason if isinstance(reply, protocol.Refused | Lost) else f"the server said {reply}"

    @property
    def lost(self) -> str | None:
        """Why the server is gone or off (None: it serves)."""
        with self._lock:
            return self._reason

    def go(self, request_id: int) -> None:
        """A standby child's turn has come."""
        with self._lock:
            if self._sock is not None and not self._reason:
                with contextlib.suppress(OSError):  # a server gone: the child's exit says "lost"
                    self._sock.sendall(protocol.encode(protocol.Go(request_id)))

    def end(self) -> None:
        """Close the server for good, before gbbot hands a credential to a process: later
        entrypoints run fresh."""
        with self._lock:
            self._reason = self._reason or "it was ended before a credential was used"
        self.close()

    def close(self) -> None:
        """End the server and everything it started: it kills its children when gbbot goes away;
        one that does not end within the grace period (stopped, or busy) is killed, its group with
        it."""
        with self._lock:
            forked = list(self._forked.values())
        for pid in forked:  # each child leads its own session: the server's group is not theirs
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
        if self._process is not None:
            if not process.wait(self._process, KILL_GRACE_S):
                self.kill()
                self._process.wait()
            self.kill()  # what is left of its group (a process a learned module started)


_SHARED: dict[tuple[str, ...] | None, Server] = {}
_SHARED_LOCK = threading.Lock()


def shared_server(preload: tuple[str, ...] | None) -> Server:
    """One server per gbbot process and preload list: `diff` runs base and head on it, `fix`
    verifies on it. It never imported user code, so any tree can be run from it."""
    with _SHARED_LOCK:
        if preload not in _SHARED:
            _SHARED[preload] = Server(preload, vault.environ())
        return _SHARED[preload]


# --- running one request ----------------------------------------------------------------------


def _running(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie has ended: its parent has not reaped it yet)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rpartition(b")")[2].split()[:1] != [b"Z"]
    except OSError:
        return False


@dataclass(eq=False)  # kept in groups.LIVE by identity
class _Child:
    id: int  # the server's number for the request
    pid: int
    replies: queue.Queue[Reply]
    server: Server
    exit_code: int | None = None
    done: bool = False
    lost: str | None = None  # why its exit never came: the server was lost

    def wait(self, timeout: float | None) -> bool:
        """Whether the child ended within `timeout` seconds (None: however long it runs). A child
        that has ended but whose exit the server does not report within REPLY_DEADLINE_S (a
        stopped server) loses the server: the wait ends, without an exit code."""
        deadline = None if timeout is None else time.monotonic() + timeout
        ended_at = None
        while not self.done:
            left = 1.0 if deadline is None else min(1.0, deadline - time.monotonic())
            try:
                reply = self.replies.get(timeout=max(left, 0.0))
            except queue.Empty:
                now = time.monotonic()
                if not _running(self.pid):
                    ended_at = ended_at or now
                    if now - ended_at > REPLY_DEADLINE_S:
                        self.server.lose(f"it did not report an exit within {REPLY_DEADLINE_S:g} s")
                        continue
                if deadline is not None and now >= deadline:
                    return False
                continue
            self.done = True
            self.exit_code = reply.code if isinstance(reply, protocol.Exited) else None
            self.lost = reply.reason if isinstance(reply, Lost) else None
        return True

    def kill_group(self) -> None:
        """As the local backend: TERM the group, a grace period, then KILL what is left; the child
        leaves groups.LIVE."""
        try:
            os.killpg(self.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
        else:
            self.wait(KILL_GRACE_S)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        self.wait(None)
        LIVE.discard(self)


def spec_of(
    request: RunRequest, launch: Launch, env: Mapping[str, str], learn: bool = True, standby: bool = False
) -> protocol.ChildSpec:
    """What the server needs to fork the child; `learn`: the child leaves the names of the installed
    modules it imported (the server learns its preload from them); `standby`: it is forked before
    its turn, with the names of what its program imports first (expected_imports), and waits."""
    starts = expected_imports.start_files(request.root, launch.kind, launch.target, launch.args) if standby else []
    return protocol.ChildSpec(
        standby=standby,
        expected=tuple(expected_imports.expected(request.root, starts)) if starts else (),
        kind=launch.kind,
        target=launch.target,
        args=launch.args,
        program=launch.program,
        cwd=str(request.root),
        env=dict(env),
        stdout=str(request.work_dir / "stdout.txt"),
        stderr=str(request.work_dir / "stderr.txt"),
        shim=str(SHIM_DIR / "sitecustomize.py"),
        reads=str(request.work_dir / READS_FILE),
        learned=str(request.work_dir / IMPORTED_FILE) if learn else None,
        # gbbot's own files (the `call:` launcher, the shim), and where the run's trace is written
        unrecorded=(str(PACKAGE_DIR), str(request.work_dir)),
    )


def recorded_reads(request: RunRequest) -> Reads | None:
    """What the child says it read, or None when it left no usable record (it was killed, exited
    through os._exit, or wrote something else there: it ran PR code). A file that is not there now
    was a probe that failed (the import system tries names) or one the run made and removed; each
    file that is there is also named by its resolved path, so a symlink in the tree stands for the
    file it points to."""
    path = request.work_dir / READS_FILE
    try:
        if path.stat().st_size > reads_record.MAX_RECORD_BYTES:
            return None
        found = reads_record.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, Refused):
        return None
    there = {f for f in found.files if os.path.lexists(f)}
    return replace(found, files=frozenset(there | {os.path.realpath(f) for f in there}), absent=found.files - there)


def start_child(
    server: Server, request: RunRequest, launch: Launch, env: Mapping[str, str], standby: bool, learn: bool
) -> _Child | str:
    """Fork the child for `request` (a standby one waits for `server.go`), or say why not; `learn`:
    it leaves what it imported for the server to learn from."""
    shutil.rmtree(request.trace_dir, ignore_errors=True)  # a reused --keep-traces dir
    request.work_dir.mkdir(parents=True, exist_ok=True)
    runas.grant(request.work_dir)  # the child, forked as the run-as user, writes its trace there
    env = runas.child_environment(env)
    for record in (READS_FILE, IMPORTED_FILE):  # an earlier run's record is not this one's
        (request.work_dir / record).unlink(missing_ok=True)
    with SPAWNING:
        orphans.become_subreaper()
        forked = server.fork(spec_of(request, launch, env, learn=learn, standby=standby))
        if isinstance(forked, str):
            return forked
        child = _Child(*forked, server=server)
        LIVE.add(child)
    if STOPPING.is_set():  # the stop came while the server forked it: stop_all did not see it
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
    return child


def run_child(request: RunRequest, child: _Child, base: Mapping[str, str]) -> RunOutcome:
    """Wait for a child that runs now, within the entrypoint's timeout, and read how it ended."""
    started = time.monotonic()
    try:
        ended = child.wait(request.entrypoint.timeout)
    finally:
        child.kill_group()  # also what the entrypoint left running in the background
        reap_orphans(request.trace_dir)
    return _outcome(request, child, timed_out=not ended, duration=time.monotonic() - started, base=base)


def _outcome(
    request: RunRequest, child: _Child, timed_out: bool, duration: float, base: Mapping[str, str]
) -> RunOutcome:
    """How the run ended, as the local backend would see it: a `run:` command goes through `sh -c`,
    which reports a signal that killed Python as 128+N and says which on stderr ("Segmentation
    fault"), unless the signal killed the shell too (the group kill)."""
    through_shell = request.entrypoint.run is not None
    code = child.exit_code
    if code is not None and code < 0 and through_shell and not timed_out:
        with (request.work_dir / "stderr.txt").open("a", encoding="utf-8") as stderr:
            stderr.write(f"{signal.strsignal(-code) or f'Signal {-code}'}\n")
        code = 128 - code
    signal_no = signal_number(code, through_shell)
    lost = (
        "the warm server stopped"
        if child.lost in (None, "the server stopped")
        else f"the warm server was lost: {child.lost}"
    )
    outcome = ended(request, code, signal_no, timed_out, duration, base, unexplained_crash=lost)
    return replace(outcome, reads=recorded_reads(request))


class WarmBackend:
    """A contract Backend: Python entrypoints in a fork of the shared server, the rest (and all of
    them when the server is unusable) by `fallback`, the local backend.

    With a core to spare (`prepare`: fewer jobs than cores), the request after the ones running
    gets a standby child as soon as the one before it starts: it imports what its program imports
    first on that core, and runs when its turn comes. One standby child at a time. Without one,
    the server learns its preload from the children (when the config lists none): the spare core
    is the standby children's, and learning beside them made a check of three entrypoints 1.1x
    slower and a diff 1.07x slower, not faster."""

    def __init__(self, server: Server, fallback: Backend, pinned: Mapping[str, str] | None = None) -> None:
        self.server = server
        self.fallback = fallback
        self.pinned = dict(pinned or {})
        self._lock = threading.Lock()
        self._upcoming: list[RunRequest] = []  # what run_all will ask for next, in order
        self._spare = False  # whether those get standby children
        self._standby: dict[Path, Future] = {}  # work dir → the standby child (None: none could start)

    def prepare(self, requests: Sequence[RunRequest], jobs: int) -> None:
        """The requests about to run, `jobs` at a time; () when the runs are over, which drops a
        standby child nobody asked for (the runs were stopped). Runs whose calls are timed (`gbbot
        fix --measure`) get none: nothing else may run beside them."""
        spare = jobs < machine.cores() and not any(r.time_calls for r in requests)
        with self._lock:
            self._spare = spare and bool(requests)
            self._upcoming = list(requests) if spare else []
            left = [] if requests else list(self._standby.values())
            if not requests:
                self._standby.clear()
        for waiting in left:
            waiting.add_done_callback(_drop)

    def __call__(self, request: RunRequest) -> RunOutcome:
        if STOPPING.is_set():
            return not_started(request)
        base = {**vault.environ(), **self.pinned}
        child = self._claim(request)
        if child is None:
            env = environment(request, base)
            launch = self._runs_warm(request, env)
            if launch is None:  # it runs by the fallback, and the reason is said once
                self.server.tell_once()
                self._ready_next(base)
                return self.fallback(request)
            learn = self.server.preload is None and not self._spare
            child = start_child(self.server, request, launch, env, standby=False, learn=learn)
            if isinstance(child, str):  # the server refused to fork: it will not again
                self.server.give_up(child)
                return self.fallback(request)
        elif self.server.lost:  # gone before this child's turn: its program never started, so it runs fresh
            child.kill_group()
            return self.fallback(request)
        else:
            self.server.go(child.id)
        self._ready_next(base)
        return run_child(request, child, base)

    def _runs_warm(self, request: RunRequest, env: Mapping[str, str]) -> Launch | None:
        launch = launch_of(request, env)
        if launch is None or import_time_difference(env, self.server.env) or self.server.unusable():
            return None
        return launch

    def _claim(self, request: RunRequest) -> _Child | None:
        """The standby child made for `request`, once it is forked; None when there is none."""
        with self._lock:
            if request in self._upcoming:
                self._upcoming.remove(request)
            waiting = self._standby.pop(request.work_dir, None)
        return waiting.result() if waiting is not None else None

    def _ready_next(self, base: Mapping[str, str]) -> None:
        """A request has just got its process: fork a standby child for the next one, if it is to
        have one, on a thread of its own (after the first fork the server answers once its warm-up
        compile is done, which the request that just started must not wait for)."""
        with self._lock:
            if not self._upcoming or self._standby:
                return
            upcoming = self._upcoming[0]
            waiting: Future = Future()
            self._standby[upcoming.work_dir] = waiting
        threading.Thread(
            target=self._stand_by, args=(upcoming, base, waiting), name="gbbot-standby", daemon=True
        ).start()

    def _stand_by(self, upcoming: RunRequest, base: Mapping[str, str], waiting: Future) -> None:
        """Fork the standby child for `upcoming` (None when it runs fresh or the server refused)."""
        child = None
        try:
            env = environment(upcoming, base)
            launch = self._runs_warm(upcoming, env)
            if launch is not None:
                forked = start_child(self.server, upcoming, launch, env, standby=True, learn=False)
                child = forked if isinstance(forked, _Child) else None
        finally:
            waiting.set_result(child)

    def stop_all(self) -> None:
        """Every child killed, and the server with them: a run waiting for it to start or to fork
        (it may be importing torch) learns at once that it is gone, and starts nothing."""
        for child in LIVE.of(_Child):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
        self.server.kill()
        self.fallback.stop_all()


def _drop(waiting: Future) -> None:
    """A standby child nobody will ask for: its group is killed."""
    child = waiting.result()
    if child is not None:
        child.kill_group()
