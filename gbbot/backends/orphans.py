"""Descendants that escaped their entrypoint's process group (a daemon that called setsid) must not
outlive gbbot. On Linux gbbot becomes a child subreaper, so such orphans are re-parented to gbbot
instead of init, and are killed and reaped here. Elsewhere nothing of this exists and an escaped
daemon keeps running, as before: the process-group kill is all there is.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
PROC = Path("/proc")
ROUNDS = 20  # a killed daemon's own children are re-parented to gbbot a moment later
ROUND_PAUSE_S = 0.05


@dataclass(frozen=True)
class Child:
    """A direct child of gbbot, as /proc/<pid>/stat describes it."""

    pid: int
    parent: int
    group: int
    session: int
    zombie: bool


def parse_stat(text: str) -> Child:
    """Pure: /proc/<pid>/stat → Child. The command name may hold spaces and parentheses, so the
    fields are counted from the last ')'."""
    head, _, rest = text.rpartition(")")
    state, parent, group, session = rest.split()[:4]
    return Child(int(head.split(" (", 1)[0]), int(parent), int(group), int(session), state in "ZX")


def _children_of(parent: int) -> list[Child]:
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            child = parse_stat((entry / "stat").read_text(errors="replace"))
        except (OSError, ValueError):
            continue  # gone meanwhile
        if child.parent == parent:
            found.append(child)
    return found


def environment_has(pid: int, entry: str) -> bool:
    """Whether the process started with `entry` (NAME=value) in its environment."""
    try:
        return entry.encode() in (PROC / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


def become_subreaper(on: bool = True) -> bool:
    """Make orphaned descendants gbbot's children (Linux 3.4+); False where that is not possible."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0


def reap(live_groups: Callable[[], Collection[int]], claims: Callable[[Child], bool]) -> list[int]:
    """Kill and reap gbbot's orphaned children that `claims` names, with their process groups.
    Never one in gbbot's own session (gbbot's helpers, such as git) nor in a running entrypoint's
    process group (that group's own kill takes care of it). Dead ones are reaped either way.
    Returns the pids reaped."""
    if not sys.platform.startswith("linux"):
        return []
    own, session = os.getpid(), os.getsid(0)
    reaped: list[int] = []
    for _ in range(ROUNDS):
        groups = set(live_groups())
        found = [
            c for c in _children_of(own) if c.session != session and c.group not in groups and (c.zombie or claims(c))
        ]
        if not found:
            break
        for child in found:
            if not child.zombie:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.group, signal.SIGKILL)
        for child in found:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child.pid, 0)
            reaped.append(child.pid)
        time.sleep(ROUND_PAUSE_S)
    return reaped
