"""The `call:` launcher, run in a fresh process: what a user reads when the target is not there."""

from __future__ import annotations

import textwrap

from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import parse_config
from tests.cli_helpers import write


def run(root, body: str):
    """`gbbot check` with the launcher in a fresh process: a warm server would import torch."""
    write(root, {".gbbot.yml": "version: 1\nrunner: {warm: false}\n" + textwrap.dedent(body)})
    config = parse_config((root / ".gbbot.yml").read_text())
    return check(root, config, CheckOptions())


def test_a_missing_call_target_is_one_line(tmp_path):
    write(tmp_path, {"model.py": "def main():\n    return 1\n"})
    result = run(
        tmp_path,
        """\
        entrypoints:
          - {name: nomodule, call: 'nowhere.bench:main'}
          - {name: noattr, call: 'model:mian'}
        """,
    )
    by_name = {e.name: e for e in result.entrypoints}
    assert by_name["nomodule"].error.strip().splitlines()[-1] == (
        "gbbot: call target 'nowhere.bench:main' not found: ModuleNotFoundError: No module named 'nowhere'"
    )
    assert "Traceback" not in by_name["noattr"].error
    assert "has no attribute 'mian'" in by_name["noattr"].error
