"""How a diff will be made, decided once before anything runs: which sides run, which entrypoints
on each, and where the base's report comes from and why.

`decide` is pure: the facts come in as a value (gathered by checks/head_and_base.py from git, the
baseline file, the audit's record, the cache and the runner's settings), the plan goes out as a
value, and head_and_base.py executes it. What only a run can tell is a rule of the plan, applied
by the pure functions below it: which base entrypoints a head-first run leaves to the head
(`base_reruns`), and what a known base that the head's run shows unfit leads to (`Unfit`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gbbot.analysis import reads
from gbbot.core.model import Reads, Report, Status


class KnownFrom(enum.Enum):
    """Where a base report that is not run comes from."""

    FILE = "file"  # --baseline
    RECORD = "record"  # a recorded base the caller injects (the audit's record of the merge-base)
    CACHE = "cache"  # --cache


@dataclass(frozen=True)
class Known:
    """A report of the merge-base found without running it."""

    report: Report
    origin: KnownFrom
    source: str  # the diff's baseline_source: "file", "cache", or the recorded base's name
    notes: tuple[str, ...] = ()  # labels a mismatched --baseline carries


@dataclass(frozen=True)
class Facts:
    """What the edges said before anything runs."""

    entrypoints: tuple[str, ...]  # the selected entrypoints (a shard, --entrypoint)
    same_commit: bool  # HEAD is the merge-base and the tree is clean
    known: Known | None  # looked up only when the commits differ
    records_reads: bool  # the runs record what they read (the warm server)
    jobs: int
    caching: bool  # a cache directory was given and torch's version is known: a base run is kept
    allow_mismatch: bool


class BaseRun(enum.Enum):
    """How the base side runs, when it does."""

    NONE = "none"  # not at all: the head's run is the base's, or its report is known
    TOGETHER = "together"  # every entrypoint, at the same time as the head, --jobs shared
    AFTER_HEAD = "after the head"  # then only those whose reads the change touches (`base_reruns`)


class Unfit(enum.Enum):
    """What a known base that the head's run shows unfit (another torch) leads to."""

    RUN = "run the base"  # a kept report (cache, record): run the merge-base instead
    REFUSE = "refuse"  # a --baseline file: stop, name the difference
    LABEL = "label"  # a --baseline file with --allow-mismatch: compare, labelled


@dataclass(frozen=True)
class Plan:
    source: str  # the diff's baseline_source: run | cache | file | the recorded base's name
    why: str  # where the base comes from and why, in words
    head: tuple[str, ...]  # the entrypoints the head runs
    base: BaseRun
    known: Known | None = None  # the base's report, when it is not run
    unfit: Unfit = Unfit.RUN
    keep: bool = False  # keep the base's report in the cache once it has run whole
    same_commit: bool = False  # the head's run is the base's


def decide(facts: Facts) -> Plan:
    """The plan for these facts; every case of where the base comes from is one branch here."""
    names = facts.entrypoints
    if facts.same_commit:
        why = "the merge-base is HEAD, unchanged: the head's run is the base's"
        return Plan("run", why, names, BaseRun.NONE, same_commit=True)
    known = facts.known
    if known is not None:
        return Plan(known.source, _known_why(known), names, BaseRun.NONE, known, _unfit(known, facts))
    if facts.records_reads or facts.jobs < 2:
        why = "no report of the merge-base is known: it runs after the head, where the change reaches"
        if not facts.records_reads:
            why = "no report of the merge-base is known: it runs after the head (one job)"
        return Plan("run", why, names, BaseRun.AFTER_HEAD, keep=facts.caching)
    why = "no report of the merge-base is known: it runs beside the head, --jobs shared"
    return Plan("run", why, names, BaseRun.TOGETHER, keep=facts.caching)


def _known_why(known: Known) -> str:
    return {
        KnownFrom.FILE: "the merge-base's report was given (--baseline)",
        KnownFrom.RECORD: "the merge-base's report was recorded before",
        KnownFrom.CACHE: "the merge-base's report is in the cache",
    }[known.origin]


def _unfit(known: Known, facts: Facts) -> Unfit:
    if known.origin is not KnownFrom.FILE:
        return Unfit.RUN
    return Unfit.LABEL if facts.allow_mismatch else Unfit.REFUSE


# --- what a head-first run leaves to the head ----------------------------------------------------

# Statuses the same inputs give again: a timeout or a crash may not.
REPEATABLE = (Status.OK, Status.NO_COMPILE)


def recorded_any(head: Report, seen: Mapping[str, Reads | None]) -> bool:
    """Whether any entrypoint that ended repeatably has a record of its reads: without one there
    is nothing to compare the change with (and no git call is worth making)."""
    return any(seen.get(e.name) for e in head.entrypoints if e.status in REPEATABLE)


def base_reruns(
    head: Report, seen: Mapping[str, Reads | None], changes: reads.Changes | None, tops: Sequence[str]
) -> dict[str, str]:
    """Entrypoint name → why its base must run; those missing take the head's result. `changes`
    is None when no reads were recorded (`recorded_any`)."""
    why = {e.name: f"it ended {e.status.value}" for e in head.entrypoints if e.status not in REPEATABLE}
    rest = [e.name for e in head.entrypoints if e.name not in why]
    if changes is None:
        return {**why, **{name: reads.NOT_RECORDED for name in rest}}
    for name in rest:
        reason = reads.why_rerun(seen.get(name), changes, tops)
        if reason:
            why[name] = reason
    return why
