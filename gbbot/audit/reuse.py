"""An audit record as the base side of a diff: when the nightly audit already ran the merge-base
with the same config, torch version and mode, `gbbot diff --baseline-from-branch` rebuilds the
base's report from its record and runs only the head.

A record keeps less than a report. What it lacks is left neutral, never invented: no
explanation, hints, traceback, library site or suggested fix, and no recompilations. The base
side of a diff only decides new / fixed / persisting, so nothing neutral is shown as a finding;
a head with recompilation problems cannot be compared with a record at all (the base is run).

Flaky breaks (seen in only some of an audit's repeats) are neither new nor fixed: one the head
shows too stays on the base (persisting), one the head does not show is dropped from the base,
because its absence from one run is what a flaky break does, not a fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

from gbbot.analysis import report as report_
from gbbot.audit import history
from gbbot.audit.record import MAX_BREAKS_PER_ENTRYPOINT, BreakEntry, EntrypointEntry, Record
from gbbot.checks import baseline
from gbbot.core.model import Category, EntrypointReport, GraphBreak, Mode, Origin, Report, Status

Log = history.Log


def graph_break(entry: BreakEntry) -> GraphBreak:
    kept = {f.name: getattr(entry, f.name) for f in fields(entry) if f.name not in ("category", "origin", "flaky")}
    neutral = {"explanation": "", "hints": (), "caused": (), "user_stack": ()}
    return GraphBreak(**kept, **neutral, category=Category(entry.category), origin=Origin(entry.origin))


def entrypoint_report(entry: EntrypointEntry) -> EntrypointReport:
    return EntrypointReport(
        name=entry.name,
        status=Status(entry.status),
        exit_code=entry.exit_code,
        duration_s=0.0,
        graph_count=entry.graphs,
        break_count=entry.breaks,
        frames_skipped=entry.frames_eager,
        breaks=tuple(graph_break(b) for b in entry.fingerprints),
        error=entry.error,
        frames=entry.frames,
    )


def baseline_from_record(rec: Record) -> Report:
    """The report the audit's run of `rec.commit` would have given, as far as the record tells."""
    base = report_.new_report(
        (entrypoint_report(e) for e in rec.entrypoints), Mode(rec.mode), rec.torch, rec.commit, rec.config_hash
    )
    flaky = sorted({b.fingerprint for e in rec.entrypoints for b in e.fingerprints if b.flaky})
    return replace(base, flaky=tuple(flaky))


def settle_flaky(base: Report, head: Report) -> Report:
    """Keep a flaky base break only where the head shows it too (see the module's docstring)."""
    flaky = set(base.flaky)
    if not flaky:
        return base
    seen = {b.fingerprint for b in head.breaks}
    gone = flaky - seen
    entrypoints = tuple(
        replace(e, breaks=tuple(b for b in e.breaks if b.fingerprint not in gone)) for e in base.entrypoints
    )
    return replace(base, entrypoints=entrypoints)


def unfit(rec: Record, expected: baseline.Expected) -> list[str]:
    """Why `rec` cannot stand in for running the merge-base, in words; empty when it can."""
    found = baseline.mismatches(baseline_from_record(rec), expected)
    if rec.config_hash is None:
        found.append("it has no config hash")
    names = {e.name for e in rec.entrypoints}
    missing = [n for n in expected.entrypoints if n not in names]
    if missing:
        found.append(f"it has no entry for {', '.join(missing[:5])}")
    cut = [e.name for e in rec.entrypoints if len(e.fingerprints) >= MAX_BREAKS_PER_ENTRYPOINT]
    if cut:
        found.append(f"it lists only the first {MAX_BREAKS_PER_ENTRYPOINT} breaks of {', '.join(cut[:5])}")
    return found


def head_unfit(base: Report, head: Report) -> str | None:
    """What only the head's run can show: another torch. (A record keeps no recompilations, so
    the head's recompilation problems all count as new against it: unknown is new.)"""
    return baseline.torch_mismatch(base, head.torch_version)


@dataclass(frozen=True)
class Choice:
    report: Report | None  # None: no record fits
    why: str  # where the baseline came from, or why no record fits


def choose(records: Sequence[Record], commit: str, branch: str, expected: baseline.Expected) -> Choice:
    """The newest record of `commit` that fits; else why none does (the newest's reasons)."""
    mine = sorted((r for r in records if r.commit == commit), key=lambda r: r.date, reverse=True)
    if not mine:
        return Choice(None, f"no audit record of {commit[:7]} on {branch}")
    for rec in mine:
        if not unfit(rec, expected):
            return Choice(baseline_from_record(rec), f"the audit record of {commit[:7]} ({rec.date}) on {branch}")
    reasons = "; ".join(unfit(mine[0], expected))
    return Choice(None, f"the audit record of {commit[:7]} on {branch} does not fit: {reasons}")


def from_branch(top: Path, branch: str, expected: baseline.Expected, log: Log) -> Choice:
    """The merge-base's record from the data branch, read with git (nothing is checked out)."""
    found = history.branch_tip(top, branch)
    if found is None:
        return Choice(None, f"no branch {branch} (nor origin/{branch})")
    name, tip = found
    records = history.read_for_commit(top, tip, expected.commit, log)
    return choose(records, expected.commit, name, expected)


@dataclass(frozen=True)
class RecordOnBranch:
    """The audit's record of the merge-base on its data branch, as a diff's recorded base
    (`gbbot diff --baseline-from-branch`, the action's baseline-from-branch input)."""

    branch: str
    fallback: str = "running the base"  # what the diff does when no record fits, for the log
    name: str = "record"
    what: str = "audit record"

    def find(self, top: Path, expected: baseline.Expected, log: Log) -> Report | None:
        choice = from_branch(top, self.branch, expected, log)
        log(f"baseline from {choice.why}" if choice.report else f"{choice.why}: {self.fallback}")
        return choice.report

    def settled(self, base: Report, head: Report) -> tuple[str | None, Report]:
        return head_unfit(base, head), settle_flaky(base, head)
