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
        ("run", "python train.py --steps 5"),  # its --steps option, set for a short run
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
    assert "found no torch.compile call sites to run, and no model that ran when built small, in 1 Python files" in (
        nothing.stderr
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
    assert [(e.kind, e.run) for e in config.entrypoints] == [("run", "python bench.py --steps 5")]
    assert [b["code"] for b in entries["bench"]["breaks"]] == ['print("step")  # the break']


# A repository shaped like the ones people have (issue #49): a dataclass config (whisper's
# `Whisper(dims)`), a wrapper taking a model (`GaussianDiffusion(Unet(…), image_size=…)`), a
# registry factory (timm's `create_model`), a conv model sized by `image_size`, a script with a
# `--compile` flag and one that downloads; a model whose constructor raises and one that needs a
# value nothing names. One init, one check, shared by the tests below.
ZOO = {
    "zoo/__init__.py": """\
        from zoo.speech import Speech
        from zoo.nets import Tagger, Mixer
        from zoo.diffusion import Diffusion, Unet
        from zoo.registry import create_model
        from zoo import convnets
    """,
    "zoo/speech.py": """\
        from dataclasses import dataclass

        import torch
        from torch import nn


        @dataclass
        class Dims:
            n_mels: int
            n_ctx: int
            n_state: int
            n_head: int
            n_vocab: int
            n_layer: int = 12


        class Block(nn.Module):
            def __init__(self, width, heads):
                super().__init__()
                self.attn = nn.MultiheadAttention(width, heads, batch_first=True)

            def forward(self, x):
                print("block")  # the planted break
                return x + self.attn(x, x, x)[0]


        class Speech(nn.Module):
            def __init__(self, dims: Dims):
                super().__init__()
                self.conv = nn.Conv1d(dims.n_mels, dims.n_state, 3, stride=2, padding=1)
                self.pos = nn.Parameter(torch.zeros(dims.n_ctx, dims.n_state))
                self.tokens = nn.Embedding(dims.n_vocab, dims.n_state)
                self.blocks = nn.Sequential(*(Block(dims.n_state, dims.n_head) for _ in range(dims.n_layer)))

            def forward(self, mel, tokens):
                audio = self.conv(mel).transpose(1, 2)
                assert audio.shape[1:] == self.pos.shape, "incorrect audio shape"
                return self.blocks(self.tokens(tokens)) + (audio + self.pos).mean(1, keepdim=True)
    """,
    "zoo/diffusion.py": """\
        import torch
        from torch import nn
        from torch.nn import functional as F


        class Unet(nn.Module):
            def __init__(self, dim, channels=3):
                super().__init__()
                self.channels = channels
                self.down = nn.Conv2d(channels, dim, 3, padding=1)
                self.time = nn.Linear(1, dim)
                self.up = nn.Conv2d(dim, channels, 1)

            def forward(self, x, time):
                return self.up(self.down(x) + self.time(time[:, None].float())[:, :, None, None])


        class Diffusion(nn.Module):
            def __init__(self, model, *, image_size, timesteps=1000):
                super().__init__()
                self.model, self.image_size = model, image_size

            def forward(self, img):
                assert img.shape[-1] == self.image_size, "the image must be image_size wide"
                t = torch.full((img.shape[0],), 3)
                return F.mse_loss(self.model(img, t), img)
    """,
    "zoo/registry.py": """\
        _models = {}


        def register_model(fn):
            _models[fn.__name__] = fn
            return fn


        def create_model(model_name, pretrained=False, **kwargs):
            if pretrained:
                raise RuntimeError("weights are downloaded")
            return _models[model_name](**kwargs)
    """,
    "zoo/convnets.py": """\
        from torch import nn

        from zoo.registry import register_model


        class ConvNet(nn.Module):
            def __init__(self, image_size, width, num_classes=1000):
                super().__init__()
                self.image_size = image_size
                self.conv = nn.Conv2d(3, width, 3, padding=1)
                self.head = nn.Linear(width * image_size * image_size, num_classes)

            def forward(self, x):
                print("conv")  # the planted break
                return self.head(self.conv(x).flatten(1))


        @register_model
        def convnet_large(pretrained=False, **kwargs):
            return ConvNet(224, 256)


        @register_model
        def convnet_tiny(pretrained=False, **kwargs):
            return ConvNet(24, 8, num_classes=10)
    """,
    "zoo/nets.py": """\
        from torch import nn


        class Tagger(nn.Module):
            def __init__(self, n_tags):
                super().__init__()
                self.fc = nn.Linear(8, n_tags)

            def forward(self, x):
                return self.fc(x)


        class Mixer(nn.Module):
            def __init__(self, dim=16, mixing="hard"):
                super().__init__()
                if mixing not in ("soft", "sum"):
                    raise ValueError(f"unknown mixing {mixing!r}")

            def forward(self, x):
                return x
    """,
    "bench.py": """\
        import argparse

        import torch

        import zoo


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--model", default="convnet_large")
            parser.add_argument("--compile", action="store_true")
            parser.add_argument("--steps", type=int, default=1000)
            parser.add_argument("--batch-size", type=int, default=256)
            args = parser.parse_args()
            model = zoo.create_model(args.model)
            step = torch.compile(model) if args.compile else model
            for _ in range(args.steps):
                step(torch.ones(args.batch_size, 3, model.image_size, model.image_size))


        if __name__ == "__main__":
            main()
    """,
    "fetch.py": """\
        import torch

        URL = "https://example.com/weights.pt"

        if __name__ == "__main__":
            weights = torch.hub.load_state_dict_from_url(URL)
            torch.compile(lambda x: x)(torch.ones(1))
    """,
}


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    """init on ZOO, then check on what it wrote: one run each, shared by the tests below."""
    tmp = tmp_path_factory.mktemp("zoo")
    repo = tmp / "repo"
    write(repo, ZOO)
    made = gbbot(repo, "init")
    assert made.returncode == 0, made.stderr
    text = (repo / ".gbbot.yml").read_text()
    return repo, made, text, check_all_ok(repo, tmp)


def test_init_writes_the_models_it_built_small_with_their_config_objects_inner_models_and_inputs(zoo):
    _, made, text, _ = zoo
    config = parse_config(text)
    found = {e.name: (e.model, e.args, dict(e.kwargs), e.inputs) for e in config.entrypoints if e.kind == "model"}
    dims = {"n_mels": 16, "n_ctx": 16, "n_state": 32, "n_head": 2, "n_vocab": 100, "n_layer": 2}
    assert found == {
        # the registry's smallest variant, through its factory, never pretrained; its own image_size
        "convnet_tiny": ("zoo:create_model", ("convnet_tiny",), {"pretrained": False}, ({"tensor": [2, 3, 24, 24]},)),
        # a dataclass built with its own fields, small; the mel as long as the model asserts
        "Speech": ("zoo:Speech", (), {"dims": {"call": "zoo.speech:Dims", "kwargs": dims}},
                   ({"tensor": [2, 16, 32]}, {"tensor": [2, 8], "dtype": "long", "high": 100})),
        # the wrapper's model: the repository's Unet, built small the same way; the image its image_size
        "Diffusion": ("zoo:Diffusion", (), {"model": {"call": "zoo:Unet", "kwargs": {"dim": 32}}, "image_size": 16},
                      ({"tensor": [2, 3, 16, 16]},)),
    }  # fmt: skip
    assert "# Tried small, it did not run: nothing says what to pass as n_tags\n  # - name: Tagger\n" in text
    assert "# Tried small, it did not run: ValueError: unknown mixing 'hard'\n  # - name: Mixer\n" in text
    assert "# 1 more models could be model: entrypoints the same way." in text  # Unet: three ran first
    assert "Mixer: did not run: ValueError: unknown mixing 'hard'" in made.stderr


def test_init_runs_a_script_with_its_compile_flag_short_and_comments_out_one_that_downloads(zoo):
    _, _, text, _ = zoo
    runs = [e.run for e in parse_config(text).entrypoints if e.kind == "run"]
    assert runs == ["python bench.py --model convnet_tiny --compile --steps 5 --batch-size 2"]
    assert "load_state_dict_from_url(...) loads data or weights from outside the repository" in text
    assert "  #   run: python fetch.py\n" in text


def test_what_init_wrote_runs_as_written_and_check_finds_the_planted_breaks(zoo):
    _, _, _, entries = zoo
    assert list(entries) == ["bench", "convnet_tiny", "Speech", "Diffusion"]
    assert {b["code"] for b in entries["Speech"]["breaks"]} == {'print("block")  # the planted break'}
    for name in ("bench", "convnet_tiny"):
        assert {b["code"] for b in entries[name]["breaks"]} == {'print("conv")  # the planted break'}


def test_init_no_build_runs_nothing_and_writes_each_model_commented_to_build(zoo):
    repo, _, _, _ = zoo
    made = gbbot(repo, "init", "--no-build", "--print")
    assert made.returncode == 0, made.stderr
    assert [e.name for e in parse_config(made.stdout).entrypoints] == ["bench"]
    assert (
        "  # Not built (--no-build): init builds it to find its arguments and inputs.\n  # - name: Speech\n"
        in made.stdout
    )
    assert "(parsed, nothing was run)" in made.stdout and "building" not in made.stderr
