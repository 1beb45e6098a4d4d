"""`setup:` in .gbbot.yml: the commands that build the entrypoints' environment (`pip install -r
requirements.txt`, `pip install -e .`), run once, in order, before any entrypoint, from the
repository root, with the environment entrypoints get (gbbot's allow-list: no token) and in the
environment they run in (the same PATH, so the same `python` and `pip`).

A step that fails stops the run with one error naming the step and the end of its output, rather
than every entrypoint failing on its first import. In GitHub Actions each step's output is a folded
group of the log, and the workflow commands it might print are not obeyed (`::stop-commands::`):
it is the repository's code talking, not gbbot.
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import re
import shlex
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from gbbot.backends.contract import inherited
from gbbot.backends.groups import LIVE
from gbbot.core.config import Config
from gbbot.core.errors import ExitCode, GbbotError
from gbbot.edges import console, installed, process, runas, vault

STEP_TIMEOUT_S = 1800.0  # a cold `pip install` of a large stack takes minutes, not half an hour
TAIL_LINES = 25
# Files that say what a repository installs: when a diff changes one, the base would have needed
# other packages than the head's setup installed.
REQUIREMENT_FILES = (
    "requirements*.txt", "*requirements.txt", "constraints*.txt", "pyproject.toml", "setup.py",
    "setup.cfg", "environment.yml", "environment.yaml", "Pipfile", "Pipfile.lock", "poetry.lock", "uv.lock",
)  # fmt: skip
FILE_OPTIONS = ("-r", "--requirement", "-c", "--constraint")


class SetupFailed(GbbotError):
    """A setup step did not succeed: the run stops here (exit 1), none of the entrypoints ran."""

    exit_code = ExitCode.POLICY


@dataclass(frozen=True)
class StepResult:
    command: str
    seconds: float


@dataclass(frozen=True)
class StepEnd:
    """How one step's process ended, and the last lines it printed."""

    code: int | None
    timed_out: bool
    tail: str

    @property
    def ok(self) -> bool:
        return self.code == 0 and not self.timed_out


def step_environment(config: Config, base: Mapping[str, str]) -> dict[str, str]:
    """What a step inherits: the entrypoints' allow-list over `base`, with their pass_env and scrub_env."""
    env = inherited(base, config.pass_env, config.scrub_env)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def one_line(text: str) -> str:
    """A step's command as a log group title: one line, nothing a workflow command would read."""
    return " ".join(text.split()).replace("%", "%25")


class Log:
    """Where the steps' output goes: stderr, or in GitHub Actions stdout, one folded group per
    step with workflow commands switched off inside it."""

    def __init__(self, environ: Mapping[str, str], out: TextIO | None = None) -> None:
        self.actions = environ.get("GITHUB_ACTIONS") == "true"
        self.out = out or (sys.stdout if self.actions else sys.stderr)
        self._resume = ""

    def begin(self, number: int, total: int, command: str) -> None:
        title = f"gbbot setup {number}/{total}: {one_line(command)}"
        if self.actions:
            self._resume = uuid.uuid4().hex
            console.obeyed([f"::group::{title}"], self.out)
            self.out.write(f"::stop-commands::{self._resume}\n")
        else:
            self.out.write(f"gbbot: {title}\n")
        self.out.flush()

    def line(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def end(self, summary: str) -> None:
        if self.actions:
            self.out.write(f"::{self._resume}::\n")
            console.obeyed(["::endgroup::"], self.out)
        self.out.write(f"gbbot: {summary}\n")
        self.out.flush()


class _Forwarding:
    """A step's output on its way to the log, until the step has ended: a daemon the step left
    holding its stdout must not print once gbbot has resumed workflow commands."""

    def __init__(self, log: Log, tail: deque[str]) -> None:
        self.log, self.tail = log, tail
        self._lock = threading.Lock()
        self._open = True

    def line(self, text: str) -> None:
        with self._lock:
            if self._open:
                self.tail.append(text)
                self.log.line(text)

    def pump(self, stream: Iterable[str]) -> None:
        for text in stream:
            self.line(text)

    def close(self) -> None:
        with self._lock:
            self._open = False


def run_step(
    command: str, root: Path, env: Mapping[str, str], log: Log, timeout: float, venv: Path | None = None
) -> StepEnd:
    """One step, in its own process group, its output streamed to `log`; in `venv` when given."""
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    running = runas.start(command, cwd=root, env=env, venv=venv, stdout=process.PIPE, stderr=process.STDOUT, text=True)
    LIVE.add(running)
    forwarding = _Forwarding(log, tail)
    reader = threading.Thread(target=forwarding.pump, args=(running.stdout,), daemon=True)
    reader.start()
    try:
        timed_out = not process.wait(running, timeout)
    finally:
        process.kill_group(running)  # what a step left running in the background goes with it
        LIVE.discard(running)
    reader.join(timeout=5)
    forwarding.close()  # what still holds the pipe (a daemon that left the group) prints to no one
    return StepEnd(running.returncode, timed_out, "".join(tail).rstrip())


def failure(number: int, total: int, command: str, end: StepEnd, timeout: float) -> SetupFailed:
    how = f"timed out after {timeout:g} s" if end.timed_out else f"exited {end.code}"
    # Each line behind a gutter: the error is printed outside the log group, where a line of the
    # step's output that starts with `::` would otherwise be read as a workflow command.
    shown = "\n".join(f"  | {line}" for line in end.tail.splitlines()) or "  (no output)"
    return SetupFailed(
        f"setup failed: step {number} of {total}, `{command}`, {how}; no entrypoint ran. "
        f"The end of its output:\n{shown}"
    )


def run(
    root: Path,
    config: Config,
    base_env: Mapping[str, str] | None = None,
    log: Log | None = None,
    timeout: float = STEP_TIMEOUT_S,
    venv: Path | None = None,
) -> tuple[StepResult, ...]:
    """Run the config's setup steps in `root`, in order; SetupFailed at the first that fails. With
    `venv` (an overlay venv: one side's environment of a dependency-bump diff) they run with it
    activated, so what they install lands there."""
    installed.remember()  # before the first step: what the steps install is not learned warm
    base = vault.environ() if base_env is None else base_env
    log = log or Log(base)
    env = step_environment(config, base)
    done = []
    for number, command in enumerate(config.setup, 1):
        log.begin(number, len(config.setup), command)
        started = time.monotonic()
        end = run_step(command, root, env, log, timeout, venv)
        seconds = round(time.monotonic() - started, 1)
        if not end.ok:
            log.end(f"setup step {number} failed after {seconds:g} s")
            raise failure(number, len(config.setup), command, end, timeout)
        log.end(f"setup step {number} done in {seconds:g} s")
        done.append(StepResult(command, seconds))
    return tuple(done)


# --- the base side of a diff -------------------------------------------------------------------


def named_files(steps: Iterable[str]) -> tuple[str, ...]:
    """The files the steps name with pip's -r / -c (`pip install -r requirements/dev.txt`)."""
    found = []
    for step in steps:
        try:
            words = shlex.split(step)
        except ValueError:
            continue
        for option, value in itertools.pairwise(words):
            if option in FILE_OPTIONS:
                found.append(os.path.normpath(value))
        found += [os.path.normpath(w.split("=", 1)[1]) for w in words if w.startswith(("--requirement=", "-r="))]
    return tuple(found)


def requirement_changes(changed: Sequence[str], steps: Sequence[str]) -> tuple[str, ...]:
    """Pure: the changed paths that say what is installed: a requirement file by its name, at any
    depth, or a file the setup steps name."""
    named = set(named_files(steps))
    return tuple(
        path
        for path in changed
        if path in named or any(fnmatch.fnmatchcase(Path(path).name, p) for p in REQUIREMENT_FILES)
    )


def both_sides_note(changed: Sequence[str]) -> str | None:
    """What a diff's reader must know when the change touches what is installed: the base did not
    get its own packages."""
    if not changed:
        return None
    shown = ", ".join(f"`{p}`" for p in changed[:5]) + (", …" if len(changed) > 5 else "")
    return (  # ⚠️ first: it changes how the comparison reads, so the PR comment keeps it
        f"⚠️ Both sides ran with the head's packages: this change touches {shown}, and the merge-base's "
        "own requirements were not installed for its run."
    )


# --- a missing module that setup would have installed ------------------------------------------

MISSING_MODULE_RE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")
REQUIREMENT_NAME_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
PROJECT_NAME_RE = re.compile(r'^\s*name\s*=\s*["\']?([\w.-]+)', re.MULTILINE)
SETUP_NAME_RE = re.compile(r'\bname\s*=\s*["\']([\w.-]+)["\']')
PROJECT_FILES = (("pyproject.toml", PROJECT_NAME_RE), ("setup.cfg", PROJECT_NAME_RE), ("setup.py", SETUP_NAME_RE))


def missing_module(error: str) -> str | None:
    """The top-level module an entrypoint's output says is not installed, if it says so."""
    found = MISSING_MODULE_RE.findall(error or "")
    return found[-1].split(".")[0] if found else None


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def would_install(root: Path, steps: Sequence[str], module: str) -> bool:
    """Do the `setup:` steps name `module`'s distribution: in a `pip install` line, in a requirement
    file they name, or as the repository itself (`pip install -e .` of a project of that name, or
    one whose `src/` holds it)? Distribution and module names are compared normalised
    (`scikit-learn` ≠ `sklearn` stays a miss: then gbbot says nothing rather than something wrong)."""
    wanted = _normal(module)
    return wanted in _named_packages(root, steps)


def _named_packages(root: Path, steps: Sequence[str]) -> set[str]:
    names: set[str] = set()
    for step in steps:
        try:
            words = shlex.split(step)
        except ValueError:
            continue
        if "install" in words:
            for word in words[words.index("install") + 1 :]:
                names |= _provided(root, word)
    for path in named_files(steps):
        names |= _requirement_names(root, root / path)
    return names


def _provided(root: Path, requirement: str) -> set[str]:
    """What one requirement installs: its name (`tinydep>=1.0`), or, for a local directory (`.`,
    `./vendor/tinydep`, `-e .`, `file:vendor/x`, relative to the repository), that project's names."""
    text = re.sub(r"^(-e|--editable)(\s+|=)", "", requirement.strip()).removeprefix("file://").removeprefix("file:")
    if text.startswith("-"):
        return set()
    if text.startswith((".", "/")) or "/" in text.split("@", 1)[0]:
        directory = root / re.sub(r"\[[^\]]*\]$", "", text)  # `.[dev]`: the project, its extras aside
        return _project_names(directory) if "://" not in text and directory.is_dir() else set()
    found = REQUIREMENT_NAME_RE.match(text)
    return {_normal(found.group(1))} if found else set()


def _requirement_names(root: Path, path: Path) -> set[str]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return set()
    names: set[str] = set()
    for line in lines:
        names |= _provided(root, line.split(" #", 1)[0]) if not line.lstrip().startswith("#") else set()
    return names


def _project_names(root: Path) -> set[str]:
    """What installing a project directory provides: its project name, its `src/` packages and the
    packages at its top."""
    names: set[str] = set()
    for config, pattern in PROJECT_FILES:
        try:
            text = (root / config).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        names |= {_normal(n) for n in pattern.findall(text)}
    src = root / "src"
    if src.is_dir():
        names |= {_normal(p.stem) for p in src.iterdir() if p.is_dir() or p.suffix == ".py"}
    names |= {_normal(p.name) for p in root.iterdir() if (p / "__init__.py").is_file()}
    return names


def not_run_hint(root: Path, steps: Sequence[str], failed: Mapping[str, str], command: str = "check") -> str | None:
    """For the entrypoints that failed on a missing module (name → their output), when the config's
    `setup:` would install it and did not run: what to do."""
    for name, error in failed.items():
        module = missing_module(error)
        if module and steps and would_install(root, steps, module):
            return (
                f"{name}: no module named {module!r}, which the config's setup: installs; locally setup "
                f"runs only when asked: run `gbbot {command} --setup`"
            )
    return None
