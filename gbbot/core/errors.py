"""Expected failures vs bugs, split once (see `main.main`)."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0  # within policy
    POLICY = 1  # the policy failed (e.g. new breaks with fail_on: new)
    USAGE = 2  # usage or config error
    INTERNAL = 3  # a bug in gbbot


class GbbotError(Exception):
    """An expected failure: printed as one clear line, exit code 2."""

    exit_code = ExitCode.USAGE


class ConfigError(GbbotError):
    def __init__(self, path: str, key: str | None, message: str) -> None:
        where = f"{path}: {key}" if key else path
        super().__init__(f"{where}: {message}")
        self.path, self.key, self.message = path, key, message


class GitError(GbbotError):
    pass


class ReportError(GbbotError):
    """A report file that is missing, not JSON, or not schema v1."""


class CalledProcessError(GbbotError):
    """A command gbbot ran itself (git, …) failed: shows command, exit code and output."""

    def __init__(self, cmd: list[str], returncode: int, stdout: str, stderr: str) -> None:
        self.cmd, self.returncode, self.stdout, self.stderr = cmd, returncode, stdout, stderr
        super().__init__(
            f"command {' '.join(cmd)!s} exited {returncode}\n"
            f"stdout: {stdout.strip() or '(none)'}\nstderr: {stderr.strip() or '(none)'}"
        )
