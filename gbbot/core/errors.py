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


TAIL_CHARS = 2000  # how much of a failed command's stdout and stderr its error shows: the end


def tail(text: str, chars: int = TAIL_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= chars else "…" + text[-chars:]


class CalledProcessError(GbbotError):
    """A command gbbot ran itself (git, …) failed: shows command, exit code and the tails of its
    stdout and stderr (the whole output stays on the exception)."""

    def __init__(self, cmd: list[str], returncode: int, stdout: str, stderr: str) -> None:
        self.cmd, self.returncode, self.stdout, self.stderr = cmd, returncode, stdout, stderr
        super().__init__(
            f"command {' '.join(cmd)!s} exited {returncode}\n"
            f"stdout: {tail(stdout) or '(none)'}\nstderr: {tail(stderr) or '(none)'}"
        )
