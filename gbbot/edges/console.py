"""What gbbot tells the person watching, on stderr (stdout stays for reports and workflow
commands): one-line messages and the progress of a run."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable
from typing import TextIO

from rich.console import Console

from gbbot import __version__
from gbbot.core.model import RunOutcome, Status
from gbbot.edges import running

HEARTBEAT_S = 30.0
LOG_COLUMNS = 120  # a CI log has no terminal: as wide as a log viewer shows without scrolling
REPORT_BUGS = "https://github.com/gbbot/gbbot/issues"


# In GitHub Actions, the token the job log's workflow commands are stopped with while gbbot runs:
# what the repository's code prints (an entrypoint's failure, a break's code, a setup step's
# output, a file's name) reaches the log as data, whichever of gbbot's lines it comes through.
# gbbot's own commands go through `obeyed`.
_STOPPED: list[str] = []


def stop_commands() -> None:
    """From here on the job log obeys no workflow command but gbbot's own (`obeyed`): called as
    `gbbot` starts in GitHub Actions, before any code of the repository runs."""
    if os.environ.get("GITHUB_ACTIONS") == "true" and not _STOPPED:
        _STOPPED.append(uuid.uuid4().hex)
        sys.stdout.write(f"::stop-commands::{_STOPPED[-1]}\n")
        sys.stdout.flush()


def resume_commands() -> None:
    """The log obeys workflow commands again (gbbot is done)."""
    if _STOPPED:
        sys.stdout.write(f"::{_STOPPED.pop()}::\n")
        sys.stdout.flush()


def obeyed(lines: Iterable[str], out: TextIO | None = None) -> None:
    """gbbot's own workflow commands (annotations, a log group's start and end) on `out` (stdout,
    where the runner reads them): obeyed, with the rest of the log staying data around them."""
    out = out or sys.stdout
    fenced = bool(_STOPPED) and out is sys.stdout
    if fenced:
        out.write(f"::{_STOPPED.pop()}::\n")
    for line in lines:
        out.write(line + "\n")
    if fenced:
        _STOPPED.append(uuid.uuid4().hex)
        out.write(f"::stop-commands::{_STOPPED[-1]}\n")
    out.flush()


def say(message: str) -> None:
    print(f"gbbot: {message}", file=sys.stderr, flush=True)


def say_styled(message: str) -> None:
    """`say` through rich: its markup and line wrapping, as the policy verdict has always been shown."""
    Console(stderr=True, highlight=False).print(f"gbbot: {message}")


def terminal_columns(stream: TextIO | None = None) -> int | None:
    """The columns a reader sees: `COLUMNS` when set (also for piped output), else the terminal's
    width; None for a pipe or a file with no `COLUMNS` (a log that someone greps: lines whole)."""
    stream = sys.stdout if stream is None else stream
    given = os.environ.get("COLUMNS", "").strip()
    if given.isdigit() and int(given) > 0:
        return int(given)
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        pass
    return None


def width(stream: TextIO | None = None) -> int:
    """The columns a table should fit: `terminal_columns`, else LOG_COLUMNS (a pipe or a CI log)."""
    return terminal_columns(stream) or LOG_COLUMNS


def report_form() -> tuple[int, str | None]:
    """The width and colour system (None: no colours) a report's terminal text is rendered for:
    those of stdout, which `print_report` writes it to, as wide as `width()` says."""
    console = Console(stderr=False, highlight=False, soft_wrap=False, width=width())
    return console.width, console.color_system


def print_report(text: str) -> None:
    """A report's terminal text, rendered for `report_form`, on stdout as it is."""
    sys.stdout.write(text)
    sys.stdout.flush()


def internal_error(exc: BaseException) -> None:
    """A bug in gbbot: one line on stderr, the traceback in a file to attach to an issue."""
    with tempfile.NamedTemporaryFile("w", prefix="gbbot-crash-", suffix=".log", delete=False) as log:
        traceback.print_exception(exc, file=log)
    print(
        f"gbbot: internal error: {type(exc).__name__}: {exc}\n"
        f"This is a bug in gbbot {__version__}. Please report it at {REPORT_BUGS} "
        f"with the traceback saved in {log.name}.",
        file=sys.stderr,
    )


def say_lines(lines: Iterable[str]) -> None:
    """Lines that may hold brackets and paths (e.g. `gbbot fix`'s summary), on stderr, as they are."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    for line in lines:
        err.print(line, markup=False)


def progress_printer(total: int, heartbeat_s: float = HEARTBEAT_S) -> Callable[[RunOutcome], None]:
    """A line per finished entrypoint on stderr (stdout stays for the report), and every
    `heartbeat_s` a line saying the run is still going, so a long CI log never looks stuck."""
    done = 0
    finished = threading.Event()
    started = time.monotonic()
    err = Console(stderr=True, highlight=False)

    def on_done(outcome: RunOutcome) -> None:
        nonlocal done
        done += 1
        style = "green" if outcome.status is Status.OK else "red"
        err.print(f"[{done}/{total}] {outcome.name}: [{style}]{outcome.status.value}[/] in {outcome.duration_s:.1f}s")
        if done >= total:
            finished.set()

    def heartbeat() -> None:
        while not finished.wait(heartbeat_s):
            tests = running.running_tests()
            now = f"; running {', '.join(tests)}" if tests else ""
            err.print(
                f"… {done}/{total} entrypoints finished, {time.monotonic() - started:.0f}s elapsed{now}",
                markup=False,
                soft_wrap=True,
            )

    if total:
        err.print(f"running {total} entrypoint{'s' * (total != 1)}…")
        threading.Thread(target=heartbeat, name="gbbot-progress", daemon=True).start()
    return on_done
