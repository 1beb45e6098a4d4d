"""Long runs show progress: a line per finished entrypoint and a heartbeat while they run."""

from __future__ import annotations

import time

from gbbot.core.model import RunOutcome, Status
from gbbot.edges import console
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


def test_in_github_actions_the_log_obeys_only_gbbots_own_workflow_commands(monkeypatch, capsys):
    """Whatever the repository's code prints reaches the job log between a stop and gbbot's own
    commands, which are let through one at a time (tests/e2e/action/test_never_green.py reads a
    whole job's log the way the runner does)."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setattr(console, "_STOPPED", [])
    console.stop_commands()
    print("::error::what an entrypoint printed")
    console.obeyed(["::warning file=model.py,line=3::gbbot's own"])
    print("::add-mask::more of it")
    console.resume_commands()
    lines = capsys.readouterr().out.splitlines()
    first, resumed, command, again, *_ = [line for line in lines if "what" not in line and "more" not in line]
    assert first.startswith("::stop-commands::") and resumed == f"::{first.removeprefix('::stop-commands::')}::"
    assert command == "::warning file=model.py,line=3::gbbot's own" and again.startswith("::stop-commands::")
    assert again != first and lines[-1] == f"::{again.removeprefix('::stop-commands::')}::"
    assert lines.index("::error::what an entrypoint printed") == 1 and lines.index("::add-mask::more of it") == 5
