"""The fail policy: which graph breaks and which recompilation problems fail a check, resolved once
from the config and `--fail-on` (or the action's fail-on input), and its one verdict on a report.
Every pass/fail gbbot states comes from `Policy.verdict`: the CLI's and the action's exit code, the
action's `conclusion` output and the check run's conclusion. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from gbbot.analysis import report as report_
from gbbot.core import counts, words
from gbbot.core.config import FAIL_ON, FAIL_ON_RECOMPILES, Config
from gbbot.core.errors import ExitCode
from gbbot.core.model import EntrypointReport, GraphBreak, Report, Status


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str | None = None  # why it failed, in the one line the CLI and the action print

    @property
    def conclusion(self) -> str:
        """The check run's conclusion and the action's `conclusion` output."""
        return "success" if self.passed else "failure"

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.OK if self.passed else ExitCode.POLICY


PASSED = Verdict(True)


@dataclass(frozen=True)
class Policy:
    """`breaks`: new → the breaks the diff calls new (every break without a baseline), any → every
    break not ignored, none → never. `recompiles`: limit → frames that newly hit the recompile
    limit, new → new recompilation problems, any → every one, none → never. Build it with `of` or
    `resolve`, which fill in the recompilations' default."""

    breaks: str
    recompiles: str

    def __post_init__(self) -> None:
        if self.breaks not in FAIL_ON or self.recompiles not in FAIL_ON_RECOMPILES:
            raise ValueError(f"no such fail policy: breaks={self.breaks!r}, recompiles={self.recompiles!r}")

    @classmethod
    def of(cls, breaks: str = "new", recompiles: str | None = None) -> Policy:
        """`recompiles` None: a frame newly hitting the recompile limit fails, since it silently
        turns a compiled model eager; with `breaks: none` nothing fails."""
        if recompiles is None:
            recompiles = "none" if breaks == "none" else "limit"
        return cls(breaks, recompiles)

    @classmethod
    def resolve(cls, config: Config, override: str | None = None) -> Policy:
        """The config's `fail_on`, its breaks' part replaced by `override` when one is given
        (`--fail-on`, the action's fail-on input: they set the breaks' policy only)."""
        return cls.of(override or config.fail_on, config.fail_on_recompiles)

    def counts_break(self, new: bool) -> bool:
        """Whether a break (new, or on the base too) fails the check."""
        return self.breaks == "any" or (self.breaks == "new" and new)

    def failing_breaks(self, report: Report) -> list[GraphBreak]:
        if self.breaks == "none":
            return []
        return report_.counted(report) if self.breaks == "any" else report_.new_breaks(report)

    def failing_recompiles(self, report: Report) -> list[str]:
        """The recompilation problems (fingerprints) that fail the check."""
        from gbbot.analysis import recompile  # imports classify: only reports that get a verdict pay for it

        return recompile.failing(report, self.recompiles)

    def verdict(self, report: Report) -> Verdict:
        """An entrypoint that did not run cleanly, or compiled nothing, fails (its breaks are
        unknown) unless `breaks` is none; then the recompilations, then the breaks, each
        distinct break counted once, as every view counts them."""
        not_clean = [e for e in report.entrypoints if e.status not in counts.CLEAN]
        if self.breaks != "none" and not_clean:
            return Verdict(False, f"entrypoints did not run cleanly: {', '.join(_not_clean(e) for e in not_clean)}")
        if frames := self.failing_recompiles(report):
            what = "frame(s) newly at the recompile limit" if self.recompiles == "limit" else "recompilation problem(s)"
            return Verdict(False, f"policy fail_on.recompiles={self.recompiles}: {len(frames)} {what}")
        if failing := counts.distinct(self.failing_breaks(report)):
            return Verdict(False, words.failing_breaks(self.breaks, failing, report.diff is not None))
        return PASSED


DEFAULT = Policy.of()  # fail_on: new, and frames newly at the recompile limit


def _not_clean(entry: EntrypointReport) -> str:
    if entry.status is Status.NO_COMPILE:
        return f"{entry.name} ({entry.error or 'compiled nothing'})"
    return f"{entry.name} ({entry.status.value})"
