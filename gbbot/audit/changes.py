"""Two consecutive audit records → what changed between them. Pure.

Breaks of the entrypoints that ran cleanly both times are compared as a pull request's are: new,
fixed, hidden (gone only because their frame now runs eagerly) or revealed (there before, in a
frame that ran eagerly), renamed files followed. A flaky break (seen in only some of an audit's
repeated runs) is never new nor fixed, and an entrypoint that ran before and does not now has
"stopped running". New breaks and stopped entrypoints are a regression; a rename alone is none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from gbbot.analysis import break_diff
from gbbot.analysis import report as report_
from gbbot.audit import reuse
from gbbot.audit.record import Record
from gbbot.core.model import Change, ChangeState, Report, Status


@dataclass(frozen=True)
class Stopped:
    name: str
    status: str
    error: str | None


@dataclass(frozen=True)
class Changes:
    previous: Record | None
    current: Record
    # The diff's breaks that came or went (new, fixed, hidden, revealed), each once with the
    # entrypoints it did so in; a flaky one never came.
    changes: tuple[Change, ...]
    stopped: tuple[Stopped, ...]  # ran cleanly in the previous record, not in this one
    failing: tuple[Stopped, ...]  # not running now (stopped or not)

    def of(self, state: ChangeState) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.state is state)

    @property
    def regression(self) -> bool:
        return bool(self.of(ChangeState.NEW) or self.stopped)

    @property
    def cause(self) -> str:
        """What explains the change, in words: the commit range, and torch when it moved."""
        before, now = self.previous, self.current
        if before is None:
            return ""
        parts = []
        if before.commit != now.commit:
            parts.append(f"{before.commit[:7]}..{now.commit[:7]}")
        if before.torch != now.torch:
            parts.append(f"torch {before.torch or 'unknown'} → {now.torch or 'unknown'}")
        return ", ".join(parts) or "no code or torch change (the same commit and torch)"


def _report(rec: Record, names: set[str], steady_only: bool) -> Report:
    """The record's entrypoints `names` as a report; without its flaky breaks when `steady_only`."""
    entries = []
    for entry in rec.entrypoints:
        if entry.name not in names:
            continue
        kept = tuple(b for b in entry.counted() if not (steady_only and b.flaky))
        entries.append(reuse.entrypoint_report(replace(entry, fingerprints=kept)))
    return report_.new_report(entries, None, rec.torch, rec.commit)


def compare(
    previous: Record | None,
    current: Record,
    renames: Mapping[str, str] = {},
    in_base: break_diff.CodeCheck = break_diff.unknown,
) -> Changes:
    """What changed from `previous` to `current`, by the rule a pull request's diff uses
    (gbbot/analysis/break_diff.py): files git saw renamed between the two commits are followed
    (`renames`, old path → new path), each distinct break is listed once with the entrypoints it
    is in, and a break gone only because its frame now runs eagerly is hidden, not fixed. One
    that shows up is revealed only where `in_base` shows what it depends on is the earlier's."""
    failing = tuple(Stopped(e.name, e.status, e.error) for e in current.entrypoints if not e.ran)
    if previous is None:
        return Changes(previous, current, (), (), failing)
    stopped = []
    both: set[str] = set()
    for entry in current.entrypoints:
        before = previous.entrypoint(entry.name)
        if before is None or not before.ran:
            continue
        if not entry.ran:
            stopped.append(Stopped(entry.name, entry.status, entry.error))
        elif before.status == entry.status == Status.OK.value:
            both.add(entry.name)
    head, base = _report(current, both, steady_only=False), _report(previous, both, steady_only=True)
    how = break_diff.Comparison("previous audit", previous.commit, renames, in_base=in_base)
    now = current.breaks()

    def came(c: Change) -> bool:
        """Not a head break the record saw in only some runs, and in some entrypoint."""
        return bool(c.entrypoints) and not now[c.fingerprint].flaky

    found = break_diff.diff(head, base, how).changes
    changes = tuple(c for c in found if c.state in WENT or (c.state in CAME and came(c)))
    return Changes(previous, current, changes, tuple(stopped), failing)


CAME = (ChangeState.NEW, ChangeState.REVEALED)
WENT = (ChangeState.FIXED, ChangeState.HIDDEN)
