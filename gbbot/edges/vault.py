"""Credentials held in memory only, before any code from the repository runs.

Withholding a token from what an entrypoint inherits is not enough: `/proc/<pid>/environ` shows
the environment a process was *started* with, to any process of the same user, and deleting from
`os.environ` does not change it. So when gbbot starts as a program with variables it does not keep
in its environment (core/secret_names: every secret-looking name, the action's `INPUT_*`,
`ACTIONS_*`, `*TOKEN*`, …, and everything outside the allow-list and what gbbot itself reads), it
writes them into a pipe and replaces itself (execve, same pid) with a copy of itself started
without them; the copy reads the pipe, closes it and keeps the values in this module. Then:

- it makes itself non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`): its `/proc/<pid>/environ`, `mem`,
  `fd/` and the rest belong to root and refuse processes without CAP_SYS_PTRACE;
- as root it drops CAP_SYS_PTRACE from its bounding, inheritable and ambient sets, so nothing it
  starts (entrypoints, git, docker) can gain that capability, and so none can read its memory.

What gbbot reads of its own environment (the action's inputs, what `pass_env` lets an entrypoint
have, the names `env_withheld` lists) comes from `environ()`, the held values on top of os.environ.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import stat
import sys

from gbbot.core.errors import GbbotError
from gbbot.core.secret_names import WIDEN_VARIABLE, held_at_start, widening
from gbbot.edges import process

# The variable that names the pipe in the copy; its presence also says "already re-executed".
FD_VARIABLE = "GBBOT_HELD_FD"
_HELD: dict[str, str] = {}

PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER = 47, 3
CAP_SYS_PTRACE = 19
F_SETPIPE_SZ = 1031
_CAP_VERSION_3 = 0x20080522


def environ() -> dict[str, str]:
    """gbbot's environment as it was started: os.environ with the held values on top."""
    return {**os.environ, **_HELD}


def held_names() -> tuple[str, ...]:
    return tuple(sorted(_HELD))


def widened() -> tuple[str, ...]:
    """What whoever started gbbot added to the entrypoints' allow-list (GBBOT_PASS_ENV)."""
    return widening(environ().get(WIDEN_VARIABLE))


def start(argv: list[str] | None = None) -> None:
    """Called first thing when gbbot runs as a program (never in a library or a test process):
    re-execute without secret-looking variables (does not return) or, in the copy, take them
    from the pipe; then protect the process. A platform without execve, prctl or capabilities
    keeps what it cannot change, and says nothing: these are defences in depth."""
    if FD_VARIABLE in os.environ:
        protect()
        _receive(os.environ.pop(FD_VARIABLE))
        return
    if any(held_at_start(name) for name in os.environ) and hasattr(os, "execve"):
        _reexecute(list(sys.orig_argv) if argv is None else argv)
    protect()


def _reexecute(argv: list[str]) -> None:
    held = {name: value for name, value in os.environ.items() if held_at_start(name)}
    data = json.dumps(held).encode()
    read_end, write_end = os.pipe()
    with contextlib.suppress(OSError, ImportError):  # Linux: room for the whole payload in the pipe
        import fcntl

        fcntl.fcntl(write_end, F_SETPIPE_SZ, max(len(data) + 1, 65536))
    os.set_blocking(write_end, False)
    try:
        written = os.write(write_end, data)
    except BlockingIOError:
        written = 0
    os.close(write_end)
    if written != len(data):
        os.close(read_end)
        raise GbbotError(f"the {len(held)} secret-looking environment variables ({len(data)} bytes) do not fit a pipe")
    os.set_inheritable(read_end, True)
    clean = {name: value for name, value in os.environ.items() if not held_at_start(name)}
    clean[FD_VARIABLE] = str(read_end)
    process.replace_self(argv, clean)


def _receive(fd_text: str) -> None:
    if not fd_text.isdigit():
        return
    fd = int(fd_text)
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:
        return
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    values = json.loads(b"".join(chunks) or b"{}")
    _HELD.update({str(k): str(v) for k, v in values.items()})


def _libc() -> ctypes.CDLL | None:
    if sys.platform != "linux":
        return None
    name = ctypes.util.find_library("c") or "libc.so.6"
    try:
        return ctypes.CDLL(name, use_errno=True)
    except OSError:
        return None


def protect() -> None:
    """Non-dumpable, and (as root) no CAP_SYS_PTRACE for anything started from here on."""
    libc = _libc()
    if libc is None:
        return
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    if os.geteuid() == 0:
        libc.prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0)
        libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_SYS_PTRACE, 0, 0)
        _drop_inheritable(libc, CAP_SYS_PTRACE)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_inheritable(libc: ctypes.CDLL, capability: int) -> None:
    """Clear `capability` from this process's inheritable set (capget, then capset)."""
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        return
    data[capability // 32].inheritable &= ~(1 << (capability % 32))
    libc.capset(ctypes.byref(header), data)
