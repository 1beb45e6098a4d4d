"""What gbbot tells the person watching, on stderr (stdout stays for reports and workflow
commands): one-line messages and the progress of a run."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from rich.console import Console

from gbbot.model import RunOutcome, Status

HEARTBEAT_S = 30.0


def say(message: str) -> None:
    print(f"gbbot: {message}", file=sys.stderr, flush=True)


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
            err.print(f"… {done}/{total} entrypoints finished, {time.monotonic() - started:.0f}s elapsed")

    if total:
        err.print(f"running {total} entrypoint{'s' * (total != 1)}…")
        threading.Thread(target=heartbeat, name="gbbot-progress", daemon=True).start()
    return on_done
