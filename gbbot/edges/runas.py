"""Who the repository's code runs as: when gbbot runs as root and `GBBOT_RUN_AS` names a user
(a name or a uid; gbbot's image sets `gbbot-runner`), every `setup:` step, entrypoint and the warm
server is started as that user (`start`: the process wrapper drops to it in the child, before exec:
setgroups([]), setgid, setuid). That user cannot write gbbot's installation, Python's or gbbot's
own temporary files (all root's), cannot signal or trace gbbot, and cannot read its `/proc`.

What it may write: the work directory of each run (`grant`), and a directory of its own made once
per gbbot process (root-owned, so its entries cannot be swapped): `home/` (HOME), `tmp/` (TMPDIR)
and `venv/`, a virtualenv over gbbot's Python whose site-packages comes first and which sees
gbbot's packages after it (torch, pip, setuptools). Its `bin/` leads PATH, so a step's
`pip install` installs there and the entrypoints, which run with that venv's `python`, import it.

Unset, empty, `root` or `0`, or gbbot not root: everything runs as gbbot's user, as before.
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gbbot.core.errors import GbbotError
from gbbot.edges import overlay, process

VARIABLE = "GBBOT_RUN_AS"


@dataclass(frozen=True)
class Runner:
    """The unprivileged user, and the directory gbbot made for it."""

    uid: int
    gid: int
    name: str
    home: Path
    tmp: Path
    venv: Path

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")


_STATE: dict[str, Runner | None] = {}


def wanted(value: str | None) -> tuple[int, int, str] | None:
    """(uid, gid, name) of the user `value` names, None for "run as gbbot"; GbbotError when
    it names no user."""
    value = (value or "").strip()
    if value in ("", "root", "0"):
        return None
    try:
        entry = pwd.getpwuid(int(value)) if value.isdigit() else pwd.getpwnam(value)
    except (KeyError, ValueError):
        if value.isdigit():  # a uid without a passwd entry (a runner's workspace owner): its own group
            return int(value), int(value), value
        raise GbbotError(f"{VARIABLE}={value!r} names no user on this machine") from None
    if entry.pw_uid == 0:
        return None
    return entry.pw_uid, entry.pw_gid, entry.pw_name


def current() -> Runner | None:
    """The run-as user for this gbbot process, made ready on first use; None where PR code runs
    as gbbot's own user (gbbot not root, or no user named)."""
    if "runner" not in _STATE:
        who = wanted(os.environ.get(VARIABLE)) if os.geteuid() == 0 else None
        _STATE["runner"] = None if who is None else _prepare(*who)
    return _STATE["runner"]


def chown_tree(path: Path, uid: int, gid: int, unwritable: bool = False) -> None:
    """`path` and everything below it (links not followed) made `uid`'s; with `unwritable`, made
    writable by its owner alone too."""
    for entry in [str(path), *(os.path.join(d, n) for d, dirs, files in os.walk(path) for n in dirs + files)]:
        os.chown(entry, uid, gid, follow_symlinks=False)
        mode = os.lstat(entry).st_mode
        if unwritable and not stat.S_ISLNK(mode) and mode & 0o022:
            os.chmod(entry, stat.S_IMODE(mode) & ~0o022)


def _prepare(uid: int, gid: int, name: str) -> Runner:
    top = Path(tempfile.mkdtemp(prefix="gbbot-run-as-"))
    top.chmod(0o755)  # root's: the user can use its entries, never replace them
    atexit.register(shutil.rmtree, top, True)
    home, tmp, venv = top / "home", top / "tmp", top / "venv"
    home.mkdir()
    tmp.mkdir()
    overlay.create(venv)  # no process: nothing of the user's runs
    for path in (home, tmp, venv):
        chown_tree(path, uid, gid)
    return Runner(uid, gid, name, home, tmp, venv)


def environment(runner: Runner, env: Mapping[str, str], venv: Path | None = None) -> dict[str, str]:
    """`env` for a process started as `runner`: its HOME, TMPDIR and venv (`venv`, when given,
    in place of the runner's own: one side's environment of a dependency-bump diff)."""
    mine = {
        **env,
        "HOME": str(runner.home),
        "USER": runner.name,
        "LOGNAME": runner.name,
        "TMPDIR": str(runner.tmp),
        "TMP": str(runner.tmp),
        "TEMP": str(runner.tmp),
    }
    return overlay.environment(mine, venv or runner.venv)


def start(cmd: Sequence[str] | str, *, env: Mapping[str, str], venv: Path | None = None, **how: Any) -> process.Running:
    """Start the repository's code (a `setup:` step, an entrypoint, the warm server) with
    process.start (`how`: its other arguments): as the run-as user where there is one, with that
    user's HOME, TMPDIR and venv; `venv` (an overlay venv, edges/overlay: one side's environment of
    a dependency-bump diff) is activated in place of the runner's. The active venv's `python`
    replaces gbbot's interpreter at the head of `cmd`, its bin/ leads PATH."""
    runner = current()
    if runner is not None:
        env = environment(runner, env, venv)
    elif venv is not None:
        env = overlay.environment(dict(env), venv)
    active = venv or (runner.venv if runner is not None else None)
    if active is not None and not isinstance(cmd, str) and cmd and cmd[0] == sys.executable:
        cmd = [str(active / "bin" / "python"), *cmd[1:]]
    return process.start(cmd, env=env, user=None if runner is None else (runner.uid, runner.gid), **how)


_BEFORE_CREDENTIALS: list[Callable[[], None]] = []


def before_credentials(end: Callable[[], None]) -> None:
    """Register `end`: it stops something that runs the repository's code (the warm server, which
    lives on between entrypoints) and is called before a credential is handed to a process."""
    _BEFORE_CREDENTIALS.append(end)


def end_untrusted() -> None:
    """Before a process gets a credential (git's push, the data branch's fetch): nothing that ran,
    or was forked from what ran, the repository's code may still run to read it there."""
    for end in list(_BEFORE_CREDENTIALS):
        end()


def child_environment(env: Mapping[str, str]) -> dict[str, str]:
    """`env` as `environment` makes it for the current run-as user, unchanged where there is none
    (the warm server's children, which it forks as that user)."""
    runner = current()
    return dict(env) if runner is None else environment(runner, env)


def grant(path: Path) -> None:
    """Let the run-as user write `path` (a run's work directory) and reach it: `path` becomes
    theirs and, when it lies in the temporary directory, gbbot's directories between the two
    become traversable (not listable). Elsewhere (`--keep-traces DIR`) DIR's parents are left
    as they are: the user must be able to reach it."""
    runner = current()
    if runner is None:
        return
    os.chown(path, runner.uid, runner.gid)
    _traversable(Path(path).resolve().parents)


def reach(path: Path) -> None:
    """Let the run-as user reach `path` (a base worktree, whose steps and entrypoints read it):
    gbbot's directories between the temporary directory and it become traversable (not listable)."""
    if current() is not None:
        _traversable(Path(path).resolve().parents)


def hand_over(tree: Path) -> None:
    """Give the run-as user a directory tree of gbbot's making (one side's overlay venv of a
    dependency-bump diff, which its setup steps install into): the tree becomes theirs, the
    directory holding it stays gbbot's but traversable, and so do gbbot's directories between the
    temporary directory and it."""
    runner = current()
    if runner is None:
        return
    chown_tree(tree, runner.uid, runner.gid)
    holder = tree.resolve().parent
    holder.chmod(stat.S_IMODE(holder.stat().st_mode) | stat.S_IXOTH)
    _traversable(holder.parents)


def take_back(tree: Path) -> None:
    """Make `tree` gbbot's again, writable by gbbot alone: gbbot's cache directory before any code
    of the repository runs (a cache a workflow restored is the runner's user's), the base side's
    environment once its steps have built it (the head's code runs as the same user next).
    Nothing where there is no run-as user: then that code runs as gbbot's own user."""
    if current() is None or not os.path.lexists(tree):
        return
    chown_tree(tree, os.geteuid(), os.getegid(), unwritable=True)


def _traversable(parents: Sequence[Path]) -> None:
    """`parents` (a path's, nearest first) up to the temporary directory, made traversable; none
    when the path is not inside it."""
    top = Path(tempfile.gettempdir()).resolve()
    if top not in parents:
        return
    for parent in parents:
        if parent == top:
            break
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            parent.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
