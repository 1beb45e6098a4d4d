"""Which recipe `gbbot fix` would really use for a break, so that every view labels it truthfully.
Pure over the break and its file's source map.

rules.yaml gives each kind of break a `fix` id, but the statement can decide otherwise:
`print("step", x.item())` breaks as GB0124 (`.item()`), yet the fix is the side-effect guard of the
whole statement; `if loss.item() > 50:` breaks as GB0124 too, yet capturing the scalar only moves
the break to the `if`, so it gets advice (unless the `if` only raises: that becomes a
`torch._check`, which the `item` recipes write).
"""

from __future__ import annotations

from collections.abc import Callable

from gbbot.analysis.branches import decides_branch, only_raises
from gbbot.analysis.side_effects import only_side_effect
from gbbot.analysis.source import SourceMap
from gbbot.core.model import GraphBreak, Origin

ITEM_ID = "GB0124"  # `.item()` / int() of a tensor, whose rule's fix id is ITEM
GUARDS = frozenset({"print", "logger", "skipped_call", "side_effect"})  # ids whose recipe is a guard
ITEM = "item"
SIDE_EFFECT = "side_effect"


def fix_label(brk: GraphBreak, lookup: Callable[[str], SourceMap | None]) -> str | None:
    """The `fix` id whose recipe `gbbot fix` tries first for `brk`; None: only advice."""
    where = lookup(brk.file) if brk.origin is Origin.USER else None
    if where is None:
        return brk.fix
    if brk.fix not in GUARDS and only_side_effect(brk.statement or brk.code, dict(where.imports)):
        return SIDE_EFFECT
    if brk.fix == ITEM and decides_branch(where.text, brk.line) and not only_raises(where.text, brk.line):
        return None
    return brk.fix


def decided_by_branch(brk: GraphBreak) -> bool:
    """Did the label find that the break's number decides a branch? (An `.item()` of the
    repository's own code that the rules would fix, labelled for advice only.) The views, which
    have no source, read it from the label."""
    return brk.gb_id == ITEM_ID and brk.origin is Origin.USER and brk.fix is None
