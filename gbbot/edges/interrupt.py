"""Cancellation: CI cancels a job with SIGTERM, a person with Ctrl-C; both must clean up."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


def _terminate_as_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM into KeyboardInterrupt while inside, so `finally` blocks run (main thread only:
    Python delivers signals there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
