"""gbbot as a library: check, diff and fix a source tree. Each takes typed options and returns
values, and raises `GbbotError` (gbbot/core/errors.py) for what a user can correct; the command line
(gbbot/commands/) and the GitHub Action (gbbot/action/) are two callers of these functions.

    from gbbot import api
    report = api.check(root, load_config(root / ".gbbot.yml"), api.CheckOptions(jobs=2))
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gbbot.analysis import recompile
from gbbot.analysis import report as report_
from gbbot.checks.baseline import RecordedBase
from gbbot.checks.head_and_base import DiffOptions, DiffRun, Log, Progress, no_progress, run_diff
from gbbot.checks.tree import CheckOptions, Shard, check, from_logs, select
from gbbot.core import counts
from gbbot.core.config import Config
from gbbot.core.model import EntrypointReport, Report, Status
from gbbot.edges.console import say

if TYPE_CHECKING:  # the fix pipeline imports LibCST: only `fix` pays for it
    from gbbot.fix.pipeline import FixOptions, FixRun

__all__ = [
    "CheckOptions",
    "DiffOptions",
    "DiffRun",
    "Log",
    "Progress",
    "RecordedBase",
    "Shard",
    "audit_record",
    "check",
    "diff",
    "fix",
    "no_progress",
    "parse_logs",
    "policy_breach",
    "select",
]


def diff(root: Path, config: Config, options: DiffOptions, progress: Progress = no_progress, log: Log = say) -> DiffRun:
    """The working tree's report with its diff against the merge-base of `options.base` and HEAD."""
    return run_diff(root, config, options, progress, log)


def parse_logs(path: Path, root: Path, name: str = "log") -> Report:
    """A report from existing logs (a TORCH_TRACE directory or file, or TORCH_LOGS text)."""
    return from_logs(path, root, name)


def audit_record(branch: str | None, cache: Path | None = None) -> RecordedBase | None:
    """The nightly audit's record of the merge-base on the data branch `branch`, as a diff's
    recorded base (None when no branch is named). Reading records needs jsonschema: only this
    option pays for importing it."""
    if not branch:
        return None
    from gbbot.audit.reuse import RecordOnBranch

    return RecordOnBranch(branch, "trying the cache" if cache else "running the base")


def fix(root: Path, config: Config, options: FixOptions | None = None, report: Report | None = None) -> FixRun:
    """Verified patches for the easy breaks of `report` (None: run the entrypoints first)."""
    from gbbot.fix import pipeline

    return pipeline.fix(root, config, options or pipeline.FixOptions(), report)


def policy_breach(result: Report, fail_on: str, recompiles: str | None = None) -> str | None:
    """Why `result` fails the `fail_on` policy (`recompiles`: the recompilation policy, None for
    its default), or None when it passes. An entrypoint that did not run cleanly, or compiled
    nothing, is a failure too (its breaks are unknown), unless fail_on is none. Breaks are counted
    as every view counts them: each distinct break once."""
    not_clean = [e for e in result.entrypoints if e.status not in counts.CLEAN]
    if fail_on != "none" and not_clean:
        return f"entrypoints did not run cleanly: {', '.join(_not_clean(e) for e in not_clean)}"
    if not report_.policy_failed(result, fail_on, recompiles):
        return None
    recompile_policy = report_.recompile_policy(fail_on, recompiles)
    if failing_frames := recompile.failing(result, recompile_policy):
        what = "frame(s) newly at the recompile limit" if recompile_policy == "limit" else "recompilation problem(s)"
        return f"policy fail_on.recompiles={recompile_policy}: {len(failing_frames)} {what}"
    failing = counts.distinct(report_.new_breaks(result) if fail_on == "new" else report_.counted(result))
    what = "new graph break" if fail_on == "new" and result.diff else "graph break"
    return f"policy fail_on={fail_on}: {failing} {what}{'s' * (failing != 1)}"


def _not_clean(entry: EntrypointReport) -> str:
    if entry.status is Status.NO_COMPILE:
        return f"{entry.name} ({entry.error or 'compiled nothing'})"
    return f"{entry.name} ({entry.status.value})"
