"""The one wrapper for every process gbbot starts (git, `setup:` steps, entrypoints, the warm
server): nothing else in gbbot calls subprocess, fork or exec (tests/unit/edges/test_process.py
greps for it; the warm server, a standalone script that forks its own children, is the exception
it names).

It holds no policy: each runs the argv and the environment it is handed, as the user it is told
(who the repository's code runs as, in which environment, is edges/runas.start's). Two shapes.
`run` a command to its end and keep its output (git): it gets `stdin` or nothing and, with `check`,
a failure raises CalledProcessError showing the command, the exit code and the tails of stdout and
stderr. `start` one that runs beside gbbot (an entrypoint, a setup step, the warm server): it always
leads a process group of its own (and, by default, a session), so `kill_group` stops it together
with whatever it started in the background. And `replace_self`: gbbot re-executed with another
environment (edges/vault).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from gbbot.core.errors import CalledProcessError

KILL_GRACE_S = 3.0  # after SIGTERM, how long a process group's leader gets before SIGKILL
DEVNULL = subprocess.DEVNULL
PIPE = subprocess.PIPE
STDOUT = subprocess.STDOUT
TimeoutExpired = subprocess.TimeoutExpired  # what `run` raises past its timeout
Running = subprocess.Popen  # a started process, as `start` returns it
Output = int | IO | None  # where a started process's stdout or stderr goes


@dataclass(frozen=True)
class Finished:
    """A command `run` to its end: its exit code and everything it printed, as bytes."""

    cmd: tuple[str, ...]
    code: int
    stdout: bytes
    stderr: bytes


def run(
    cmd: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes = b"",
    timeout: float | None = None,
    check: bool = False,
    pass_fds: Sequence[int] = (),
) -> Finished:
    """Run `cmd` to its end in gbbot's own process group (Ctrl-C reaches it too). FileNotFoundError
    when the program is not there; with `check`, CalledProcessError on a non-zero exit; past
    `timeout`, the process is killed and TimeoutExpired raised."""
    proc = subprocess.run(
        list(cmd),
        cwd=cwd,
        env=None if env is None else dict(env),
        input=stdin,
        capture_output=True,
        timeout=timeout,
        pass_fds=tuple(pass_fds),
    )
    if check and proc.returncode != 0:
        out, err = (data.decode("utf-8", "replace") for data in (proc.stdout, proc.stderr))
        raise CalledProcessError(list(cmd), proc.returncode, out, err)
    return Finished(tuple(cmd), proc.returncode, proc.stdout, proc.stderr)


def start(
    cmd: Sequence[str] | str,
    *,
    cwd: Path | str,
    env: Mapping[str, str],
    stdout: Output = DEVNULL,
    stderr: Output = DEVNULL,
    text: bool = False,
    pass_fds: Sequence[int] = (),
    session: bool = True,
    user: tuple[int, int] | None = None,
) -> Running:
    """Start `cmd` (a string runs through `sh -c`) beside gbbot with `env`, stdin from /dev/null,
    leading a process group of its own: a new session too unless `session` is False (then it stays
    in gbbot's session, but a Ctrl-C at the terminal still reaches only gbbot, which stops it).
    `user`: the (uid, gid) the child switches to before exec, with no supplementary group
    (setgroups([]), setgid, setuid). OSError when it cannot start."""
    return subprocess.Popen(
        cmd,
        shell=isinstance(cmd, str),
        cwd=cwd,
        env=dict(env),
        user=None if user is None else user[0],
        group=None if user is None else user[1],
        extra_groups=None if user is None else [],
        stdin=DEVNULL,
        stdout=stdout,
        stderr=stderr,
        text=text,
        errors="replace" if text else None,
        pass_fds=tuple(pass_fds),
        start_new_session=session,
        process_group=None if session else 0,
    )


def wait(process: Running, timeout: float | None) -> bool:
    """Whether `process` ended within `timeout` seconds (None: however long it takes)."""
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def kill_group(process: Running) -> None:
    """Stop the whole process group `process` leads: TERM, a grace period for the leader, then
    KILL whatever of the group is left (background children that ignore TERM included)."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return  # nothing left in the group
    wait(process, KILL_GRACE_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def replace_self(argv: Sequence[str], env: Mapping[str, str]) -> None:
    """Become this interpreter run again with `argv` and only `env` (execve: the same pid, open
    inheritable descriptors kept); does not return. The streams are flushed first."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, list(argv), dict(env))
