"""GitHub's size limits: text is fitted (collapsed, then cut at a line with a pointer to the full
report), never sent over a limit; the step's files are written as the runner reads them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gbbot.action.workflow import write_outputs, write_step_summary
from gbbot.core import limits
from gbbot.core.model import EntrypointReport, Status
from gbbot.publish.content import Texts, fitted
from gbbot.render.markdown import Options
from tests.action_run import parse_outputs
from tests.builders import graph_break, report

POINTER = "Full report: the artifact."


def test_fit_leaves_short_text_alone_and_cuts_long_text_at_a_line() -> None:
    assert limits.fit("short\ntext", 100, POINTER) == "short\ntext"
    text = "".join(f"line {i}\n" for i in range(1000))
    cut = limits.fit(text, 500, POINTER)
    assert len(cut) <= 500 and cut.endswith(POINTER)
    kept = cut.split("\n\n… (truncated)")[0]
    assert text.startswith(kept + "\n")  # whole lines only


def test_fit_bytes_counts_utf8_bytes() -> None:
    text = ("ü" * 99 + "\n") * 1000  # 199 bytes a line
    cut = limits.fit_bytes(text, 10_000, POINTER)
    assert len(cut.encode()) <= 10_000 and len(cut.encode()) > 9_000 and cut.endswith(POINTER)


def test_a_huge_report_fits_the_step_summary(tmp_path: Path) -> None:
    failing = [EntrypointReport(f"ep-{i}", Status.FAILED, 1, 1.0, 0, 0, 0, (), "é" * 60_000) for i in range(30)]
    huge = replace(report([graph_break(1)]), entrypoints=tuple(failing))
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step text\n")
    write_step_summary(
        summary,
        fitted(Texts(huge), Options(pointer=POINTER), limits.STEP_SUMMARY_MAX_BYTES - 100, lambda t: len(t.encode())),
    )
    assert summary.stat().st_size <= limits.STEP_SUMMARY_MAX_BYTES
    assert summary.read_text().startswith("earlier step text\n## ")
    assert summary.read_text().endswith(POINTER)


def test_write_step_summary_never_goes_over_1_mib(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    write_step_summary(summary, "x\n" * 1_000_000)
    write_step_summary(summary, "more\n" * 1000)
    assert summary.stat().st_size <= limits.STEP_SUMMARY_MAX_BYTES


def test_outputs_survive_any_value_and_must_be_declared(tmp_path: Path) -> None:
    output = tmp_path / "output"
    write_outputs(output, {"new-breaks": "3", "report-path": "dir\nwith newline/report.json"})
    assert parse_outputs(output.read_text()) == {"new-breaks": "3", "report-path": "dir\nwith newline/report.json"}
    with pytest.raises(ValueError, match="not declared"):
        write_outputs(output, {"newbreaks": "3"})
