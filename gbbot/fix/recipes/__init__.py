"""The recipes, by the `fix` id that gbbot/data/rules.yaml gives a break; variants in the order
they are tried (the next one only when the one before did not match or was dropped)."""

from __future__ import annotations

from gbbot.fix.recipes.base import Recipe
from gbbot.fix.recipes.deepcopy import DeepcopyClone
from gbbot.fix.recipes.graph_break import GraphBreakRemove
from gbbot.fix.recipes.item import ItemCaptureScalars, ItemConstant
from gbbot.fix.recipes.logger import LoggerGuard
from gbbot.fix.recipes.print_call import PrintGuard, PrintHop
from gbbot.fix.recipes.requires_grad import RequiresGradInit, RequiresGradSplit
from gbbot.fix.recipes.skipped_call import SkippedCallGuard
from gbbot.fix.recipes.tolist import TolistTensor

RECIPES: dict[str, tuple[type[Recipe], ...]] = {
    "print": (PrintGuard, PrintHop),
    "logger": (LoggerGuard,),
    "skipped_call": (SkippedCallGuard,),
    "item": (ItemConstant, ItemCaptureScalars),
    "tolist": (TolistTensor,),
    "deepcopy": (DeepcopyClone,),
    "requires_grad": (RequiresGradSplit, RequiresGradInit),
    "graph_break": (GraphBreakRemove,),
}


def variants(recipe_id: str | None) -> tuple[type[Recipe], ...]:
    return RECIPES.get(recipe_id or "", ())


def all_variants() -> tuple[type[Recipe], ...]:
    return tuple(v for group in RECIPES.values() for v in group)
