"""Cancellation: CI cancels a job with SIGTERM, a person with Ctrl-C; both must clean up, stop what
runs at once, and say so with the exit status a shell gives a program killed by that signal."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

from gbbot.core.errors import ExitCode


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where SIGINT raises KeyboardInterrupt, so the same `finally` blocks run."""


def _terminate_as_interrupt(signum: int, frame: object) -> None:
    raise Terminated(f"signal {signum}")


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM into Terminated while inside, so `finally` blocks run (main thread only:
    Python delivers signals there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def exit_status(interrupt: KeyboardInterrupt) -> ExitCode:
    """130 for Ctrl-C (128 + SIGINT), 143 for SIGTERM (128 + 15), as a shell reports either."""
    return ExitCode.TERMINATED if isinstance(interrupt, Terminated) else ExitCode.INTERRUPTED


# Set once gbbot is stopping: a backend starts no entrypoint after it, and one it starts while the
# stop is under way (a fork the warm server answers late) is stopped at once.
STOPPING = threading.Event()
