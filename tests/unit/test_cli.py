"""What the command line tells a user beyond reports: the exit codes, --quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from gbbot.core.errors import ExitCode
from gbbot.main import main
from tests.conftest import ROOT


@pytest.mark.parametrize("argv", [["--help"], ["check", "--help"], ["fix", "--help"]])
def test_help_lists_every_exit_code(argv, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    out = capsys.readouterr().out
    listed = out[out.index("exit status:") :]
    for code in ExitCode:
        assert f"\n  {int(code)} " in listed, listed
    assert "interrupted (Ctrl-C)" in listed


def test_the_docs_list_every_exit_code():
    docs = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for code in ExitCode:
        assert f"**{int(code)}**" in docs


def test_quiet_prints_nothing_for_a_report_within_policy(capsys, tmp_path: Path):
    trace = ROOT / "tests" / "fixtures" / "small.trace.log"
    assert main(["parse", str(trace), "--root", str(tmp_path), "-q", "--json", str(tmp_path / "r.json")]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == ("", "")
    assert (tmp_path / "r.json").stat().st_size > 0  # the files asked for are still written
