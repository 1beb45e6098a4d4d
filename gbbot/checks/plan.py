"""How a diff will be made, decided once before anything runs: which sides run, which entrypoints
on each, and where the base's report comes from and why.

`decide` is pure: the facts come in as a value (gathered by checks/head_and_base.py from git, the
base's own config, the baseline file, the audit's record, the cache and the runner's settings),
the plan goes out as a value, and head_and_base.py executes it. The base side always comes first:
known before anything runs, or run before any code of the change (the head's `setup:` steps
included) and held in gbbot's memory; so the head's code can shape nothing the verdict reads of
the base. What only a run can tell is a rule of the plan, applied by the pure functions below it:
which head entrypoints the base's own record of its reads leaves to the base (`head_skips`), and
what a known base that the head's run shows unfit leads to (`Unfit`).

A base that kept what each of its runs read lets the head skip (`head_skips`): an entrypoint none
of whose reads the change touches, and whose definition the base's config gives as the head's
does, would do on the head what it did on the base, so its result is the base's. Never when what
is outside the record changed: the Python, what is installed (a requirement or `setup:` file),
uncommitted edits; nor for a run that ended badly, started another program or overflowed its
record. (The torch and mode are part of what makes a known base fit at all.)
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from gbbot.analysis import reads
from gbbot.checks.baseline import BaseReads
from gbbot.core.config import Config
from gbbot.core.model import EntrypointReport, Reads, Report, Status


class KnownFrom(enum.Enum):
    """Where a base report comes from."""

    FILE = "file"  # --baseline
    RECORD = "record"  # a recorded base the caller injects (the audit's record of the merge-base)
    CACHE = "cache"  # --cache
    RUN = "run"  # the base side ran here, before any code of the change


@dataclass(frozen=True)
class Known:
    """A report of the merge-base, found without running it or run before the head."""

    report: Report
    origin: KnownFrom
    source: str  # the diff's baseline_source: "file", "cache", "run", or the recorded base's name
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
    caching: bool  # a cache directory was given and torch's version is known: a base run is kept
    allow_mismatch: bool
    change: Change | None = None  # how the tree differs from the base (None: the same commit)
    # the change touches what `setup:` installs and the diff sets each side up: the changed paths
    own_environments: tuple[str, ...] = ()
    # the entrypoints the base's config does not define as the head's does (see `redefined`)
    redefined: frozenset[str] = frozenset()


class BaseRun(enum.Enum):
    """How the base side runs, when it does: always before any code of the change."""

    NONE = "none"  # not at all: the head's run is the base's, or its report is known
    FIRST = "first"  # every entrypoint, before the head; the head then skips what it proves out of reach
    # every entrypoint, before the head, each side in an environment built from its own files
    OWN_ENVIRONMENT = "in its own environment"


class Unfit(enum.Enum):
    """What a known base that the head's run shows unfit (another torch) leads to. Never a run of
    the base: the head's code has run by then."""

    UNKNOWN = "unknown"  # a kept report (cache, record): no base, every head break is new, saying why
    REFUSE = "refuse"  # a --baseline file: stop, name the difference
    LABEL = "label"  # a --baseline file with --allow-mismatch: compare, labelled


@dataclass(frozen=True)
class Plan:
    source: str  # the diff's baseline_source: run | cache | file | the recorded base's name
    why: str  # where the base comes from and why, in words
    head: tuple[str, ...]  # the entrypoints the head runs (for a base that runs: before its skips)
    base: BaseRun
    known: Known | None = None  # the base's report, when it is not run
    unfit: Unfit = Unfit.UNKNOWN
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
        taken = Plan(known.source, KNOWN_FROM[known.origin][0], names, BaseRun.NONE, known, _unfit(known, facts))
        return after_base(taken, known, facts)
    why = "no report of the merge-base is known: it runs first, before any code of the change"
    return Plan("run", why, names, BaseRun.FIRST, keep=facts.caching)


def after_base(to_do: Plan, known: Known, facts: Facts) -> Plan:
    """The plan once the base is known (or has run first): the head skips what the base's record
    of its reads proves out of reach."""
    from_base, runs = head_skips(known, facts)
    head = tuple(n for n in facts.entrypoints if n not in from_base)
    return replace(to_do, head=head, known=known, from_base=from_base, head_runs=runs)


# Where a known base comes from: (why the plan takes it, what a reason calls it)
KNOWN_FROM = {
    KnownFrom.FILE: ("the merge-base's report was given (--baseline)", "baseline file"),
    KnownFrom.RECORD: ("the merge-base's report was recorded before", "recorded base"),
    KnownFrom.CACHE: ("the merge-base's report is in the cache", "cached base"),
    KnownFrom.RUN: ("the merge-base ran first", "base's run"),
}


def _unfit(known: Known, facts: Facts) -> Unfit:
    if known.origin is not KnownFrom.FILE:
        return Unfit.UNKNOWN
    return Unfit.LABEL if facts.allow_mismatch else Unfit.REFUSE


# Settings of the config every run inherits: a difference in one is a difference in every run.
RUN_SETTINGS = ("runner", "pass_env", "scrub_env")


def redefined(base: Config | None, head: Config, names: Sequence[str]) -> frozenset[str]:
    """The entrypoints among `names` that the base's config (None: it has none) does not define
    as the head's does (command, callable, arguments, environment, inputs, compile options,
    timeout), all of them when a setting every run inherits differs: what their base runs did
    says nothing of what the head's runs do."""
    if base is None or any(getattr(base, s) != getattr(head, s) for s in RUN_SETTINGS):
        return frozenset(names)
    return frozenset(n for n in names if base.entrypoint(n) != head.entrypoint(n))


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
        why = "its definition in the config is not the base's" if name in facts.redefined else None
        why = why or _why_head_runs(base.get(name), known.reads.entrypoints.get(name), facts.change.paths)
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
        return f"the {KNOWN_FROM[known.origin][1]} kept no record of what its runs read"
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


# Statuses the same inputs give again: a timeout or a crash may not.
REPEATABLE = (Status.OK, Status.NO_COMPILE)


def _why_head_runs(entry: EntrypointReport | None, found: Reads | None, change: reads.Changes) -> str | None:
    if entry is None:
        return "the base has no result for it"
    if entry.status not in REPEATABLE:
        return f"it ended {entry.status.value} on the base"
    if found is None:
        return "what it read on the base was not recorded"
    return reads.why_rerun(found, change, reads.ROOTED)
