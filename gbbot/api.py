"""gbbot as a library: check, diff and fix a source tree. Each takes typed options and returns
values, and raises `GbbotError` (gbbot/core/errors.py) for what a user can correct; the command line
(gbbot/commands/) and the GitHub Action (gbbot/action/) are two callers of these functions.

    from gbbot import api
    config = load_config(root / ".gbbot.yml")
    report = api.check(root, config, api.CheckOptions(jobs=2))
    verdict = api.Policy.resolve(config).verdict(report)  # passed, and why not
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gbbot.analysis import advice as _advice
from gbbot.analysis import classify as _classify
from gbbot.analysis import report as _report
from gbbot.analysis import shards as _shards
from gbbot.analysis.policy import Policy, Verdict
from gbbot.checks import build as _build
from gbbot.checks import interpreter as _interpreter
from gbbot.checks import setup as _setup
from gbbot.checks.baseline import RecordedBase
from gbbot.checks.baseline import untouched as untouched_cache
from gbbot.checks.head_and_base import (
    DiffOptions,
    DiffRun,
    Log,
    Progress,
    SetupRun,
    check_and_keep,
    no_progress,
    run_diff,
)
from gbbot.checks.tree import CheckOptions, Shard, check, from_logs, select
from gbbot.core import jobs as _jobs
from gbbot.core.config import Config
from gbbot.core.fixes import Advice
from gbbot.core.model import BreakMessage, Report
from gbbot.edges.console import say
from gbbot.edges.machine import this_machine
from gbbot.trace import registry_entry

if TYPE_CHECKING:  # the fix pipeline imports LibCST: only `fix` pays for it
    from gbbot.fix.pipeline import FixOptions, FixRun

__all__ = [
    "CheckOptions",
    "DiffOptions",
    "DiffRun",
    "Explained",
    "FixOptions",
    "FixRun",
    "Log",
    "Policy",
    "Progress",
    "RecordedBase",
    "SetupFailed",
    "SetupRun",
    "Shard",
    "ShardReport",
    "Verdict",
    "audit_record",
    "check",
    "check_and_keep",
    "diff",
    "dumps_report",
    "explain",
    "fix",
    "fix_summary",
    "interpreter_note",
    "jobs_for",
    "load_report",
    "load_untrusted_report",
    "merge",
    "new_breaks",
    "no_progress",
    "parse_logs",
    "select",
    "setup",
    "setup_not_run",
    "try_models",
    "untouched_cache",
    "write_report",
]


def jobs_for(requested: int | str, config: Config) -> int:
    """`--jobs` / the `jobs` input as a number: `auto` is worked out from this machine, and is 1
    when the config's runner asks for GPUs or the machine has one."""
    if requested != _jobs.AUTO:
        return int(requested)
    return _jobs.auto(this_machine(config_asks_for_gpu=config.runner.gpus is not None))


def setup(root: Path, config: Config) -> None:
    """Run the config's `setup:` steps in `root`, in the environment the entrypoints will run in;
    `SetupFailed` (exit 1) names the step that failed and shows the end of its output."""
    _setup.run(root, config)


SetupFailed = _setup.SetupFailed


def interpreter_note(config: Config, report: Report) -> _interpreter.Note | None:
    """When a `run: python …` entrypoint started another Python than gbbot's (a virtual environment
    that was not activated): which one it was, with a hint when it has no torch."""
    return _interpreter.note(config, report, os.environ)


def try_models(
    root: Path, candidates: Sequence[Mapping], settings: Mapping[str, object], wanted: int
) -> dict[str, dict]:
    """`gbbot init`'s builds: model candidates built small and called once, uncompiled, in a child
    (it runs the repository's code), in order until `wanted` ran; by name, the checked config
    values that ran, or the error."""
    return _build.try_models(root, candidates, settings, wanted)


def setup_not_run(root: Path, config: Config, report: Report, command: str = "check") -> str | None:
    """When setup did not run and an entrypoint failed on a module the config's `setup:` installs:
    one line saying to run it (`gbbot check --setup`); None otherwise."""
    failed = {e.name: e.error or "" for e in report.entrypoints if e.error}
    return _setup.not_run_hint(root, config.setup, failed, command)


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


def fix_summary(run: FixRun) -> tuple[str, ...]:
    """What a fix run did, in the lines `gbbot fix` prints at the end."""
    from gbbot.fix import present

    return tuple(present.summary_lines(run))


def __getattr__(name: str) -> object:
    """`FixOptions` and `FixRun`, imported on first use: the fix pipeline imports LibCST, and only
    callers that fix should pay for it."""
    if name in ("FixOptions", "FixRun"):
        from gbbot.fix import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Reports as files, for callers that keep or exchange them (a report from another job is untrusted:
# bounded, then schema-checked), the breaks a diff calls new, shard reports joined, and what the
# installed torch's registry says about an id.
write_report = _report.write
load_report = _report.load
dumps_report = _report.dumps
load_untrusted_report = _report.load_untrusted
new_breaks = _report.new_breaks
ShardReport = _shards.ShardReport
merge = _shards.merge


@dataclass(frozen=True)
class Explained:
    """`gbbot explain`: torch's entry for an id, what gbbot calls that kind of break, the `gbbot fix`
    recipes that may patch it (their titles, in the order they are tried) and gbbot's advice."""

    entry: registry_entry.Entry
    title: str
    recipes: tuple[str, ...]
    advice: tuple[Advice, ...]


def explain(gb_id: str) -> Explained:
    """What the installed torch's registry says about `gb_id` (torch is read, not imported)."""
    from gbbot import recipes  # LibCST: only explain and fix pay for it

    entry = registry_entry.explain(gb_id)
    rule = _classify.load_rules().rule(BreakMessage(entry.gb_type, entry.gb_id))
    own = recipes.by_id(entry.gb_id)  # the recipe that declares it takes this id
    titles = tuple(dict.fromkeys(r.title for r in recipes.variants(own)))
    return Explained(entry, rule.title if rule else "", titles, _advice.for_kind(entry.gb_id, entry.gb_type))
