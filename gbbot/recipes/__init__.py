"""The recipes, by their `fix` id; variants in the order they are tried (the next one only when
the one before did not match or was dropped). Each names the GB ids it takes; the label every view
shows (`chosen`) asks the same classes' matchers, in a dry pass, that `gbbot fix` then applies.

Some recipes are chosen by the statement's shape rather than the id: a side-effect-only statement
is guarded whatever break its arguments cause, and a deprecated `sdp_kernel` is replaced whatever
break it reports. They are tried for every break, before the id's own variants (they change the
least: nothing at all when not compiling), except where the id's first variant is the same guard
(it `leads`).
"""

from __future__ import annotations

from gbbot.recipes.base import Recipe
from gbbot.recipes.compile_site import DynamicShapeCaptureOps, ItemCaptureScalars, LoggerIgnored, RnnAllowed
from gbbot.recipes.deepcopy import DeepcopyClone
from gbbot.recipes.graph_break import GraphBreakRemove
from gbbot.recipes.item import ItemConstant
from gbbot.recipes.logger import LoggerGuard
from gbbot.recipes.print_call import PrintGuard, PrintHop
from gbbot.recipes.requires_grad import RequiresGradInit, RequiresGradSplit
from gbbot.recipes.sdp_kernel import SdpKernelReplace
from gbbot.recipes.side_effect import SideEffectGuard
from gbbot.recipes.skipped_call import SkippedCallGuard
from gbbot.recipes.tensor_branch import CheckItemRaise, CheckScalarRaise, CheckTensorRaise, WhereInsteadOfBranch
from gbbot.recipes.tolist import TolistTensor

RECIPES: dict[str, tuple[type[Recipe], ...]] = {
    "print": (PrintGuard, PrintHop),
    "logger": (LoggerGuard, LoggerIgnored),
    "skipped_call": (SkippedCallGuard,),
    # an `if ….item() …: raise` gets its check (with the setting) before the setting alone, which
    # would only turn the break into a data-dependent branch at the same line
    "item": (ItemConstant, CheckItemRaise, ItemCaptureScalars),
    "tolist": (TolistTensor,),
    "deepcopy": (DeepcopyClone,),
    "requires_grad": (RequiresGradSplit, RequiresGradInit),
    "graph_break": (GraphBreakRemove,),
    "dynamic_shape": (DynamicShapeCaptureOps,),
    "rnn": (RnnAllowed,),
    "side_effect": (SideEffectGuard,),
    "sdp_kernel": (SdpKernelReplace,),
    "tensor_branch": (CheckTensorRaise, CheckScalarRaise, WhereInsteadOfBranch),
}


BY_SHAPE = tuple(recipe_id for recipe_id, group in RECIPES.items() if not group[0].gb_ids)


def variants(recipe_id: str | None) -> tuple[type[Recipe], ...]:
    return RECIPES.get(recipe_id or "", ())


def by_id(gb_id: str | None) -> str | None:
    """The recipe that takes this GB id (at most one does)."""
    return next((recipe_id for recipe_id, group in RECIPES.items() if gb_id in group[0].gb_ids), None)


def tried(recipe_id: str | None) -> tuple[str, ...]:
    """The recipes asked for a break whose GB id names `recipe_id`, in the order the fix step
    tries them: the shape recipes first (they change the least), unless the id's own first variant
    already guards the statement."""
    if recipe_id not in RECIPES:
        return BY_SHAPE
    return (recipe_id, *BY_SHAPE) if RECIPES[recipe_id][0].leads else (*BY_SHAPE, recipe_id)


def choices(recipe_id: str | None) -> tuple[type[Recipe], ...]:
    """Every recipe worth trying for a break with this `fix` id, in preference order."""
    return tuple(dict.fromkeys(v for tried_id in tried(recipe_id) for v in variants(tried_id)))


def takes(recipe_id: str, source: str, line: int, code: str) -> bool:
    """Does a variant of the recipe match a break at `line` of `source` (`code`: its statement)?"""
    return any(v.matches(source, line, code) for v in variants(recipe_id))


def chosen(recipe_id: str | None, source: str, line: int, code: str) -> str | None:
    """For a break whose GB id names `recipe_id`: the first recipe that takes it, the one `gbbot
    fix` tries first."""
    return next((r for r in tried(recipe_id) if takes(r, source, line, code)), None)


def all_variants() -> tuple[type[Recipe], ...]:
    return tuple(v for group in RECIPES.values() for v in group)
