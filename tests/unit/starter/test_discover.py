"""`gbbot init`: a starter config from the compile sites LibCST finds; never over an existing
file. (That `gbbot check` runs it without edits, with real torch: tests/e2e/test_init.py.)"""

from __future__ import annotations

from gbbot.core.config import parse_config
from gbbot.starter import discover
from tests.cli_helpers import gbbot, write

SMALL_REPO = {
    "scripts/train.py": """\
        import torch


        class Net(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x) * 2


        def main():
            # a module of the repository's own: torch's built-in modules alone are not traced
            model = Net()
            model.compile()
            print(model(torch.ones(3, 4)).shape)


        if __name__ == "__main__":
            main()
    """,
    "pkg/__init__.py": "",
    "pkg/bench.py": """\
        import torch as t


        @t.compile
        def forward_once():
            x = t.ones(2, 3)
            print("bench")  # a graph break
            return x * 2
    """,
    "pkg/layers.py": """\
        from torch import compile as jit


        @jit(dynamic=False)
        def scale(x, factor=2.0):
            return x * factor
    """,
    "pkg/text.py": "import re\n\nPATTERN = re.compile('a+')\n",  # no torch: not a site
    "tests/test_layers.py": """\
        import torch

        from pkg import layers


        def test_scale():
            assert layers.scale(torch.ones(2)).tolist() == [2.0, 2.0]
    """,
    "tests/test_text.py": "from pkg.text import PATTERN\n\ndef test_text():\n    assert PATTERN.match('aa')\n",
    ".venv/lib/site-packages/other/model.py": "import torch\n\nf = torch.compile(lambda x: x)\n",
    "build/lib/pkg/bench.py": "import torch\n\n@torch.compile\ndef forward_once():\n    pass\n",
}


def test_init_never_overwrites_and_print_only_shows(tmp_path):
    write(tmp_path, {**SMALL_REPO, ".gbbot.yml": "# mine\n"})
    refused = gbbot(tmp_path, "init")
    assert refused.returncode == 2
    assert "/.gbbot.yml already exists; gbbot init never overwrites it" in refused.stderr
    assert (tmp_path / ".gbbot.yml").read_text() == "# mine\n"
    shown = gbbot(tmp_path, "init", "--print")
    assert shown.returncode == 0 and (tmp_path / ".gbbot.yml").read_text() == "# mine\n"
    assert [e.name for e in parse_config(shown.stdout).entrypoints] == ["train", "forward_once", "test_layers"]


def test_without_a_config_check_suggests_init_and_init_says_when_nothing_compiles(tmp_path):
    write(tmp_path, {"app.py": "import re\nre.compile('x')\n"})
    missing = gbbot(tmp_path, "check", "--root", str(tmp_path))
    assert missing.returncode == 2 and "run `gbbot init` to write a starter one" in missing.stderr
    nothing = gbbot(tmp_path, "init")
    assert nothing.returncode == 2
    assert "found no torch.compile call sites to run in 1 Python files" in nothing.stderr
    assert not (tmp_path / ".gbbot.yml").exists()


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
        ("build", False, True, False),
    ]
    assert discover.facts_of("pkg/broken.py", "def (:\n") is None
