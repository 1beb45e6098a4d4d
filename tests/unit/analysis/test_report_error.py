"""What a report keeps of a run that did not end cleanly: enough to say why on screen."""

from __future__ import annotations

from gbbot.analysis import report
from gbbot.core.model import RunOutcome, Status, TraceLog

NOTHING = TraceLog((), ())  # the run compiled nothing before it failed


def test_a_run_that_wrote_only_to_stdout_keeps_that_as_its_error():
    failed = RunOutcome("silent", Status.FAILED, 1, 0.5, stdout_tail="loss nan at step 3\n")
    entry = report.entrypoint_report(failed, NOTHING, ())
    assert entry.error == "loss nan at step 3"  # not None: the terminal has something to show


def test_a_timeout_keeps_its_reason_and_the_last_output_of_both_streams():
    hung = RunOutcome(
        "sample",
        Status.TIMEOUT,
        None,
        60.0,
        stdout_tail="sampling step 1/50\n",
        stderr_tail="UserWarning: slow\n",
        reason="timed out after 60 s; process group killed",
    )
    entry = report.entrypoint_report(hung, NOTHING, ())
    assert entry.error == (
        "timed out after 60 s; process group killed\nstdout:\nsampling step 1/50\nstderr:\nUserWarning: slow"
    )


def test_stderr_is_the_error_when_there_is_one():
    failed = RunOutcome("f", Status.FAILED, 1, 0.5, stdout_tail="progress\n", stderr_tail="ValueError: x\n")
    assert report.entrypoint_report(failed, NOTHING, ()).error == "ValueError: x"
