"""`gbbot init`'s model candidates from source text (pure): which models, in which order, with
what the repository itself says; the sizes by name; and how init's child fills a constructor
(configuration objects, a dict of sizes, a wrapper's model), on real classes, without torch."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, replace

import pytest

from gbbot.child import try_models
from gbbot.core import model_sizes
from gbbot.starter import discover, models
from tests.unit.starter.test_template import scan_of

DIFFUSION = """\
    from torch import nn


    def Upsample(dim):
        return nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(dim, dim, 3, padding=1))


    class Unet(nn.Module):
        def __init__(self, dim, channels=3):
            super().__init__()
            self.up = Upsample(dim)
            self.mid = Block(dim)

        def forward(self, x, time):
            return x


    class Block(nn.Module):
        def forward(self, x):
            return x


    class Diffusion(nn.Module):
        def __init__(self, model, *, image_size, timesteps=1000):
            super().__init__()

        def forward(self, img):
            return img
"""
DIT = """\
    from torch import nn


    class DiT(nn.Module):
        def __init__(self, input_size=32, hidden_size=1152, depth=28, num_heads=16, patch_size=2):
            super().__init__()

        def forward(self, x, t, y):
            return x


    def DiT_XL_2(**kwargs):
        return DiT(depth=28, hidden_size=1152, patch_size=2, num_heads=16, **kwargs)


    def DiT_S_2(**kwargs):
        return DiT(depth=12, hidden_size=384, patch_size=2, num_heads=6, **kwargs)


    def DiT_S_8(**kwargs):
        return DiT(depth=12, hidden_size=384, patch_size=8, num_heads=6, **kwargs)
"""
REGISTRY = """\
    from zoo.registry import register_model


    @register_model
    def vit_base_patch16(pretrained=False, **kwargs):
        pass


    @register_model
    def test_vit(pretrained=False, **kwargs):
        pass
"""
FACTORY = "def create_model(model_name, pretrained=False, **kwargs):\n    pass\n"


def test_whole_models_exported_first_their_parts_left_out_and_a_wrapper_offered_the_others():
    files = {"diff/__init__.py": "from diff.unet import Diffusion, Unet\n", "diff/unet.py": DIFFUSION}
    found = models.candidates(scan_of(files))
    # the package's own order; Block and the Upsample builder are parts of Unet
    assert [(c.name, c.target) for c in found] == [("Diffusion", "diff:Diffusion"), ("Unet", "diff:Unet")]
    assert found[0].inner == ("diff:Unet",)  # no wrapper is another's model
    assert found[1].inner == ()


def test_the_readme_ranks_the_model_its_examples_build_first_and_gives_its_keywords(tmp_path):
    (tmp_path / "README.md").write_text(
        "# diff\n\n```python\nfrom diff import Unet\n\nmodel = Unet(dim=64, dim_mults=(1, 2))\n```\n"
        "```python\nthis block does not parse(\n```\n"
    )
    assert discover.readme_constructions(tmp_path) == (("diff.Unet", (("dim", 64),)),)
    files = {"diff/__init__.py": "from diff.unet import Diffusion, Unet\n", "diff/unet.py": DIFFUSION}
    scan = replace(scan_of(files), shown=discover.readme_constructions(tmp_path))
    found = models.candidates(scan)
    assert [c.name for c in found] == ["Unet", "Diffusion"] and dict(found[0].example) == {"dim": 64}


def test_factories_are_ranked_by_size_not_taken_at_xl():
    found = models.candidates(scan_of({"models.py": DIT}))
    assert [c.name for c in found] == ["DiT", "DiT_S_8"]  # S before XL; patch 8 before 2
    assert "the smallest of 3 such" in found[1].why


def test_a_registry_gives_its_smallest_variant_through_its_factory_before_the_classes():
    files = {"zoo/__init__.py": "from zoo.factory import create_model\n", "zoo/factory.py": FACTORY,
             "zoo/vit.py": REGISTRY, "models.py": DIT}  # fmt: skip
    found = models.candidates(scan_of(files))
    assert [(c.name, c.target, c.args, dict(c.kwargs)) for c in found[:2]] == [
        ("test_vit", "zoo:create_model", ("test_vit",), {"pretrained": False}),
        ("DiT", "models:DiT", (), {}),
    ]
    assert "registers 2 models; test_vit is its smallest by name" in found[0].why


SPEECH_CONFIG = """\
    from dataclasses import dataclass, replace


    @dataclass
    class EncoderConfig:
        n_mels: int = 80
        n_ctx: int = 1500
        name = "tiny"
"""
PERCEIVER_TEST = """\
    from perceiver.model import Perceiver


    def test_perceiver():
        small = Perceiver(num_freq_bands=3, max_freq=5.0, depth=2)
        other = Perceiver(num_freq_bands=3, max_freq=size)
"""


def test_the_repositorys_own_values_from_config_classes_yaml_and_literal_constructions():
    files = {"speech/config.py": SPEECH_CONFIG, "tests/test_model.py": PERCEIVER_TEST}
    from_yaml = (("n_mels", 16), ("workers", 4))
    assert models.settings(scan_of(files).files, from_yaml) == {
        "n_mels": 80,
        "n_ctx": 1500,
        "name": "tiny",
        "workers": 4,
    }
    perceiver = "from torch import nn\n\nclass Perceiver(nn.Module):\n    def forward(self, x):\n        return x\n"
    found = models.candidates(scan_of({**files, "perceiver/model.py": perceiver}))
    assert dict(found[0].example) == {"num_freq_bands": 3, "max_freq": 5.0, "depth": 2}


def test_a_config_file_gives_only_scalar_settings_and_a_broken_one_none():
    text = "model:\n  dim: 8\n  name: tiny\n  layers: [1, 2]\n  deep: {a: {b: {c: {d: {e: 1}}}}}\n"
    assert discover.settings_of("c.yaml", text) == [("dim", 8), ("name", "tiny")]
    assert discover.settings_of("c.json", '{"dim": 8, "3d": 1, "on": true}') == [("dim", 8), ("on", True)]
    assert discover.settings_of("c.yaml", "a: [") == []


def test_sizes_by_name_agree_at_every_scale():
    assert [model_sizes.small(n) for n in ("dim", "n_audio_state", "n_kv_head", "n_layer", "vocab_size")] == [
        32, 32, 2, 2, 100
    ]  # fmt: skip
    assert model_sizes.small("depth", 28) == 2 and model_sizes.small("depth", 1) is None  # a smaller default stays
    assert model_sizes.small("in_channels", 4) is None and model_sizes.small("channels") == 3
    assert model_sizes.small("dim_head", scale=0.5) * model_sizes.small("heads") == model_sizes.small("dim", scale=0.5)
    assert model_sizes.small("image_size", scale=0.25) % model_sizes.small("patch_size") == 0
    assert model_sizes.small("dropout", 0.1) is None
    ranked = sorted(["vit_large", "DiT_XL_2", "test_vit", "vit_tiny", "resnet50"], key=model_sizes.size_rank)
    assert ranked == ["test_vit", "vit_tiny", "resnet50", "vit_large", "DiT_XL_2"]


# --- init's child fills constructors: real classes in a module of their own --------------------


@dataclass
class Dims:
    n_mels: int
    n_audio_ctx: int
    n_audio_state: int
    n_audio_head: int
    n_vocab: int
    dropout: float = 0.1
    n_text_layer: int = 12


class Whisper:
    def __init__(self, dims: Dims):
        self.dims = dims


class GPTConfig:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    n_embd: int = 768
    block_size: int = 1024


class GPT:
    def __init__(self, config):  # no annotation: GPTConfig is found in its module
        self.config = config


class Mamba:
    def __init__(self, params):  # a dict of sizes: what it asks for, it is given
        self.width, self.depth = params["d_model"], params["n_layer"]


class Unet:
    def __init__(self, dim, channels=3):
        self.dim = dim


class Diffusion:
    def __init__(self, model, *, image_size, schedule="cosine"):
        self.model = model


class Tagger:
    def __init__(self, n_tags):
        self.n_tags = n_tags


MODULE = types.ModuleType("fill_fixture")
for cls in (Dims, Whisper, GPTConfig, GPT, Mamba, Unet, Diffusion, Tagger):
    cls.__module__ = MODULE.__name__
    setattr(MODULE, cls.__name__, cls)


def filled(cls, inner=(), settings=None, scale=1.0):
    sys.modules[MODULE.__name__] = MODULE
    context = try_models.Context(settings or {}, list(inner), scale)
    args, kwargs = try_models.arguments(cls, [], {}, context)[0]
    return kwargs, try_models._build(cls, args, kwargs, context)


def test_a_dataclass_config_is_built_small_with_its_own_fields():
    kwargs, built = filled(Whisper)
    assert kwargs == {
        "dims": {"call": "fill_fixture:Dims", "kwargs": {"n_mels": 16, "n_audio_ctx": 16, "n_audio_state": 32,
                                                         "n_audio_head": 2, "n_vocab": 100, "n_text_layer": 2}}
    }  # fmt: skip
    assert built.dims == Dims(16, 16, 32, 2, 100, 0.1, 2)
    assert filled(Whisper, scale=0.5)[0]["dims"]["kwargs"]["n_audio_state"] == 16


def test_an_unannotated_config_a_dict_of_sizes_and_a_wrappers_model():
    kwargs, built = filled(GPT)
    assert kwargs == {"config": {"call": "fill_fixture:GPTConfig", "kwargs": {"n_embd": 32, "block_size": 16}}}
    assert (built.config.n_embd, built.config.block_size) == (32, 16)
    kwargs, built = filled(Mamba)
    assert kwargs == {"params": {"d_model": 32, "n_layer": 2}} and (built.width, built.depth) == (32, 2)
    kwargs, built = filled(Diffusion, inner=["fill_fixture:Unet"])
    assert kwargs == {"model": {"call": "fill_fixture:Unet", "kwargs": {"dim": 32}}, "image_size": 16}
    assert isinstance(built.model, Unet) and built.model.dim == 32


def test_a_parameter_nothing_names_comes_from_the_repository_or_stays_unfilled():
    assert filled(Tagger, settings={"n_tags": 7})[0] == {"n_tags": 7}
    with pytest.raises(try_models.Unfilled, match="n_tags"):
        filled(Tagger)
