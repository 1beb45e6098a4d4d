"""`gbbot check` run as .venv/bin/gbbot without activating the venv: `run: python …` starts the
first python on PATH, another interpreter. gbbot says which one ran, and that it has no torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gbbot.main import main
from tests.cli_helpers import write

SYSTEM_PYTHON = "/usr/bin/python3"


def _lacks_torch(python: str) -> bool:
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is not None)"
    return Path(python).exists() and subprocess.run([python, "-c", probe], check=False).returncode == 0


@pytest.mark.skipif(not _lacks_torch(SYSTEM_PYTHON), reason="needs a system python3 without torch")
def test_an_unactivated_venv_says_which_python_ran_and_that_it_lacks_torch(tmp_path, capsys, monkeypatch):
    # PATH as a shell has it when nothing was activated: the system's python first
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(SYSTEM_PYTHON)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    repo = tmp_path / "repo"
    write(
        repo,
        {
            "train.py": "import torch\n\nprint(torch.compile(lambda x: x + 1)(torch.ones(2)))\n",
            ".gbbot.yml": "version: 1\nrunner: {warm: false}\nentrypoints:\n  - {name: train, run: python train.py}\n",
        },
    )
    assert main(["check", "--root", str(repo), "-q"]) == 1
    err = capsys.readouterr().err
    ran = os.path.realpath(SYSTEM_PYTHON)
    assert f"train: `python` ran {ran} (the first on PATH), not the Python gbbot runs under ({sys.executable})" in err
    assert (
        f"it has no torch: activate the environment gbbot is in (`source {Path(sys.executable).parent}/activate`)"
        in err
    )


def test_the_same_python_says_nothing(tmp_path, capsys, monkeypatch):
    from gbbot.checks import interpreter
    from gbbot.core.config import parse_config
    from tests.builders import entrypoint, report_of

    config = parse_config("version: 1\nentrypoints:\n  - {name: train, run: python train.py}\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    found = interpreter.note(config, report_of(entrypoint("train")), {"PATH": str(bin_dir)})
    assert found is None
    assert interpreter.named_python("FOO=1 python3.11 -m bench") == "python3.11"
    assert interpreter.named_python("torchrun --nproc 2 train.py") is None
