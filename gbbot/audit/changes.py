"""Two consecutive audit records → what changed between them. Pure.

A break is new when an entrypoint that ran cleanly both times has it now and did not before;
fixed the other way round. A flaky break (seen in only some of an audit's repeated runs) is
never new, and an entrypoint that ran before and does not now has "stopped running". Either is
a regression.
"""

from __future__ import annotations

from dataclasses import dataclass

from gbbot.audit.record import BreakEntry, EntrypointEntry, Record


@dataclass(frozen=True)
class Stopped:
    name: str
    status: str
    error: str | None


@dataclass(frozen=True)
class Changes:
    previous: Record | None
    current: Record
    new: tuple[tuple[str, BreakEntry], ...]  # (entrypoint, break)
    fixed: tuple[tuple[str, BreakEntry], ...]
    stopped: tuple[Stopped, ...]  # ran cleanly in the previous record, not in this one
    failing: tuple[Stopped, ...]  # not running now (stopped or not)

    @property
    def regression(self) -> bool:
        return bool(self.new or self.stopped)

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


def _steady(entry: EntrypointEntry) -> dict[str, BreakEntry]:
    return {b.fingerprint: b for b in entry.counted() if not b.flaky}


def _all(entry: EntrypointEntry) -> set[str]:
    return {b.fingerprint for b in entry.counted()}


def compare(previous: Record | None, current: Record) -> Changes:
    new: list[tuple[str, BreakEntry]] = []
    fixed: list[tuple[str, BreakEntry]] = []
    stopped: list[Stopped] = []
    failing = tuple(Stopped(e.name, e.status, e.error) for e in current.entrypoints if not e.ran)
    for entry in current.entrypoints:
        before = previous.entrypoint(entry.name) if previous else None
        if before is None or not before.ran:
            continue
        if not entry.ran:
            stopped.append(Stopped(entry.name, entry.status, entry.error))
            continue
        new += [(entry.name, b) for f, b in _steady(entry).items() if f not in _all(before)]
        fixed += [(entry.name, b) for f, b in _steady(before).items() if f not in _all(entry)]
    return Changes(previous, current, tuple(new), tuple(fixed), tuple(stopped), failing)
