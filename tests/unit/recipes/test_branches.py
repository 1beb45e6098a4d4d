"""Whether the number a line makes decides a branch: read from the source, as the fix step does
before it offers `capture_scalar_outputs` for an `.item()`."""

from __future__ import annotations

import textwrap

import pytest

from gbbot.recipes.branches import decides_branch


def _source(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("def f(x):\n    if x.sum().item() > 0:\n        return x\n    return -x\n", 2),
        ("def f(x):\n    while x.max().item() > 1:\n        x = x / 2\n    return x\n", 2),
        ("def f(x):\n    assert x.min().item() >= 0, 'negative'\n    return x\n", 2),
        ("def f(x):\n    return x if x.sum().item() > 0 else -x\n", 2),
        # through a name, tested later in the function
        (
            "def f(x):\n    peak = x.abs().max().item()\n    x = x + 1\n    if peak > 50:\n        x = x / peak\n    return x\n",
            2,
        ),
        # a test spanning lines
        (
            "def f(x, n):\n    if (\n        x.max().item()\n        >= n\n    ):\n        raise ValueError(n)\n    return x\n",
            3,
        ),
    ],
)
def test_a_number_that_reaches_a_test_decides_a_branch(text, line):
    assert decides_branch(text, line)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        # the number only feeds arithmetic
        ("def f(x):\n    scale = x.abs().max().item()\n    return x / (scale + 1)\n", 2),
        # the branch is on a flag; the conversion is in its body
        ("def f(x, flag):\n    if flag: k = x.sum().item()\n    return x\n", 2),
        # a test before the assignment reads another binding of the name
        ("def f(x, peak):\n    if peak > 1:\n        x = x * 2\n    peak = x.max().item()\n    return x * peak\n", 4),
        # another function's test
        ("def f(x):\n    k = x.sum().item()\n    return x * k\n\ndef g(k):\n    if k > 0:\n        return k\n", 2),
        ("def f(:\n", 1),  # does not parse
    ],
)
def test_a_number_that_reaches_no_test_does_not(text, line):
    assert not decides_branch(text, line)
