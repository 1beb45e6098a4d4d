"""Which Python a `run: python …` entrypoint started. Its `python` is whatever comes first on PATH,
which is not gbbot's own interpreter when gbbot was started by its full path from a virtual
environment that was never activated (`.venv/bin/gbbot check`): the entrypoint then runs under the
system's Python, usually without torch, and fails or compiles nothing for a reason the user cannot
see in its output. Said in one line after the run; with a hint when that interpreter has no torch."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gbbot.core.config import Config
from gbbot.core.model import Report

# `python …`, `python3.11 …`, `ENV=x python …`: the program a shell starts by name
PYTHON_RE = re.compile(r"^\s*(?:[A-Za-z_]\w*=\S*\s+)*(python(?:3(?:\.\d+)?)?)(?=\s|$)")
NO_TORCH = "No module named 'torch'"


def named_python(command: str) -> str | None:
    found = PYTHON_RE.match(command)
    return found.group(1) if found else None


def resolved(program: str, environ: Mapping[str, str]) -> str | None:
    found = shutil.which(program, path=environ.get("PATH", os.defpath))
    return os.path.realpath(found) if found else None


@dataclass(frozen=True)
class Note:
    line: str
    lacks_torch: bool  # the entrypoint failed for it: an error's explanation, not information


def note(config: Config, report: Report, environ: Mapping[str, str], python: str = sys.executable) -> Note | None:
    """One line when a `run:` entrypoint's `python` is another interpreter than gbbot's; None when
    they are the same (or no `run:` entrypoint names one)."""
    errors = {e.name: e.error or "" for e in report.entrypoints}
    for entrypoint in config.entrypoints:
        program = named_python(entrypoint.run or "")
        if program is None or entrypoint.name not in errors:
            continue
        env = {**environ, **dict(entrypoint.env)}
        found = resolved(program, env)
        if found is None or found == os.path.realpath(python):
            continue
        line = (
            f"{entrypoint.name}: `{program}` ran {found} (the first on PATH), not the Python gbbot runs under "
            f"({python})"
        )
        lacks_torch = NO_TORCH in errors[entrypoint.name]
        if lacks_torch:
            activate = Path(python).parent / "activate"
            line += (
                f", and it has no torch: activate the environment gbbot is in (`source {activate}`) "
                "or start the entrypoint with that Python's full path"
            )
        return Note(line, lacks_torch)
    return None
