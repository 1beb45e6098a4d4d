"""`gbbot init`'s proposals from source text alone (pure: no torch, nothing run): the tests that
reach a compile as node ids, module-level-compile scripts with the flags a short run needs,
factories left out, and model: entrypoints for a repository that never compiles."""

from __future__ import annotations

import textwrap

import pytest

from gbbot.core.config import parse_config
from gbbot.core.errors import GbbotError
from gbbot.starter import discover, template


def scan_of(files: dict[str, str], names: tuple[str, ...] = ()) -> discover.Scan:
    facts = tuple(discover.facts_of(path, textwrap.dedent(text)) for path, text in files.items())
    every = frozenset({p.rsplit("/", 1)[-1] for p in files} | set(names))
    return discover.Scan(facts, len(files), False, len(files), every)


def proposed(files: dict[str, str], names: tuple[str, ...] = ()):
    text, chosen = template.starter(scan_of(files, names))
    return text, [(c.kind, c.target) for c in chosen], parse_config(text)


OPS = """\
    import torch


    @torch.compile
    def fused(x):
        return x.sin() + 1


    def plain(x):
        return x + 1
"""


def test_of_twenty_tests_only_the_one_reaching_a_compile_through_a_helper_is_proposed():
    plain_tests = "\n".join(
        f"def test_plain_{i}():\n    assert ops.plain(torch.ones(1)) is not None\n" for i in range(19)
    )
    tests = f"""\
import torch

from pkg import ops


def _through_helper(x):
    return ops.fused(x)


{plain_tests}

def test_fused_path():
    assert _through_helper(torch.ones(2)).shape == (2,)
"""
    _, chosen, config = proposed({"pkg/__init__.py": "", "pkg/ops.py": OPS, "tests/test_ops.py": tests})
    assert chosen == [("pytest", "tests/test_ops.py::test_fused_path")]
    assert config.entrypoints[0].pytest == ("tests/test_ops.py::test_fused_path",)


def test_a_test_reaching_a_compile_through_a_conftest_fixture_and_a_test_class_method():
    conftest = """\
        import pytest
        import torch

        from pkg.model import Net


        @pytest.fixture
        def compiled_net():
            return torch.compile(Net())
    """
    tests = """\
        from pkg.model import Net


        def test_uses_fixture(compiled_net):
            compiled_net(1)


        class TestNet:
            def _compiled(self):
                import torch
                return torch.compile(Net())

            def test_eager(self):
                Net()(1)

            def test_compiled(self):
                self._compiled()(1)
    """
    model = "import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    files = {"pkg/__init__.py": "", "pkg/model.py": model, "tests/conftest.py": conftest, "tests/test_net.py": tests}
    _, chosen, _ = proposed(files)
    assert chosen == [("pytest", "tests/test_net.py::test_uses_fixture tests/test_net.py::TestNet::test_compiled")]


def test_a_test_file_that_only_imports_a_compiling_module_is_not_proposed_whole():
    tests = "from pkg import ops\n\ndef test_plain():\n    assert ops.plain(1) == 2\n"
    with pytest.raises(GbbotError):
        proposed({"pkg/__init__.py": "", "pkg/ops.py": OPS, "tests/test_ops.py": tests})


def test_a_factory_is_not_a_call_candidate_but_the_test_calling_what_it_returns_is():
    factory = """\
        import torch


        def step(x):
            return x * 2


        def make_step():
            return torch.compile(step)
    """
    tests = "from pkg.train import make_step\n\ndef test_step():\n    assert make_step()(1) == 2\n"
    _, chosen, _ = proposed({"pkg/__init__.py": "", "pkg/train.py": factory, "tests/test_train.py": tests})
    assert chosen == [("pytest", "tests/test_train.py::test_step")]


NANO_TRAIN = """\
    import os
    import numpy as np
    import torch
    from model import GPT

    max_iters = 600000
    device = 'cuda'
    compile = True
    exec(open('configurator.py').read())

    data = np.memmap(os.path.join('data', 'train.bin'), dtype=np.uint16, mode='r')
    model = GPT()
    if compile:
        model = torch.compile(model)
    while True:
        model(data)
"""


def test_a_module_level_compile_script_without_a_main_guard_is_a_run_entry_with_short_run_flags():
    model = "import torch\n\nclass GPT(torch.nn.Module):\n    pass\n"
    text, chosen, _ = proposed({"train.py": NANO_TRAIN, "model.py": model, "configurator.py": "import sys\n"})
    assert chosen == [("run", "python train.py --max_iters=2 --device=cpu")]
    assert "train.py compiles (line 14) at module level." in text
    assert "line 11: reads train.bin, which is not in the repository" in text
    assert "np.memmap(...) loads data or weights from outside the repository" in text


def test_script_knobs_as_argparse_options_or_settings_to_lower_by_hand():
    bench = """\
        import argparse
        import torch

        steps = 1000
        parser = argparse.ArgumentParser()
        parser.add_argument("--compile", action="store_true")
        parser.add_argument("--num-steps", type=int, default=100)
        args = parser.parse_args()
        f = torch.compile(lambda x: x + 1)
        for _ in range(args.num_steps):
            f(torch.ones(1))
    """
    text, chosen, _ = proposed({"bench.py": bench, "ckpt_loader.py": "x = 1\n"})
    assert chosen == [("run", "python bench.py --compile --num-steps 2")]
    assert "line 4: steps = 1000; lower it for a short run." in text


def test_a_library_module_that_compiles_at_import_is_no_script():
    lib = "import torch\n\ndef f(x):\n    return x\n\nfast_f = torch.compile(f)\nprint('loaded')\n"
    user = "from pkg.lib import fast_f\n"
    with pytest.raises(GbbotError):
        proposed({"pkg/__init__.py": "", "pkg/lib.py": lib, "pkg/user.py": user})


VIT = """\
    import torch
    from torch import nn


    class Attention(nn.Module):
        def __init__(self, dim, heads=8, dim_head=64):
            super().__init__()

        def forward(self, x):
            return x


    class ViT(nn.Module):
        def __init__(self, *, image_size, patch_size, num_classes, dim, depth, heads, mlp_dim, channels=3, dropout=0.):
            super().__init__()
            self.attn = Attention(dim, heads)

        def forward(self, img):
            return img


    class Needs(nn.Module):
        def __init__(self, config):
            super().__init__()

        def forward(self, x):
            return x
"""


def test_a_repository_without_compile_gets_model_entries_and_templates():
    text, chosen, config = proposed({"vit/__init__.py": "", "vit/vit.py": VIT})
    # the whole model, not its Attention block: a part ViT contains is no entrypoint of its own
    assert chosen == [("model", "vit.vit:ViT")]
    vit = config.entrypoints[0]
    assert dict(vit.kwargs) == {
        "image_size": 32, "patch_size": 8, "num_classes": 10, "dim": 32, "depth": 2, "heads": 2, "mlp_dim": 64
    }  # fmt: skip
    assert vit.inputs == ({"tensor": [2, 3, 32, 32]},)
    assert "  # - name: Needs\n  #   model: vit.vit:Needs\n  #   # fill in: config, forward's x\n" in text
    assert "# 1 more nn.Module classes (parts of the models above) could be model: entrypoints" in text


UNET = """\
    import torch
    from torch import nn


    class Upsample(nn.Module):
        def __init__(self, dim):
            super().__init__()

        def forward(self, x):
            return x


    class Unet(nn.Module):
        def __init__(self, dim, channels=3):
            super().__init__()
            self.up = Upsample(dim)

        def forward(self, x):
            return self.up(x)
"""

HELPER = """\
    import torch


    @torch.compile
    def normalize():
        return torch.ones(2) / 2
"""


def test_the_main_model_nothing_compiles_gets_a_model_entry_beside_a_compiled_helper():
    files = {"diffusion/__init__.py": "", "diffusion/unet.py": UNET, "diffusion/ops.py": HELPER}
    _, chosen, config = proposed(files)
    assert chosen == [("call", "diffusion.ops:normalize"), ("model", "diffusion.unet:Unet")]
    assert ("model", "diffusion.unet:Upsample") not in chosen  # a part, not the model
    assert dict(config.entrypoints[1].kwargs) == {"dim": 32}


def test_a_compiled_main_model_gets_no_second_entry():
    bench = "import torch\nfrom diffusion.unet import Unet\n\n\ndef bench():\n    return torch.compile(Unet(32))\n"
    files = {"diffusion/__init__.py": "", "diffusion/unet.py": UNET, "diffusion/ops.py": HELPER, "bench.py": bench}
    _, chosen, _ = proposed(files)
    assert ("model", "diffusion.unet:Unet") not in chosen


def test_nothing_found_shows_the_model_template():
    with pytest.raises(GbbotError) as info:
        proposed({"app.py": "import re\nre.compile('x')\n"})
    message = str(info.value)
    assert (
        "found no torch.compile call sites to run, and no nn.Module gbbot can build unaided, in 1 Python files"
        in message
    )
    template_text = message.split("\n\n", 1)[1].replace("  # ", "  ").replace("#   ", "  ")
    assert "model: mypkg.model:MyModel" in template_text


def test_files_that_cannot_hold_a_candidate_are_not_parsed():
    assert not discover.worth_parsing("pkg/util.py", b"def f():\n    return 1\n")
    assert not discover.worth_parsing("pkg/model.py", b"class M(nn.Module): ...")
    assert discover.worth_parsing("pkg/model.py", b"class M(nn.Module): ...", models=True)
    assert discover.worth_parsing("tests/test_util.py", b"def test_f(): ...")
    assert discover.worth_parsing("pkg/__init__.py", b"")


def test_a_function_returning_a_sequential_is_a_model_and_open_constructors_are_templates():
    mixer = """\
        from torch import nn


        def MLPMixer(*, image_size, channels, patch_size, dim, depth, num_classes, dropout=0.):
            return nn.Sequential(nn.Flatten(), nn.Linear(channels * image_size**2, num_classes))


        class Grouped(nn.Module):
            def __init__(self, dim, **kwargs):
                super().__init__()

            def forward(self, x):
                return x
    """
    text, chosen, config = proposed({"mixer/__init__.py": "", "mixer/mixer.py": mixer})
    assert chosen == [("model", "mixer.mixer:MLPMixer")]
    assert config.entrypoints[0].inputs == ({"tensor": [2, 3, 32, 32]},)
    assert "  #   # fill in: what its *args/**kwargs need\n" in text


def test_a_compile_option_taking_an_integer_gets_one():
    script = """\
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--compile", type=int, default=0)
        parser.add_argument("--device", type=str, default="cuda")
        args = parser.parse_args()
        device = args.device
        if __name__ == "__main__":
            torch.compile(lambda x: x)(torch.ones(1))
    """
    text, chosen, _ = proposed({"train.py": script})
    assert chosen == [("run", "python train.py --compile 1 --device cpu")]
    assert "a CPU runner needs" not in text  # device comes from the option, already set


def test_the_starter_links_gbbot_docs_not_a_path_in_the_users_repository():
    bench = (
        "import torch\n\nstep = torch.compile(lambda x: x + 1)\n\nif __name__ == '__main__':\n    step(torch.ones(2))\n"
    )
    text, chosen, _ = proposed({"bench.py": bench})
    assert chosen
    assert "# Every key: https://github.com/gbbot/gbbot/blob/main/docs/configuration.md" in text
    assert " docs/configuration.md" not in text


SPEECH = """\
    import torch
    from torch import nn


    class Encoder(nn.Module):
        def __init__(self, n_mels, n_ctx, dim=24, depth=12):
            super().__init__()

        def forward(self, x):
            return x
"""

SPEECH_CONFIG = """\
    from dataclasses import dataclass


    @dataclass
    class EncoderConfig:
        n_mels: int = 80
        n_ctx: int = 1500
        depth: int = 6
        name = "tiny"

        def scaled(self, factor: int = 2):
            local: int = 7
            return local
"""


def test_sizes_come_from_the_repositorys_config_class_and_the_inputs_from_the_constructors_defaults():
    files = {"speech/__init__.py": "", "speech/model.py": SPEECH, "speech/config.py": SPEECH_CONFIG}
    _, chosen, config = proposed(files)
    assert chosen == [("model", "speech.model:Encoder")]
    encoder = config.entrypoints[0]
    # n_mels and n_ctx as the config sets them; depth's default 12 made small; dim's 24 kept
    assert dict(encoder.kwargs) == {"n_mels": 80, "n_ctx": 1500, "depth": 2}
    assert encoder.inputs == ({"tensor": [2, 8, 24]},)


def test_sizes_nothing_names_come_from_the_repositorys_yaml_or_json_config(tmp_path):
    """The speech model without a config class: its sizes in configs/ (nested, beside keys of
    other things), found by `add_models` as `gbbot init` calls it; a code config class wins."""
    (tmp_path / "speech").mkdir()
    (tmp_path / "speech" / "__init__.py").write_text("")
    (tmp_path / "speech" / "model.py").write_text(textwrap.dedent(SPEECH))
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "tiny.yaml").write_text(
        "data: {root: /data, workers: 4}\nmodel:\n  n_mels: 16\n  n_ctx: 32\n"
    )
    (tmp_path / "package.json").write_text('{"n_mels": 999, "name": "site"}')  # later: not "config"
    (tmp_path / "configs" / "broken.yaml").write_text("model: [unclosed\n")
    scan = discover.add_models(tmp_path, discover.scan(tmp_path))
    text, chosen = template.starter(scan)
    assert [(c.kind, c.target) for c in chosen] == [("model", "speech.model:Encoder")]
    assert dict(parse_config(text).entrypoints[0].kwargs) == {"n_mels": 16, "n_ctx": 32, "depth": 2}
    (tmp_path / "speech" / "config.py").write_text(textwrap.dedent(SPEECH_CONFIG))
    scan = discover.add_models(tmp_path, discover.scan(tmp_path))
    text, _ = template.starter(scan)
    assert dict(parse_config(text).entrypoints[0].kwargs) == {"n_mels": 80, "n_ctx": 1500, "depth": 2}


def test_a_config_file_gives_only_scalar_settings_and_a_broken_one_none():
    text = "model:\n  dim: 8\n  name: tiny\n  layers: [1, 2]\n  deep: {a: {b: {c: {d: {e: 1}}}}}\n"
    assert discover.settings_of("c.yaml", text) == [("dim", 8), ("name", "tiny")]
    assert discover.settings_of("c.json", '{"dim": 8, "3d": 1, "on": true}') == [("dim", 8), ("on", True)]
    assert discover.settings_of("c.yaml", "a: [") == []
    assert discover.settings_of("c.yaml", "- just\n- a list\n") == []


def test_proposals_that_failed_when_built_are_written_commented_with_their_error():
    files = {"vit/__init__.py": "", "vit/vit.py": VIT, "diffusion/unet.py": UNET}
    scan = scan_of(files)
    text, chosen = template.starter(scan, failed={"ViT": "RuntimeError: shape '[2, 4]' is invalid"})
    assert [c.target for c in chosen] == ["diffusion.unet:Unet"]
    assert "  # Built and called once, it failed: RuntimeError: shape '[2, 4]' is invalid\n" in text
    assert "  # - name: ViT\n  #   model: vit.vit:ViT\n" in text
    assert "its model: entries were built and called once" in text
    assert [e.name for e in parse_config(text).entrypoints] == ["Unet"]
    with pytest.raises(GbbotError, match="Built and called once, it failed: KeyError"):
        template.starter(scan, failed={"ViT": "KeyError: 'x'", "Unet": "KeyError: 'x'"})


PERCEIVER = """\
    import torch
    from torch import nn


    class Perceiver(nn.Module):
        def __init__(self, *, num_freq_bands, max_freq, depth, dim=512):
            super().__init__()

        def forward(self, x):
            return x
"""

PERCEIVER_TEST = """\
    import torch
    from perceiver.model import Perceiver


    def test_perceiver():
        small = Perceiver(num_freq_bands=3, max_freq=5.0, depth=2, dim=16)
        other = Perceiver(num_freq_bands=3, max_freq=size)
        assert small(torch.randn(1, 16)).shape == (1, 16)
"""


def test_sizes_nothing_names_come_from_where_the_repository_builds_the_model_with_literals():
    files = {"perceiver/__init__.py": "", "perceiver/model.py": PERCEIVER, "tests/test_model.py": PERCEIVER_TEST}
    _, chosen, config = proposed(files)
    assert chosen == [("model", "perceiver.model:Perceiver")]
    assert dict(config.entrypoints[0].kwargs) == {"num_freq_bands": 3, "max_freq": 5.0, "depth": 2, "dim": 16}
    assert config.entrypoints[0].inputs == ({"tensor": [2, 8, 16]},)


UNET_BUILDERS = """\
    from torch import nn


    def Upsample(dim):
        return nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(dim, dim, 3, padding=1))


    def Downsample(dim):
        return nn.Sequential(nn.Conv2d(dim, dim, 4, 2, 1))


    class Unet(nn.Module):
        def __init__(self, dim, channels=3):
            super().__init__()
            self.ups = nn.ModuleList([Upsample(dim), Downsample(dim)])

        def forward(self, x):
            return x
"""


def test_block_builders_a_model_uses_are_parts_not_proposals():
    # denoising-diffusion-pytorch's shape: Upsample()/Downsample() functions return nn.Sequential
    _, chosen, _ = proposed({"diffusion/__init__.py": "", "diffusion/unet.py": UNET_BUILDERS})
    assert chosen == [("model", "diffusion.unet:Unet")]
