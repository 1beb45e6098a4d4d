"""`gbbot init` run whole: the starter config `gbbot check` runs without edits (real torch), never
written over an existing file, and suggested when there is no config."""

from __future__ import annotations

import json
import shutil

import pytest

from gbbot.core.config import parse_config
from tests.cli_helpers import gbbot, write
from tests.conftest import EXAMPLES

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


def check_all_ok(repo, tmp_path) -> dict:
    result = gbbot(repo, "check", "--json", str(tmp_path / "report.json"), "--quiet")
    assert result.returncode in (0, 1), result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    statuses = {e["name"]: (e["status"], e["error"]) for e in report["entrypoints"]}
    assert all(status == "ok" for status, _ in statuses.values()), statuses
    return {e["name"]: e for e in report["entrypoints"]}


def test_init_on_the_bundled_example_writes_a_config_check_runs_without_edits(tmp_path):
    repo = tmp_path / "example"
    shutil.copytree(EXAMPLES, repo, ignore=shutil.ignore_patterns("__pycache__", ".gbbot.yml"))
    made = gbbot(repo, "init")
    assert made.returncode == 0, made.stderr
    assert "wrote" in made.stderr and "review it, then run: gbbot check" in made.stderr
    config = parse_config((repo / ".gbbot.yml").read_text())
    assert {(e.kind, e.run or e.call) for e in config.entrypoints} == {
        ("run", "python train.py --steps 2"),  # its --steps option, set for a short run
        ("call", "tinymodel.bench:forward_once"),
    }
    entries = check_all_ok(repo, tmp_path)
    assert {b["gb_id"] for e in entries.values() for b in e["breaks"]} >= {"GB0059", "GB0124", "GB4198"}


def test_init_on_a_small_repository_finds_script_function_and_test_and_skips_the_rest(tmp_path):
    repo = tmp_path / "repo"
    write(repo, SMALL_REPO)
    made = gbbot(repo, "init")
    assert made.returncode == 0, made.stderr
    text = (repo / ".gbbot.yml").read_text()
    config = parse_config(text)
    assert [(e.name, e.kind, e.run or e.call or e.pytest) for e in config.entrypoints] == [
        ("train", "run", "python scripts/train.py"),
        ("forward_once", "call", "pkg.bench:forward_once"),
        ("test_layers", "pytest", ("tests/test_layers.py::test_scale",)),
    ]
    assert "test_scale (line 6) reaches a compile: pkg/layers.py:5: scale is @torch.compile'd." in text
    assert "Add the flags a short run needs" in text and ".venv" not in text and "build/" not in text
    entries = check_all_ok(repo, tmp_path)
    assert [b["code"] for b in entries["forward_once"]["breaks"]] == ['print("bench")  # a graph break']


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
    assert (
        "found no torch.compile call sites to run, and no nn.Module gbbot can build unaided, in 1 Python files"
        in nothing.stderr
    )
    assert "model: mypkg.model:MyModel" in nothing.stderr  # the template to start from, not "by hand"
    assert not (tmp_path / ".gbbot.yml").exists()


def init_then_check(repo, tmp_path, files):
    write(repo, files)
    made = gbbot(repo, "init")
    assert made.returncode == 0, made.stderr
    config = parse_config((repo / ".gbbot.yml").read_text())
    return config, check_all_ok(repo, tmp_path)


def test_of_twenty_tests_init_proposes_the_one_that_compiles_and_check_runs_only_it(tmp_path):
    plain = "\n".join(f"def test_plain_{i}():\n    assert ops.plain(torch.ones(1)).item() == 2\n" for i in range(19))
    files = {
        "pkg/__init__.py": "",
        "pkg/ops.py": """\
            import torch


            @torch.compile
            def fused(x):
                print("fused")  # the break
                return x.sin() + 1


            def plain(x):
                return x + 1
        """,
        # the compiled call is one call deeper, in a helper the test calls
        "tests/test_ops.py": "import torch\n\nfrom pkg import ops\n\n\ndef _helper(x):\n    return ops.fused(x)\n\n\n"
        + plain
        + "\n\ndef test_fused_path():\n    assert _helper(torch.ones(2)).shape == (2,)\n",
    }
    config, entries = init_then_check(tmp_path / "repo", tmp_path, files)
    (entry,) = config.entrypoints
    assert entry.pytest == ("tests/test_ops.py::test_fused_path",)
    (brk,) = entries[entry.name]["breaks"]
    assert (brk["file"], brk["code"]) == ("pkg/ops.py", 'print("fused")  # the break')
    assert brk["tests"] == ["tests/test_ops.py::test_fused_path"]


def test_a_script_compiling_at_module_level_becomes_a_run_entry_check_runs(tmp_path):
    files = {
        "bench.py": """\
            import argparse

            import torch

            parser = argparse.ArgumentParser()
            parser.add_argument("--steps", type=int, default=1000)
            args = parser.parse_args()


            def step(x):
                print("step")  # the break
                return x * 2


            fast = torch.compile(step)
            for _ in range(args.steps):
                fast(torch.ones(3))
        """,
    }
    config, entries = init_then_check(tmp_path / "repo", tmp_path, files)
    assert [(e.kind, e.run) for e in config.entrypoints] == [("run", "python bench.py --steps 2")]
    assert [b["code"] for b in entries["bench"]["breaks"]] == ['print("step")  # the break']


def test_a_repository_that_never_compiles_gets_a_model_entry_check_runs_without_edits(tmp_path):
    files = {
        "tinynet/__init__.py": "",
        "tinynet/model.py": """\
            import torch
            from torch import nn


            def _scaled(x):
                print("scaled", x.shape)  # the planted break, below a submodule's forward
                return x * 2


            class Block(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.lin = nn.Linear(dim, dim)

                def forward(self, x):
                    return _scaled(torch.relu(self.lin(x)))


            class TinyNet(nn.Module):
                def __init__(self, dim, depth=4, vocab_size=1000):
                    super().__init__()
                    self.embed = nn.Embedding(vocab_size, dim)
                    self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))

                def forward(self, tokens):
                    x = self.embed(tokens)
                    for block in self.blocks:
                        x = block(x)
                    return x
        """,
    }
    config, entries = init_then_check(tmp_path / "repo", tmp_path, files)
    tiny = config.entrypoint("TinyNet")
    assert (tiny.kind, tiny.model, dict(tiny.kwargs)) == (
        "model",
        "tinynet.model:TinyNet",
        {"dim": 32, "depth": 2, "vocab_size": 100},
    )
    assert tiny.inputs == ({"tensor": [2, 8], "dtype": "long", "high": 100},)
    found = {(b["file"], b["function"]) for b in entries["TinyNet"]["breaks"]}
    assert found == {("tinynet/model.py", "_scaled")}


# A repository that never compiles: a whole model whose constructor's defaults are its sizes, a
# block it is made of, a model that needs a setting nothing says (a template to finish) and one
# whose constructor raises. init builds each proposal before writing it.
BUILT_REPO = {
    "zoo/__init__.py": "",
    "zoo/nets.py": """\
        import torch
        from torch import nn


        class Block(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.lin = nn.Linear(dim, dim)

            def forward(self, x):
                print("block")  # the planted break
                return torch.relu(self.lin(x))


        class Tower(nn.Module):
            def __init__(self, dim=24, depth=2):
                super().__init__()
                self.blocks = nn.Sequential(*(Block(dim) for _ in range(depth)))

            def forward(self, x):
                return self.blocks(x)


        class Scaler(nn.Module):
            def __init__(self, dim=16):
                super().__init__()
                self.lin = nn.Linear(dim, dim)
                self.scale = nn.Parameter(torch.ones(dim * 2))

            def forward(self, x):
                return self.lin(x) * self.scale  # 16 against 32: fails when called


        class Mixer(nn.Module):
            def __init__(self, dim=16, mixing="hard"):
                super().__init__()
                if mixing not in ("soft", "sum"):
                    raise ValueError(f"unknown mixing {mixing!r}")
                self.lin = nn.Linear(dim, dim)

            def forward(self, x):
                return self.lin(x)


        class Speech(nn.Module):
            def __init__(self, n_mels, dim=16):
                super().__init__()
                self.proj = nn.Linear(dim, n_mels)

            def forward(self, x):
                return self.proj(x)


        class Tagger(nn.Module):
            def __init__(self, n_tags):
                super().__init__()
                self.lin = nn.Linear(8, n_tags)

            def forward(self, x):
                return self.lin(x)
    """,
    "zoo/config.py": """        from dataclasses import dataclass


        @dataclass
        class SpeechConfig:
            n_mels: int = 12
    """,
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """init on BUILT_REPO, then check on what it wrote: one run each, shared by the tests below."""
    tmp = tmp_path_factory.mktemp("built")
    repo = tmp / "repo"
    write(repo, BUILT_REPO)
    made = gbbot(repo, "init")
    assert made.returncode == 0, made.stderr
    text = (repo / ".gbbot.yml").read_text()
    return made, text, check_all_ok(repo, tmp)


def test_init_builds_its_model_proposals_and_writes_the_failing_ones_commented_with_their_error(built):
    made, text, _ = built
    config = parse_config(text)
    # Block is a part of Tower, not proposed; Tagger's n_tags nothing says: a template
    assert [(e.name, e.model, dict(e.kwargs), e.inputs) for e in config.entrypoints] == [
        ("Tower", "zoo.nets:Tower", {}, ({"tensor": [2, 8, 24]},)),  # its own sizes: dim=24
        ("Speech", "zoo.nets:Speech", {"n_mels": 12}, ({"tensor": [2, 8, 16]},)),  # n_mels: the config's
    ]
    assert "# Built and called once, it failed: ValueError: unknown mixing 'hard'" in text
    assert "#   model: zoo.nets:Mixer" in text
    assert "# Built and called once, it failed: RuntimeError: The size of tensor a (16) must match" in text
    assert "#   model: zoo.nets:Scaler" in text
    assert "# fill in: n_tags" in text and "#   model: zoo.nets:Tagger" in text
    assert "Mixer: failed when built, written commented out: ValueError: unknown mixing 'hard'" in made.stderr
    assert "its model: entries were built and called once" in text


def test_the_active_entries_init_built_pass_check(built):
    _, _, entries = built
    assert list(entries) == ["Tower", "Speech"]
    assert {(b["file"], b["function"]) for b in entries["Tower"]["breaks"]} == {("zoo/nets.py", "Block.forward")}


def test_init_no_build_runs_nothing_and_keeps_every_proposal(tmp_path):
    write(tmp_path, BUILT_REPO)
    made = gbbot(tmp_path, "init", "--no-build", "--print")
    assert made.returncode == 0, made.stderr
    names = [e.name for e in parse_config(made.stdout).entrypoints]
    assert sorted(names) == ["Mixer", "Scaler", "Speech", "Tower"]
    assert "(parsed, nothing was run)" in made.stdout and "building" not in made.stderr
