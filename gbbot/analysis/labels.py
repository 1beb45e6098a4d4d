"""Which recipe `gbbot fix` would really use for a break, so that every view labels it truthfully.
Pure over the break and its file's source map.

The label runs the recipes' own matchers in a dry pass (gbbot/recipes/): the GB id names a
recipe, and the statement can decide otherwise. `print("step", x.item())` breaks as GB0124
(`.item()`), yet the fix is the side-effect guard of the whole statement; `if loss.item() > 50:`
breaks as GB0124 too, yet capturing the scalar only moves the break to the `if`, so it gets advice
(unless the `if` only raises: that becomes a `torch._check`, which the `item` recipes write);
`if t.abs().max() > 10: t = t / 10` (GB0170) is no shape the tensor-branch recipes rewrite, so it
gets advice, not a "fix:" label.
"""

from __future__ import annotations

from collections.abc import Callable

from gbbot.analysis.source import SourceMap
from gbbot.core.model import GraphBreak, Origin

ITEM_ID = "GB0124"  # `.item()` / int() of a tensor, whose recipe is `item`


def fix_label(brk: GraphBreak, lookup: Callable[[str], SourceMap | None]) -> str | None:
    """The `fix` id whose recipe `gbbot fix` tries first for `brk`; None: only advice. Without the
    break's source (outside the repository), the id's recipe stands."""
    where = lookup(brk.file) if brk.origin is Origin.USER else None
    if where is None:
        return brk.fix
    from gbbot import recipes  # LibCST: loaded only where a break's source is there to read

    return recipes.chosen(brk.fix, where.text, brk.line, brk.statement or brk.code)


def decided_by_branch(brk: GraphBreak) -> bool:
    """Did the label find that the break's number decides a branch? (An `.item()` of the
    repository's own code that the rules would fix, labelled for advice only.) The views, which
    have no source, read it from the label."""
    return brk.gb_id == ITEM_ID and brk.origin is Origin.USER and brk.fix is None
