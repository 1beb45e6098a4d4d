"""Long runs show progress: a line per finished entrypoint and a heartbeat while they run."""

from __future__ import annotations

import time

from gbbot.core.model import RunOutcome, Status
from gbbot.edges.console import progress_printer


def test_progress_lines_and_heartbeat(capsys):
    on_done = progress_printer(2, heartbeat_s=0.05)
    time.sleep(0.2)
    on_done(RunOutcome("train", Status.OK, 0, 1.25))
    on_done(RunOutcome("bench", Status.TIMEOUT, None, 9.0))
    time.sleep(0.2)
    err = capsys.readouterr().err
    assert "running 2 entrypoints" in err
    assert "0/2 entrypoints finished" in err  # the heartbeat, while nothing had finished
    assert "[1/2] train: ok in 1.2s" in err and "[2/2] bench: timeout in 9.0s" in err
    after = err.split("[2/2]")[1]
    # the heartbeat stops when all are done (one line may already have been on its way)
    assert after.count("entrypoints finished") <= 1
