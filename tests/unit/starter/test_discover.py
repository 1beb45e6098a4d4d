"""`gbbot init`: a starter config from the compile sites LibCST finds; never over an existing
file. (That `gbbot check` runs it without edits, with real torch: tests/e2e/test_init.py.)"""

from __future__ import annotations

from gbbot.starter import discover


def test_compile_sites_through_aliases_and_methods_and_what_is_not_one():
    source = """\
import re
import torch as t
from torch import compile as jit

PATTERN = re.compile("x")
model = t.nn.Linear(2, 2)
model.compile(fullgraph=True)

@jit
def one():
    return 1

class Net(t.nn.Module):
    @t.compile(dynamic=True)
    def forward(self, x):
        return x

def build(size):
    return t.compile(t.nn.Linear(size, size))
"""
    facts = discover.facts_of("pkg/net.py", source)
    assert facts.sites == (7, 9, 14, 19)
    assert [(f.name, f.decorated, f.compiles, f.zero_args) for f in facts.functions] == [
        ("one", True, False, True),
        ("Net.forward", True, False, False),
        ("build", False, True, False),
    ]
    assert discover.facts_of("pkg/broken.py", "def (:\n") is None
