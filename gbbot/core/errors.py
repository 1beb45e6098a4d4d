"""Expected failures vs bugs, split once (see `main.main`)."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0  # within policy
    POLICY = 1  # the policy failed (e.g. new breaks with fail_on: new)
    USAGE = 2  # usage or config error
    INTERNAL = 3  # a bug in gbbot
    INTERRUPTED = 130  # Ctrl-C (SIGINT), as a shell reports a program it killed: 128 + 2
    TERMINATED = 143  # SIGTERM (a cancelled CI job): 128 + 15


# What each exit status means, for `gbbot --help` and the docs (docs/configuration.md says the same).
EXIT_CODES_HELP = """\
exit status:
  0    within policy (fail_on)
  1    the policy failed: new breaks with fail_on: new, an entrypoint that did not run cleanly
       (its breaks are unknown), or a setup: step that failed
  2    usage or config error (every problem of the config listed at once)
  3    internal error: a bug in gbbot (the message says where the traceback was saved)
  130  interrupted (Ctrl-C); entrypoints still running are stopped at once
  143  stopped by SIGTERM (a cancelled CI job), as for Ctrl-C"""


class GbbotError(Exception):
    """An expected failure: printed as one clear line, exit code 2."""

    exit_code = ExitCode.USAGE


class ConfigError(GbbotError):
    def __init__(self, path: str, key: str | None, message: str) -> None:
        where = f"{path}: {key}" if key else path
        super().__init__(f"{where}: {message}")
        self.path, self.key, self.message = path, key, message


class ConfigErrors(ConfigError):
    """Every problem found in one config file, reported at once (fixing one at a time, a run each,
    is what a user would otherwise do)."""

    def __init__(self, errors: list[ConfigError]) -> None:
        self.errors = tuple(e for error in errors for e in getattr(error, "errors", (error,)))
        first = self.errors[0]
        GbbotError.__init__(
            self,
            f"{len(self.errors)} problems in {first.path}:\n"
            + "\n".join(f"  {e.key}: {e.message}" if e.key else f"  {e.message}" for e in self.errors),
        )
        self.path, self.key, self.message = first.path, first.key, first.message

    @staticmethod
    def of(errors: list[ConfigError]) -> ConfigError:
        """One error as itself, several as one ConfigErrors."""
        flat = [e for error in errors for e in getattr(error, "errors", (error,))]
        return flat[0] if len(flat) == 1 else ConfigErrors(flat)


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
