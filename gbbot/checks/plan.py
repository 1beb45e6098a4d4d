"""How a diff will be made, decided once before anything runs: which sides run, which entrypoints
on each, and where the base's report comes from and why.

`decide` is pure: the facts come in as a value (gathered by checks/head_and_base.py from git, the
baseline file, the audit's record, the cache and the runner's settings), the plan goes out as a
value, and head_and_base.py executes it. What only a run can tell is a rule of the plan, applied
by the pure functions below it: which base entrypoints a head-first run leaves to the head
(`base_reruns`), and what a known base that the head's run shows unfit leads to (`Unfit`).

A known base that kept what each of its runs read lets the head skip too (`head_skips`): an
entrypoint none of whose reads the change touches would do on the head what it did on the base,
so its result is the base's, exactly as the base side takes the head's. Never when what is
outside the record changed: the Python, what is installed (a requirement or `setup:` file),
uncommitted edits; nor for a run that ended badly, started another program or overflowed its
record. (The config, torch and mode are part of what makes a known base fit at all.)
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gbbot.analysis import reads
from gbbot.checks.baseline import BaseReads
from gbbot.core.model import EntrypointReport, Reads, Report, Status


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
    reads: BaseReads | None = None  # what its runs read, when that was kept


@dataclass(frozen=True)
class Change:
    """How the head differs from the base, for deciding what the head need not run."""

    paths: reads.Changes  # the working tree against the base commit, by path
    dirty: bool  # uncommitted edits
    installs: tuple[str, ...]  # changed paths that say what is installed (requirement, `setup:` files)
    python: str  # the Python the head runs under


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
    change: Change | None = None  # gathered when a known base kept its reads
    # the change touches what `setup:` installs and the diff sets each side up: the changed paths
    own_environments: tuple[str, ...] = ()


class BaseRun(enum.Enum):
    """How the base side runs, when it does."""

    NONE = "none"  # not at all: the head's run is the base's, or its report is known
    TOGETHER = "together"  # every entrypoint, at the same time as the head, --jobs shared
    AFTER_HEAD = "after the head"  # then only those whose reads the change touches (`base_reruns`)
    # every entrypoint, after the head, each side in an environment built from its own files
    OWN_ENVIRONMENT = "in its own environment"


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
    from_base: Mapping[str, str] = field(default_factory=dict)  # not run on the head → why its result is the base's
    head_runs: Mapping[str, str] = field(default_factory=dict)  # run on the head though the base is known → why


def decide(facts: Facts) -> Plan:
    """The plan for these facts; every case of where the base comes from is one branch here."""
    names = facts.entrypoints
    if facts.same_commit:
        why = "the merge-base is HEAD, unchanged: the head's run is the base's"
        return Plan("run", why, names, BaseRun.NONE, keep=facts.caching, same_commit=True)
    if facts.own_environments:  # a known base ran with other packages than this base names
        why = f"the change touches `{facts.own_environments[0]}`: each side runs in an environment of its own files"
        return Plan("run", why, names, BaseRun.OWN_ENVIRONMENT)
    known = facts.known
    if known is not None:
        from_base, runs = head_skips(known, facts)
        head = tuple(n for n in names if n not in from_base)
        return Plan(known.source, _known_why(known), head, BaseRun.NONE, known, _unfit(known, facts),
                    from_base=from_base, head_runs=runs)  # fmt: skip
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


# --- what a known base spares the head ---------------------------------------------------------

TAKEN = "it read nothing this change touches"


def head_skips(known: Known, facts: Facts) -> tuple[dict[str, str], dict[str, str]]:
    """(entrypoint → why the head takes the base's result, entrypoint → why the head runs it)."""
    names = facts.entrypoints
    everything = _why_head_runs_all(known, facts)
    if everything:
        return {}, {name: everything for name in names}
    assert known.reads is not None and facts.change is not None  # said by _why_head_runs_all
    base = {e.name: e for e in known.report.entrypoints}
    taken: dict[str, str] = {}
    runs: dict[str, str] = {}
    for name in names:
        why = _why_head_runs(base.get(name), known.reads.entrypoints.get(name), facts.change.paths)
        if why:
            runs[name] = why
        else:
            taken[name] = TAKEN
    return taken, runs


def _why_head_runs_all(known: Known, facts: Facts) -> str | None:
    change = facts.change
    if not facts.records_reads:
        return "runs here record no reads (fresh processes or a container), so nothing is taken from the base"
    if known.reads is None:
        return f"the {_known_name(known)} kept no record of what its runs read"
    if known.notes:
        return "the baseline does not match this run"
    if change is None:
        return "how the tree differs from the base is not known"
    if change.dirty:
        return "the tree has uncommitted changes"
    if change.installs:
        return f"the change touches `{change.installs[0]}`, which says what is installed"
    if change.python != known.reads.python:
        return f"the base ran under Python {known.reads.python}, the head runs Python {change.python}"
    return None


def _known_name(known: Known) -> str:
    return {KnownFrom.FILE: "baseline file", KnownFrom.RECORD: "recorded base", KnownFrom.CACHE: "cached base"}[
        known.origin
    ]


def _why_head_runs(entry: EntrypointReport | None, found: Reads | None, change: reads.Changes) -> str | None:
    if entry is None:
        return "the base has no result for it"
    if entry.status not in REPEATABLE:
        return f"it ended {entry.status.value} on the base"
    if found is None:
        return "what it read on the base was not recorded"
    return reads.why_rerun(found, change, reads.ROOTED)


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
