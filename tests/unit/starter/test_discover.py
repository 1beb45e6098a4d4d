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


def test_module_files_are_parsed_when_the_compile_sites_give_nothing_to_run(tmp_path):
    from gbbot.starter import template

    # a site that is no candidate (a compiled method), and a model in a file that never says compile
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/__init__.py").write_text("")
    (tmp_path / "pkg/gen.py").write_text(
        "import torch\n\nclass Gen(torch.nn.Module):\n    @torch.compile\n    def generate(self, n):\n        return n\n"
    )
    (tmp_path / "pkg/net.py").write_text(
        "from torch import nn\n\nclass Net(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n\n"
        "    def forward(self, x):\n        return x\n"
    )
    (tmp_path / "pkg/util.py").write_text("def helper():\n    return 1\n")
    first = discover.scan(tmp_path)
    assert first.deferred == ("pkg/net.py",) and first.parsed == 2  # util.py: neither compile nor Module
    assert template.candidates(first) == []
    full = discover.add_models(tmp_path, first)
    assert full.deferred == () and full.parsed == 3
    tried, _ = template.model_candidates(full)
    assert [c.target for c in tried] == ["pkg.net:Net"]  # Gen compiles already
