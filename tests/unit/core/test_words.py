"""A diff's words are written once, in gbbot/core/words.py: its reasons are data (an id and its
arguments) until a surface says them, and the headline's counts ("2 new graph breaks, 1 fixed",
"1 new, 1 fixed, 3 persisting vs main", "This PR adds **1** graph break, fixes **1**", the
audit's regression, the policy's verdict) are worded there and nowhere else in gbbot/."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gbbot.core.model import Reason, Why
from gbbot.core.words import WORDS, say

GBBOT = Path(__file__).resolve().parents[3] / "gbbot"
WORDED_HERE = "core/words.py"
# The outputs' descriptions (what action.yml says each output holds) name what they count.
DESCRIBED = "action/workflow.py"
# The headline's words: new breaks counted, the terminal's base, the audit's stopped entrypoints,
# the PR sentence's verbs before a count; and (AFTER_A_COUNT) a state right after a formatted value.
HEADLINE = re.compile(
    r"No (new )?graph breaks|none of them new|new graph break|persisting vs|stopped running|change in graph breaks|\b(adds|fixes|hides|reveals) \*\*"
)
AFTER_A_COUNT = re.compile(r"^ (new|fixed|hidden|revealed|persisting)\b")
# gbbot/fix/'s progress lines count what a fix round revealed ("round 2: revealed 1 break"): words
# of the fix rounds, not of a diff's headline.
FIX_ROUNDS = ("fix/",)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def worded(source: str) -> Iterator[str]:
    """The headline's words a module's string literals say (docstrings left out)."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        literal = isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
        if literal and HEADLINE.search(node.value):
            yield node.value
        for before, after in zip(getattr(node, "values", ()), getattr(node, "values", ())[1:], strict=False):
            if isinstance(before, ast.FormattedValue) and isinstance(after, ast.Constant):
                yield from [f"{{…}}{after.value}"] if AFTER_A_COUNT.search(str(after.value)) else []


def test_the_headline_is_worded_in_one_place() -> None:
    places: dict[str, list[str]] = {}
    for path in sorted(GBBOT.rglob("*.py")):
        name = str(path.relative_to(GBBOT))
        if name == DESCRIBED or name.startswith(FIX_ROUNDS):
            continue
        if said := list(worded(path.read_text(encoding="utf-8"))):
            places[name] = said
    assert list(places) == [WORDED_HERE], {k: v for k, v in places.items() if k != WORDED_HERE}


def test_the_grep_finds_a_headline_worded_elsewhere() -> None:
    assert list(worded('title = f"{c.new} new, {c.fixed} fixed"\n')) == ["{…} new, ", "{…} fixed"]
    assert list(worded('said = plural(n, "new graph break")\n')) == ["new graph break"]
    assert list(worded('said = f"hides **{n}**"\n')) == ["hides **"]
    assert not list(worded('"""Say 2 new graph breaks."""\nSTATE = "new"\n'))


@pytest.mark.parametrize(
    ("reason", "said"),
    [
        (Reason(Why.NOT_DEFINED, ("",)), "entrypoint not defined there"),
        (Reason(Why.NOT_DEFINED, ("ModuleNotFoundError: x",)), "entrypoint not defined there (ModuleNotFoundError: x)"),
        (Reason(Why.ENDED, ("crashed", None, "")), "it crashed there"),
        (Reason(Why.ENDED, ("failed", 1, "boom")), "it failed there (exit 1): boom"),
        (Reason(Why.SKIPPED, ("",)), "it was skipped there (no reason given)"),
        (
            Reason(Why.LACKS, (Reason(Why.ADDED, ("pkg/a.py",)), "", True)),
            "entrypoint not defined there: `pkg/a.py` is new in this change",
        ),
        (
            Reason(Why.NO_BASELINE, ("m", "0123456789", Reason(Why.TIMED_OUT), 2)),
            "no baseline for `m` on base 0123456: it timed out there; the comparison could not be made, so its 2 "
            "graph breaks count as new",
        ),
        (Reason(Why.SAID, ("as a report said it",)), "as a report said it"),
    ],
)
def test_each_reason_is_worded_from_its_id_and_arguments(reason: Reason, said: str) -> None:
    assert say(reason) == said


def test_every_id_has_its_words() -> None:
    assert set(WORDS) == set(Why)
