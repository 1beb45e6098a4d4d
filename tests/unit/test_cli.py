"""What the command line tells a user beyond reports: the exit codes, --quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from gbbot.core.errors import EXIT_CODES_HELP, ExitCode
from gbbot.main import COMMANDS, main
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


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_commands_help_ends_with_the_exit_codes(command, capsys):
    """`explain`, `render` and `action` too: the block a script's author looks for is last."""
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert capsys.readouterr().out.rstrip().endswith(EXIT_CODES_HELP.rstrip())


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_option_of_every_command_says_what_it_does(command):
    import argparse

    from gbbot.main import parser

    [commands] = [a for a in parser(command)._actions if isinstance(a, argparse._SubParsersAction)]
    options = [a for a in commands.choices[command]._actions if a.option_strings and a.dest != "help"]
    assert [a.option_strings for a in options if not a.help] == []


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
