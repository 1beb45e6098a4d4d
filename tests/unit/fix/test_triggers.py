"""A recipe owns its trigger: the label every view shows ("fix: tensor_branch") and the recipes
`gbbot fix` tries ask the same declaration, so a view never promises a fix that `gbbot fix` then
refuses, nor hides one it makes. Checked over every recipe's own examples (the trigger must take
each line the recipe rewrites) and look-alikes (the trigger must refuse a line no variant of the
recipe rewrites), and on the bundled example's data-dependent branch, which the views used to
labelled with the recipe for data-dependent branches (then called data_branch)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gbbot.analysis import triggers
from gbbot.analysis.labels import fix_label
from gbbot.analysis.source import source_map
from gbbot.core.model import Origin
from gbbot.fix import engine, plan
from gbbot.fix.recipes import RECIPES, all_variants, choices
from gbbot.fix.recipes.base import MARKER, BreakSite
from tests.builders import graph_break

NO_RECIPE_ID = "GB0142"  # an unsupported context manager: no recipe takes it by id


def _marked(source: str) -> list[int]:
    return [n for n, text in enumerate(source.splitlines(), 1) if MARKER in text]


def _statement(source: str, line: int) -> str:
    where = source_map(source)
    first, last = next(((a, b) for a, b in where.statements if a <= line <= b), (line, line))
    return "\n".join(where.line(n) for n in range(first, last + 1))


def _break(recipe_trigger: triggers.Trigger, source: str, line: int):
    gb_id = recipe_trigger.gb_ids[0] if recipe_trigger.gb_ids else NO_RECIPE_ID
    own = triggers.by_id(gb_id)
    return graph_break(
        1,
        gb_id=gb_id,
        file="m.py",
        line=line,
        code=source.splitlines()[line - 1].strip(),
        statement=_statement(source, line).strip(),
        fix=own.recipe if own else None,
        origin=Origin.USER,
        function=source_map(source).qualname(line, "<module>"),
    )


def _label(recipe_trigger: triggers.Trigger, source: str, line: int) -> str | None:
    return fix_label(_break(recipe_trigger, source, line), lambda path: source_map(source) if path == "m.py" else None)


def _writes(recipe, source: str, line: int) -> bool:
    try:
        return bool(engine.apply(source, [engine.Request("k", recipe, BreakSite(line))]).applied)
    except engine.SourceError:
        return False


def _at_break_lines():
    """(recipe, source, line) for every recipe that rewrites the break's own line (a compile-site
    setting's examples are `torch.compile` calls, not breaks)."""
    for recipe in all_variants():
        if getattr(recipe, "at_compile_site", False):
            continue
        for i, ex in enumerate(recipe.examples):
            for line in _marked(ex.before):
                yield pytest.param(recipe, ex.before, line, id=f"{recipe.id}-{recipe.variant}-{i}-line{line}")


def _look_alikes():
    """Only the triggers that declare a shape are held to this. A trigger by GB id alone (print,
    logger, tolist, deepcopy, requires_grad, graph_break, …) still labels some look-alikes its
    recipe leaves alone (`y = print("a") or x`, `ok = log.info(…)`, a `.tolist()` list appended
    to): declaring those shapes is the next step."""
    for recipe in all_variants():
        if recipe.trigger.when is triggers.any_statement:
            continue
        for i, source in enumerate(recipe.untouched):
            for line in _marked(source):
                yield pytest.param(recipe, source, line, id=f"{recipe.id}-{recipe.variant}-{i}-line{line}")


def test_every_recipe_declares_a_trigger_and_every_trigger_has_recipes():
    for recipe_id, group in RECIPES.items():
        for recipe in group:
            assert recipe.trigger is triggers.BY_RECIPE[recipe_id], recipe.__name__
    assert set(triggers.BY_RECIPE) == set(RECIPES)
    taken = [gb_id for t in triggers.TRIGGERS for gb_id in t.gb_ids]
    assert len(taken) == len(set(taken)), "a GB id taken by two recipes"


@pytest.mark.parametrize(("recipe", "source", "line"), list(_at_break_lines()))
def test_a_line_a_recipe_rewrites_is_labelled_with_a_recipe(recipe, source, line):
    # the recipe's trigger takes the line, and the label names the recipe gbbot fix tries first:
    # this one, or a shape recipe that comes before it and rewrites the same line
    assert recipe.trigger.accepts(
        triggers.Statement(source, line, _statement(source, line), dict(source_map(source).imports))
    )
    label = _label(recipe.trigger, source, line)
    assert label is not None
    first = next(r for r in choices(label) if r.trigger.recipe == label)
    assert label == recipe.id or _writes(first, source, line)


@pytest.mark.parametrize(("recipe", "source", "line"), list(_look_alikes()))
def test_a_look_alike_no_variant_rewrites_is_not_labelled_with_the_recipe(recipe, source, line):
    family = RECIPES[recipe.id]
    rewritten = any(_writes(v, source, line) for v in family if not getattr(v, "at_compile_site", False))
    at_compile = any(getattr(v, "at_compile_site", False) for v in family)
    label = _label(recipe.trigger, source, line)
    if not rewritten and not at_compile:
        assert label != recipe.id


EXAMPLE_BRANCH = """\
import torch


def clip_grad(t: torch.Tensor) -> torch.Tensor:
    if t.abs().max() > 10:
        t = t / 10
    return t
"""


def test_a_branch_no_recipe_rewrites_gets_advice_in_the_views_and_in_gbbot_fix():
    """The example's `clip_grad`: the views said "fix: data_branch", and `gbbot fix` then said the
    line is not a pattern the tensor_branch recipes rewrite. Now both say advice; `gbbot fix` still
    says which recipes it asked and why they do not fit."""
    brk = _break(triggers.TENSOR_BRANCH, EXAMPLE_BRANCH, 5)
    label = fix_label(brk, lambda _path: source_map(EXAMPLE_BRANCH))
    assert label is None
    outcome = plan.plan_break(replace(brk, fix=label), ("e",), lambda _p: EXAMPLE_BRANCH, lambda _b: None)
    assert not isinstance(outcome, plan.Planned)
    assert outcome.recipe == "tensor_branch"
    assert outcome.reason.startswith("line 5 is not a pattern the tensor_branch recipes rewrite (")


def test_a_deprecated_sdp_kernel_is_labelled_with_the_recipe_that_replaces_it():
    # before, its GB0142 said no fix while `gbbot fix` replaced it by shape
    source = (
        "import torch\n\n\ndef attend(q):\n"
        "    with torch.backends.cuda.sdp_kernel(enable_flash=False):\n        return q\n"
    )
    brk = _break(triggers.SDP_KERNEL_CALL, source, 5)
    assert brk.fix is None
    assert fix_label(brk, lambda _path: source_map(source)) == "sdp_kernel"


@pytest.mark.parametrize(
    ("test", "label"),
    [
        ("if (x < 0).any():\n        raise ValueError('negative')", "tensor_branch"),
        ("if (x < 0).any():\n        raise ValueError('negative') from None", None),
        ("if x.sum():\n        raise ValueError('nonzero')", None),  # not evidently a boolean tensor
        ("if (x < 0).any():\n        y = x\n    else:\n        y = -x", "tensor_branch"),
        ("if (x < 0).any():\n        y = self.norm(x)\n    else:\n        y = x", None),  # a module's call
        ("if (x < 0).any():\n        y = x\n    else:\n        z = -x", None),
    ],
)
def test_the_tensor_branch_shapes(test, label):
    source = f"import torch\n\n\ndef f(self, x):\n    y = x\n    {test}\n    return y\n"
    assert _label(triggers.TENSOR_BRANCH, source, 6) == label
