"""The recipes, by their `fix` id; variants in the order they are tried (the next one only when
the one before did not match or was dropped). Which breaks each takes is its trigger
(gbbot/analysis/triggers.py), the declaration the label asks too.

Some recipes are chosen by the statement's shape rather than the id: a side-effect-only statement
is guarded whatever break its arguments cause, and a deprecated `sdp_kernel` is replaced whatever
break it reports. They are tried for every break, before the id's own variants (they change the
least: nothing at all when not compiling), except where the id's first variant is the same guard
(its trigger `leads`).
"""

from __future__ import annotations

from gbbot.analysis import triggers
from gbbot.fix.recipes.base import Recipe
from gbbot.fix.recipes.compile_site import DynamicShapeCaptureOps, ItemCaptureScalars, LoggerIgnored, RnnAllowed
from gbbot.fix.recipes.deepcopy import DeepcopyClone
from gbbot.fix.recipes.graph_break import GraphBreakRemove
from gbbot.fix.recipes.item import ItemConstant
from gbbot.fix.recipes.logger import LoggerGuard
from gbbot.fix.recipes.print_call import PrintGuard, PrintHop
from gbbot.fix.recipes.requires_grad import RequiresGradInit, RequiresGradSplit
from gbbot.fix.recipes.sdp_kernel import SdpKernelReplace
from gbbot.fix.recipes.side_effect import SideEffectGuard
from gbbot.fix.recipes.skipped_call import SkippedCallGuard
from gbbot.fix.recipes.tensor_branch import CheckItemRaise, CheckScalarRaise, CheckTensorRaise, WhereInsteadOfBranch
from gbbot.fix.recipes.tolist import TolistTensor

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


def variants(recipe_id: str | None) -> tuple[type[Recipe], ...]:
    return RECIPES.get(recipe_id or "", ())


def choices(recipe_id: str | None) -> tuple[type[Recipe], ...]:
    """Every recipe worth trying for a break with this `fix` id, in preference order (each still
    only where its trigger accepts the statement)."""
    tried = triggers.tried(triggers.BY_RECIPE.get(recipe_id or ""))
    return tuple(dict.fromkeys(v for trigger in tried for v in variants(trigger.recipe)))


def all_variants() -> tuple[type[Recipe], ...]:
    return tuple(v for group in RECIPES.values() for v in group)
