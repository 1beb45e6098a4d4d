"""What the command line tells a user beyond reports: the exit codes, --quiet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gbbot.analysis import report
from gbbot.core.errors import EXIT_CODES_HELP, ExitCode
from gbbot.main import COMMANDS, main
from gbbot.render import markdown
from tests.cli_helpers import gbbot_here, write
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


def test_parse_does_not_claim_a_mode_and_quiet_prints_no_progress(tmp_path: Path):
    write(tmp_path, {"log.txt": "nothing here\n", ".gbbot.yml": "version: 1\nentrypoints: [{name: t, run: 'true'}]\n"})
    out = tmp_path / "r.json"
    gbbot_here(tmp_path, "parse", "log.txt", "--json", str(out), "-q")
    assert json.loads(out.read_text())["mode"] is None
    assert "mode `unknown`" in markdown.render(report.load(out))
    quiet = gbbot_here(tmp_path, "check", "--root", str(tmp_path), "-q")
    assert quiet.returncode == 1 and "running 1 entrypoint" not in quiet.stderr and "[1/1]" not in quiet.stderr
    assert "compiled nothing" in quiet.stderr  # the verdict is still shown
