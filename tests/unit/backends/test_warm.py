"""Which entrypoints the warm server runs (gbbot/backends/warm.py: a plain `python` command, a
script or a module, nothing a shell must read), and its config keys. The server itself, with real
torch: tests/e2e/test_warm.py."""

from __future__ import annotations

import json
import os

import pytest

from gbbot.backends.contract import RunRequest
from gbbot.backends.warm import launch_of
from gbbot.core.config import ConfigError, parse_config


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        ("python train.py --steps 2", ("script", "train.py", ("--steps", "2"))),
        ("python -m pkg.mod a 'b c'", ("module", "pkg.mod", ("a", "b c"))),
        ("python train.py | tee log", None),
        ("SEED=1 python train.py", None),
        ("torchrun train.py", None),
        ("python -u train.py", None),
        ("python -c 'print(1)'", None),
    ],
)
def test_only_plain_python_commands_run_warm(tmp_path, run, expected):
    (tmp_path / "train.py").write_text("")
    config = parse_config(f"version: 1\nentrypoints: [{{name: e, run: {json.dumps(run)}}}]\n")
    launch = launch_of(RunRequest(config.entrypoints[0], tmp_path, tmp_path / "w"), os.environ)
    assert (launch and (launch.kind, launch.target, launch.args)) == expected


def test_config_keys_and_no_warm(tmp_path):
    config = parse_config(
        "version: 1\nentrypoints: [{name: e, run: 'true'}]\nrunner: {warm: false, preload: [transformers]}\n"
    )
    assert config.runner.warm is False and config.runner.preload == ("transformers",)
    with pytest.raises(ConfigError, match=r"\.gbbot\.yml.*runner\.preload\[0\].*module name"):
        parse_config("version: 1\nentrypoints: [{name: e, run: 'true'}]\nrunner: {preload: ['no good']}\n")
