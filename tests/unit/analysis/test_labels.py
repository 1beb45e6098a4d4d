"""Each break is labelled with the recipe `gbbot fix` would really use: the views say "fix: …"
from it, and `/gb-fix` is offered only where a patch can come. The label runs the recipes' own
matchers in a dry pass, the ones `gbbot fix` then applies: checked over every recipe's own examples
(each line a recipe rewrites is labelled) and look-alikes (a line no variant of a recipe rewrites
is not labelled with it), and on the bundled example's data-dependent branch."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gbbot.analysis import advice
from gbbot.analysis.labels import fix_label
from gbbot.analysis.source import source_map
from gbbot.core.model import Origin
from gbbot.fix import plan
from gbbot.recipes import BY_SHAPE, RECIPES, all_variants, by_id, variants
from gbbot.recipes.base import MARKER
from tests.builders import graph_break

SOURCE = """\
import logging

from tqdm import tqdm

log = logging.getLogger(__name__)


def print(*args):
    return args


def step(x, loss, n):
    log.info("loss %s", loss.item())
    tqdm.write(f"loss {loss.item()}")
    if loss.item() > 50:
        x = x / 2
    peak = x.abs().max().item()
    if peak > n:
        x = x / peak
    if x.max().item() >= n:
        raise ValueError("too large")
    scale = x.abs().max().item()
    print("mine", x.sum().item())
    x.add_(1).sum().item()
    return x / (scale + 1)
"""
LINES = {n: text for n, text in enumerate(SOURCE.splitlines(), start=1)}


def _label(line: int, fix: str | None) -> str | None:
    brk = graph_break(1, file="m.py", line=line, code=LINES[line].strip(), fix=fix)
    return fix_label(brk, lambda path: source_map(SOURCE) if path == "m.py" else None)


@pytest.mark.parametrize(
    ("line", "fix", "label"),
    [
        (14, "item", "side_effect"),  # tqdm.write(... .item()): the guard of the whole statement
        (13, "item", "side_effect"),  # a log record whose argument breaks
        (15, "item", None),  # the number decides an `if`: only advice
        (17, "item", None),  # … through a name a later test reads
        (20, "item", "item"),  # an `if` that only raises: torch._check, written by the item recipes
        (22, "item", "item"),  # arithmetic: capture_scalar_outputs
        (23, "item", "item"),  # `print` is the module's own function here, not the builtin
        (24, "item", "item"),  # an argument changes the tensor: not side-effect-only
        (13, "logger", "logger"),  # a guard already
    ],
)
def test_the_label_is_the_recipe_gbbot_fix_uses(line, fix, label):
    assert _label(line, fix) == label


def test_outside_the_repository_the_rules_id_stands():
    brk = graph_break(1, file="m.py", line=15, code=LINES[15].strip(), fix="item")
    assert fix_label(brk, lambda _path: None) == "item"


def test_a_break_labelled_for_advice_gets_the_advice_for_branches_in_every_view():
    # through a name: the line itself (`peak = …`) shows no branch, the label carries it
    brk = graph_break(1, gb_id="GB0124", file="m.py", line=17, code=LINES[17].strip(), fix="item")
    labelled = replace(brk, fix=fix_label(brk, lambda _path: source_map(SOURCE)))
    assert labelled.fix is None
    best = advice.best(labelled)
    assert best is not None and "only moves the break to the `if`" in best.text
    assert "only moves the break" not in advice.best(brk).text  # the unlabelled break reads otherwise


def test_an_assert_on_an_item_keeps_the_item_label_its_check_recipe_needs():
    source = "def f(x):\n    assert x.min().item() >= 0, 'negative'\n    return x\n"
    brk = graph_break(1, file="m.py", line=2, code="assert x.min().item() >= 0, 'negative'", fix="item")
    assert fix_label(brk, lambda path: source_map(source)) == "item"


NO_RECIPE_ID = "GB0142"  # an unsupported context manager: no recipe takes it by id


def _marked(source: str) -> list[int]:
    return [n for n, text in enumerate(source.splitlines(), 1) if MARKER in text]


def _statement(source: str, line: int) -> str:
    where = source_map(source)
    first, last = next(((a, b) for a, b in where.statements if a <= line <= b), (line, line))
    return "\n".join(where.line(n) for n in range(first, last + 1))


def _recipe_break(recipe_id: str, source: str, line: int):
    gb_ids = RECIPES[recipe_id][0].gb_ids
    gb_id = gb_ids[0] if gb_ids else NO_RECIPE_ID
    return graph_break(
        1,
        gb_id=gb_id,
        file="m.py",
        line=line,
        code=source.splitlines()[line - 1].strip(),
        statement=_statement(source, line).strip(),
        fix=by_id(gb_id),
        origin=Origin.USER,
        function=source_map(source).qualname(line, "<module>"),
    )


def _recipe_label(recipe_id: str, source: str, line: int) -> str | None:
    brk = _recipe_break(recipe_id, source, line)
    return fix_label(brk, lambda path: source_map(source) if path == "m.py" else None)


def _writes(recipe, source: str, line: int) -> bool:
    return recipe.matches(source, line, _statement(source, line))


def _at_break_lines():
    """(recipe, source, line) for every recipe that rewrites the break's own line (a compile-site
    setting's examples are `torch.compile` calls, not breaks)."""
    for recipe in all_variants():
        if recipe.at_compile_site:
            continue
        for i, ex in enumerate(recipe.examples):
            for line in _marked(ex.before):
                yield pytest.param(recipe, ex.before, line, id=f"{recipe.id}-{recipe.variant}-{i}-line{line}")


def _look_alikes():
    for recipe in all_variants():
        for i, source in enumerate(recipe.untouched):
            for line in _marked(source):
                yield pytest.param(recipe, source, line, id=f"{recipe.id}-{recipe.variant}-{i}-line{line}")


def test_the_variants_of_a_recipe_take_the_same_breaks_and_no_id_is_taken_twice():
    for recipe_id, group in RECIPES.items():
        assert {(v.id, v.gb_ids, v.leads) for v in group} == {(recipe_id, group[0].gb_ids, group[0].leads)}
    taken = [gb_id for group in RECIPES.values() for gb_id in group[0].gb_ids]
    assert len(taken) == len(set(taken)), "a GB id taken by two recipes"


@pytest.mark.parametrize(("recipe", "source", "line"), list(_at_break_lines()))
def test_a_line_a_recipe_rewrites_is_labelled_with_a_recipe(recipe, source, line):
    # the label names the recipe gbbot fix tries first: this one, or a shape recipe that comes
    # before it and rewrites the same line
    assert _writes(recipe, source, line)
    label = _recipe_label(recipe.id, source, line)
    assert label == recipe.id or (label in BY_SHAPE and any(_writes(v, source, line) for v in variants(label)))


@pytest.mark.parametrize(("recipe", "source", "line"), list(_look_alikes()))
def test_a_look_alike_no_variant_rewrites_is_not_labelled_with_the_recipe(recipe, source, line):
    if not any(_writes(v, source, line) for v in RECIPES[recipe.id]):
        assert _recipe_label(recipe.id, source, line) != recipe.id


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
    brk = _recipe_break("tensor_branch", EXAMPLE_BRANCH, 5)
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
    brk = _recipe_break("sdp_kernel", source, 5)
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
    assert _recipe_label("tensor_branch", source, 6) == label
