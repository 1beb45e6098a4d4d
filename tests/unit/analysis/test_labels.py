"""Each break is labelled with the recipe `gbbot fix` would really use: the views say "fix: …"
from it, and `/gb-fix` is offered only where a patch can come."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gbbot.analysis import advice
from gbbot.analysis.labels import fix_label
from gbbot.analysis.source import source_map
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
