"""`gbbot fix` end to end: baseline run → plan → verify each candidate → (apply). It composes
the package's steps: `workspace` (the repository), `rerun` (runs in a scratch copy), `batch`
(verification rounds) and `apply` (writing verified patches into the repository)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from gbbot import git
from gbbot.check import CheckOptions, select
from gbbot.config import Config
from gbbot.fix import plan as planning
from gbbot.fix import result as fix_result
from gbbot.fix.apply import Applied, Chosen, apply_all
from gbbot.fix.batch import Scope, verify_all
from gbbot.fix.compare import ChildComparer
from gbbot.fix.rerun import Baseline, Rerun, attempt, observe_named
from gbbot.fix.result import FixResult
from gbbot.fix.verify import Judgement, ResultComparer, Scratch, default_runner
from gbbot.fix.workspace import library_lookup, repo_reader
from gbbot.model import GraphBreak, Mode, Report
from gbbot.runner.contract import Runner


@dataclass(frozen=True)
class FixOptions:
    apply: bool = False
    only: tuple[str, ...] = ()  # gb ids or recipe ids
    fingerprints: tuple[str, ...] = ()
    entrypoints: tuple[str, ...] = ()  # run only these (no report given)
    mode: Mode | None = None
    jobs: int = 2
    runner: Runner | None = None
    compare: ResultComparer | None = None  # None: in a child of the runner (compare.ChildComparer)
    progress: Callable[[str], None] = field(default=lambda _message: None)


@dataclass(frozen=True)
class FixRun:
    report: Report  # the baseline, with extra["fixes"]
    results: tuple[FixResult, ...]
    written: tuple[str, ...] = ()  # repository files written (apply)
    joint: tuple[Judgement, ...] = ()  # patches sharing a file or entrypoint, verified together (apply)
    notes: tuple[str, ...] = ()  # what the user should know: collisions, files left alone
    after: Report | None = None  # the runs behind `joint`
    unwritten: tuple[str, ...] = ()  # files whose verified patch was not written (apply)


def _rerun(scratch: Scratch, config: Config, options: FixOptions) -> Rerun:
    runner = options.runner or default_runner(config)
    compare = options.compare or ChildComparer(scratch.root, scratch.base / "compare", config, runner)
    return Rerun(scratch, config, options.mode, options.jobs, runner, compare, options.progress)


def _start(root: Path, rerun: Rerun, options: FixOptions, given: Report | None) -> tuple[Report, Baseline]:
    """The given report, or a run of the selected entrypoints (in the scratch copy, so that the
    baseline and the patched runs see the same paths) that is the baseline too."""
    if given is not None:
        return given, {}
    names = [e.name for e in select(rerun.config, CheckOptions(only=options.entrypoints))]
    options.progress(f"running {len(names)} entrypoint{'s' * (len(names) != 1)} in a scratch copy…")
    report, baseline = observe_named(rerun, names)
    return replace(report, commit=git.head_sha(root)), baseline


def _selected(report: Report, options: FixOptions) -> list[tuple[GraphBreak, tuple[str, ...]]]:
    found = planning.found_breaks(report)
    return [f for f in found if planning.selected(f[0], options.only, options.fingerprints)]


def _in_report_order(
    found: Sequence[tuple[GraphBreak, tuple[str, ...]]], results: Iterable[FixResult]
) -> tuple[FixResult, ...]:
    by_fingerprint = {r.fingerprint: r for r in results}
    return tuple(by_fingerprint[b.fingerprint] for b, _ in found if b.fingerprint in by_fingerprint)


def with_fixes(report: Report, results: Iterable[FixResult]) -> Report:
    return replace(report, extra={**report.extra, **fix_result.extra_json(results)})


def fix(root: Path, config: Config, options: FixOptions = FixOptions(), report: Report | None = None) -> FixRun:
    """Find (or take) the breaks, verify a patch for each fixable one, and apply on request."""
    with Scratch(root) as scratch:
        rerun = _rerun(scratch, config, options)
        baseline_report, baseline = _start(root, rerun, options, report)
        scope = Scope(baseline_report, config)
        trials = functools.partial(attempt, rerun, baseline)
        found = _selected(baseline_report, options)
        planned, others = planning.plan(found, repo_reader(root), library_lookup(root, config))
        verified = verify_all(planned, scope, trials, options.progress)
        results = _in_report_order(found, [*others, *(result for result, _ in verified)])
        chosen: list[Chosen] = [
            (item, candidate) for item, (_, candidate) in zip(planned, verified, strict=True) if candidate
        ]
        applied = apply_all(root, scope, chosen, trials, options.progress) if options.apply and chosen else Applied()
    final = with_fixes(baseline_report, results)
    return FixRun(final, results, applied.written, applied.joint, applied.notes, applied.after, applied.unwritten)
