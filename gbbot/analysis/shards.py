"""Shard reports (`gbbot check --shard I/N`, one per CI matrix job) → one report. Pure.

Shards only add up when they are slices of one run: same commit, config, mode and torch, the same
N, each index once. Anything else is refused with the reason, never merged into a report that
looks complete and is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from gbbot.analysis import break_diff
from gbbot.core.errors import GbbotError
from gbbot.core.model import Diff, Report

# (what, Report field) every shard must agree on
AGREE = (("commit", "commit"), ("config", "config_hash"), ("mode", "mode"), ("torch version", "torch_version"))


class MergeError(GbbotError):
    pass


@dataclass(frozen=True)
class ShardReport:
    source: str  # where it came from (a path), for messages
    report: Report


def _index(shard: ShardReport) -> tuple[int, int]:
    if shard.report.shard is None:
        raise MergeError(f"{shard.source} is not a shard report (it was made without --shard I/N)")
    index, total = shard.report.shard.split("/")
    return int(index), int(total)


def _same(shards: Sequence[ShardReport], what: str, value: str) -> None:
    """Every shard agrees on the field `value` names (the first one is the reference)."""
    first = _shown(getattr(shards[0].report, value))
    for shard in shards[1:]:
        other = _shown(getattr(shard.report, value))
        if other != first:
            raise MergeError(
                f"{shard.source} is from another {what} ({other}) than {shards[0].source} ({first}): "
                "shards must come from one run"
            )


def _shown(value: object) -> str:
    return str(getattr(value, "value", value))


def _check_slices(shards: Sequence[ShardReport], partial: bool) -> None:
    slices = [_index(s) for s in shards]
    totals = {total for _, total in slices}
    if len(totals) > 1:
        split = ", ".join(sorted(str(s.report.shard) for s in shards))
        raise MergeError(f"the shards split the entrypoints in different ways: {split}")
    total = totals.pop()
    seen: dict[int, str] = {}
    for (index, _), shard in zip(slices, shards, strict=True):
        if index in seen:
            raise MergeError(f"shard {index}/{total} given twice: {seen[index]} and {shard.source}")
        seen[index] = shard.source
    missing = [f"{i}/{total}" for i in range(1, total + 1) if i not in seen]
    if missing and not partial:
        raise MergeError(f"missing shard {', '.join(missing)} (pass --partial to merge what there is)")


def _check_entrypoints(shards: Sequence[ShardReport]) -> None:
    owner: dict[str, str] = {}
    for shard in shards:
        for entry in shard.report.entrypoints:
            if entry.name in owner:
                raise MergeError(f"entrypoint {entry.name!r} is in both {owner[entry.name]} and {shard.source}")
            owner[entry.name] = shard.source


def _merged_diff(shards: Sequence[ShardReport]) -> Diff | None:
    diffs = [s.report.diff for s in shards]
    if all(d is None for d in diffs):
        return None
    if any(d is None for d in diffs):
        raise MergeError("some shards were compared with a base (gbbot diff) and some were not")
    bases = {d.base_sha for d in diffs if d is not None}
    if len(bases) > 1:
        raise MergeError(f"the shards were compared with different base commits: {', '.join(sorted(bases))}")
    return break_diff.union([d for d in diffs if d is not None])


def merge(shards: Sequence[ShardReport], partial: bool = False) -> Report:
    if not shards:
        raise MergeError("no shard reports given")
    _check_slices(shards, partial)
    for what, field in AGREE:
        _same(shards, what, field)
    _check_entrypoints(shards)
    ordered = sorted(shards, key=_index)
    fixes = tuple(f for s in ordered for f in s.report.fixes or ())  # each shard fixed its own breaks
    return replace(
        ordered[0].report,
        entrypoints=tuple(e for s in ordered for e in s.report.entrypoints),
        diff=_merged_diff(ordered),
        shard=None,
        fixes=fixes or None,
        merged_shards=tuple(s.report.shard for s in ordered),
    )
