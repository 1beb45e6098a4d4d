"""The one wrapper for commands gbbot runs itself (git, docker CLI, …)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gbbot.core.errors import CalledProcessError


def cmd_output(
    *cmd: str, cwd: Path | str | None = None, check: bool = True, env: dict | None = None
) -> tuple[int, str, str]:
    """Run `cmd`; return (exit code, stdout, stderr). With check, a non-zero exit raises
    CalledProcessError showing the command, exit code, stdout and stderr."""
    try:
        proc = subprocess.run(
            list(cmd), cwd=cwd, env=env, capture_output=True, text=True, errors="replace", stdin=subprocess.DEVNULL
        )
    except FileNotFoundError as exc:
        raise CalledProcessError(list(cmd), 127, "", str(exc)) from None
    if check and proc.returncode != 0:
        raise CalledProcessError(list(cmd), proc.returncode, proc.stdout, proc.stderr)
    return proc.returncode, proc.stdout, proc.stderr
