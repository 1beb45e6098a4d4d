"""One environment per side of a diff whose change touches what `setup:` installs (a requirement
file a step names, `pyproject.toml`, the steps themselves): the base's `setup:` steps run in the
base's checkout, the head's in the head's, each in an overlay venv of its own (edges/overlay: its
site-packages first, gbbot's after it), so `tinydep==1.0` on the base and `tinydep==2.0` on the
head both run as written, and nothing is installed into gbbot's environment or the other side's.

The steps run as they do for one environment (checks/setup): the allow-listed environment (no
token), as the run-as user where there is one (the venv is made theirs to write, and the base's is
made gbbot's again before the head's code runs). Only the base's environment is kept in the cache
directory (`--cache`, the action's `cache-dir`), under a key of what built it: the steps, the
contents of the requirement files they name, the Python and gbbot's torch; and only once the base
ran cleanly in it. The head's is built by the change's code, for this run alone: it is never under
a key a later run's base reads. The `KEEP` most recently used stay, and any a run is using (it
holds the environment's lock file shared). Steps that install the repository itself (`pip install
-e .`) make an environment that points into its checkout: that one is built for this run only, like
every environment when there is no cache directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import platform
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gbbot.checks import setup as setup_steps
from gbbot.checks.baseline import installed_torch
from gbbot.core.config import Config
from gbbot.edges import overlay, runas

DIRECTORY = "environments"
KEEP = 4  # environments kept in a cache directory; the least recently used go first
COMPLETE = ".gbbot-complete"  # written last: a directory without it was left half-built
MAX_NESTING = 4  # `-r` inside a requirement file, followed this deep into the key
METADATA_BYTES = 65_536
NAME_RE = re.compile(r"^Name:\s*(\S+)", re.MULTILINE)
VERSION_RE = re.compile(r"^Version:\s*(\S+)", re.MULTILINE)


@dataclass(frozen=True)
class Environment:
    """One side's environment, ready: where it is, whether this run built it, and the versions
    its code sees (normalised distribution name → (name as published, version))."""

    venv: Path
    built: bool
    seconds: float
    packages: Mapping[str, tuple[str, str]]

    def version(self, name: str) -> str | None:
        found = self.packages.get(normal(name))
        return found[1] if found else None


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installs_repository(steps: Sequence[str]) -> bool:
    """Whether a step installs the checkout itself (`pip install -e .`, `pip install .[dev]`)."""
    for step in steps:
        try:
            words = shlex.split(step)
        except ValueError:
            return True  # unreadable: assume the worst, and keep no copy
        if "install" in words and any(w in (".", "./") or w.startswith((".[", "./[")) for w in words):
            return True
    return False


def _file_bytes(root: Path, relative: str, depth: int = 0) -> bytes:
    """A requirement file's contents, with the files it names by -r/-c (as pip reads them:
    relative to it), for the key; b"" for a missing file."""
    path = root / relative
    try:
        data = path.read_bytes()
    except OSError:
        return b"(missing)"
    if depth >= MAX_NESTING:
        return data
    lines = data.decode("utf-8", "replace").splitlines()
    nested = setup_steps.named_files(line for line in lines if line.lstrip().startswith(("-r", "-c", "--re", "--co")))
    parent = Path(relative).parent
    return data + b"".join(_file_bytes(root, str(parent / n), depth + 1) for n in nested)


def key(root: Path, steps: Sequence[str]) -> str:
    """What built an environment, hashed: the steps, the files they name (below `root`), the
    Python and the torch gbbot runs with."""
    h = hashlib.sha256()
    for part in (*steps, platform.python_version(), installed_torch() or ""):
        h.update(part.encode() + b"\0")
    for relative in setup_steps.named_files(steps):
        h.update(relative.encode() + b"\0" + _file_bytes(root, relative) + b"\0")
    return h.hexdigest()[:24]


# --- what an environment holds -----------------------------------------------------------------


def packages(venv: Path) -> dict[str, tuple[str, str]]:
    """The distributions the venv's code imports, read from their metadata files (no process: the
    files are what the pull request's steps wrote): its own site-packages first, then what gbbot's
    sys.path holds (its site directories and those their .pth files add, which the venv's .pth
    file adds after its own)."""
    found: dict[str, tuple[str, str]] = {}
    for directory in (overlay.purelib(venv), *(p for p in sys.path if p and os.path.isdir(p))):
        for name, version in _distributions(Path(directory)):
            found.setdefault(normal(name), (name, version))
    return found


def _distributions(directory: Path) -> Iterator[tuple[str, str]]:
    try:
        entries = sorted(directory.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.suffix == ".dist-info":
            meta = entry / "METADATA"
        elif entry.suffix == ".egg-info":
            meta = entry / "PKG-INFO" if entry.is_dir() else entry
        else:
            continue
        found = _name_version(meta)
        if found is not None:
            yield found


def _name_version(meta: Path) -> tuple[str, str] | None:
    try:
        if meta.is_symlink() or not meta.is_file():
            return None
        with meta.open("rb") as handle:
            text = handle.read(METADATA_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    name, version = NAME_RE.search(text), VERSION_RE.search(text)
    return (name.group(1), version.group(1)) if name and version else None


# --- building one --------------------------------------------------------------------------------


@contextlib.contextmanager
def ready(root: Path, config: Config, cache: Path | None, log: setup_steps.Log | None = None) -> Iterator[Environment]:
    """The environment the config's `setup:` steps build in `root` (one side's checkout): taken from
    the cache when it holds one built the same way, else built (and kept there when it may be);
    an environment made for this run alone is removed when the block ends. SetupFailed when a step
    fails."""
    shared = None if cache is None or installs_repository(config.setup) else cache / DIRECTORY
    if shared is None:
        scratch = Path(tempfile.mkdtemp(prefix="gbbot-env-"))
        try:
            yield _build(root, config, scratch / "venv", log)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return
    shared.mkdir(parents=True, exist_ok=True)
    venv = shared / key(root, config.setup)
    with venv.with_suffix(".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)  # held while this run uses it: not pruned meanwhile
        if (venv / COMPLETE).exists():
            (venv / COMPLETE).touch()  # used now: the last to go
            found = Environment(venv, False, 0.0, packages(venv))
        else:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one builder (two jobs may share a cache directory)
            if (venv / COMPLETE).exists():
                found = Environment(venv, False, 0.0, packages(venv))
            else:
                shutil.rmtree(venv, ignore_errors=True)  # a build that was cut short
                found = _build(root, config, venv, log)
                (venv / COMPLETE).touch()
            fcntl.flock(lock, fcntl.LOCK_SH)
        _prune(shared, keep=venv)
        yield found


def _build(root: Path, config: Config, venv: Path, log: setup_steps.Log | None) -> Environment:
    started = time.monotonic()
    overlay.create(venv)
    runas.hand_over(venv)  # where the steps run as another user, theirs to install into
    setup_steps.run(root, config, log=log, venv=venv)
    return Environment(venv, True, round(time.monotonic() - started, 1), packages(venv))


def forget(env: Environment) -> None:
    """Never hand `env` to a later run (the base that ran in it did not run cleanly): left
    unmarked as complete, the next run that wants it builds it again."""
    (env.venv / COMPLETE).unlink(missing_ok=True)


def _prune(shared: Path, keep: Path) -> None:
    """Leave the `KEEP` most recently used environments (and the one in use here); one another
    run is using (its lock held) stays too."""
    done = [p for p in shared.iterdir() if p.is_dir() and (p / COMPLETE).exists() and p != keep]
    done.sort(key=lambda p: (p / COMPLETE).stat().st_mtime, reverse=True)
    for old in done[KEEP - 1 :]:
        with old.with_suffix(".lock").open("a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            shutil.rmtree(old, ignore_errors=True)


def differences(base: Environment, head: Environment) -> tuple[tuple[str, str | None, str | None], ...]:
    """(name, base version, head version) of each distribution whose version differs between the
    two (None: not installed on that side): torch first, the others by name."""
    names = sorted(set(base.packages) | set(head.packages), key=lambda name: (name != "torch", name))
    out = []
    for name in names:
        b, h = base.packages.get(name), head.packages.get(name)
        if (b and b[1]) != (h and h[1]):
            shown = (h or b or (name, ""))[0]
            out.append((shown, b[1] if b else None, h[1] if h else None))
    return tuple(out)
