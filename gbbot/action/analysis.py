"""The report a step publishes: the library's check, diff and fix run with options from the
action's inputs, shown in the log as `gbbot check` shows them, and written to report.json."""

from __future__ import annotations

import sys
from pathlib import Path

from gbbot import api
from gbbot.action.context import Context
from gbbot.core import words
from gbbot.core.config import Config
from gbbot.core.errors import GbbotError
from gbbot.core.model import Report
from gbbot.edges.console import (
    internal_error,
    print_report,
    progress_printer,
    report_form,
    say,
    say_lines,
    say_styled,
)
from gbbot.render import terminal


def check_options(ctx: Context) -> api.CheckOptions:
    return api.CheckOptions(mode=ctx.settings.mode, jobs=ctx.settings.jobs)


def saved(ctx: Context, report: Report) -> Report:
    """Write report.json, which the workflow_run half reads, and go on with the value itself: the
    JSON holds all of it and reads back equal (tests/e2e/action/test_pull_request.py checks), so
    both halves publish the same report without this one reading its own file back."""
    api.write_report(report, ctx.report_path)
    return report


def _shown(ctx: Context, config: Config, report: Report, notes: tuple[str, ...] = ()) -> Report:
    """The terminal table, the notes and the config's policy verdict, as `gbbot check` and
    `gbbot diff` print them; the step's own verdict (with the fail-on input) comes later."""
    print_report(terminal.render(report, *report_form()))
    for line in notes:
        say(line.replace("`", ""))
    breach = api.Policy.resolve(config).verdict(report).reason
    if breach:
        say_styled(breach)
    return saved(ctx, report)


def prepare(ctx: Context) -> None:
    """The config's setup: steps, once, before this step's first entrypoint (unless `setup: false`)."""
    config = ctx.settings.config
    if ctx.inputs.setup and config.setup:
        api.setup(ctx.root, config)


def check(ctx: Context) -> Report:
    ctx.report_path.unlink(missing_ok=True)  # a report left from before is not this run's
    prepare(ctx)
    config, options = ctx.settings.config, check_options(ctx)
    # kept in the cache as the base of the pull requests that branch from here (a push)
    found = api.check_and_keep(
        ctx.root, config, options, ctx.inputs.cache_dir, progress_printer(len(api.select(config, options)))
    )
    return _shown(ctx, config, found)


def diff(ctx: Context, base: str) -> Report:
    ctx.report_path.unlink(missing_ok=True)  # a report left from before is not this run's
    # setup: steps run inside the diff, each side's before its runs and the base's first, so that
    # no code of the change has run when the base's results are taken; the head's build the one
    # environment the fix step's runs use too
    options = api.DiffOptions(
        base=base,
        check=check_options(ctx),
        cache=ctx.inputs.cache_dir,
        recorded=api.audit_record(ctx.inputs.baseline_from_branch, ctx.inputs.cache_dir),
        # a change of what setup: installs: each side also gets an environment built from its files
        setup=api.SetupRun.SIDES if ctx.inputs.setup else api.SetupRun.NONE,
    )
    config = ctx.settings.config
    done = api.diff(ctx.root, config, options, progress_printer, say)
    notes = (*done.baseline_notes, *words.no_baselines(done.report.diff))
    return _shown(ctx, config, done.report, notes)


def with_fixes(ctx: Context, report: Report, fingerprints: tuple[str, ...] | None = None) -> Report:
    """Fixes for the new breaks (or the breaks `fingerprints` names): verified patches go into the
    report (its `fixes`), to be shown under each break and suggested in a review. A failure here
    costs the fixes, not the run."""

    new = tuple(sorted({b.fingerprint for b in api.new_breaks(report)})) if fingerprints is None else fingerprints
    if not new:
        return report
    options = api.FixOptions(  # LibCST: imported only when fixes are asked for
        fingerprints=new, mode=ctx.settings.mode, jobs=ctx.settings.jobs, progress=_progress
    )
    try:
        with api.untouched_cache(ctx.inputs.cache_dir, ctx.log):  # the fixes run the change's code again
            done = api.fix(ctx.root, ctx.settings.config, options, report)
    except GbbotError as exc:
        ctx.log(f"no fix suggestions: {exc}")
        return report
    except Exception as exc:  # a bug in the fix pipeline: reported, and the run goes on
        internal_error(exc)
        ctx.log("no fix suggestions: the fix pipeline failed; see the lines above")
        return report
    say_lines(api.fix_summary(done))
    return saved(ctx, done.report)


def _progress(message: str) -> None:
    print(message, file=sys.stderr)


def read_untrusted(path: Path) -> Report:
    """A report made by another job (possibly from a fork's code): bounded, then schema-checked."""
    return api.load_untrusted_report(path)
