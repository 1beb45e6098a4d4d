"""Small sizes by a parameter's name, what a forward's argument is by its name, and how large a
model variant's name says it is. Pure: `gbbot init` ranks candidates with it, and its child
(gbbot/child/try_models.py) fills constructors and inputs with it.

Sizes agree with each other at every scale: heads (2) divide the width, `dim_head` times heads is
the width, the image side is a multiple of the patch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

# (kind, a parameter name of that kind, its size at scale 1, whether it follows the scale); first match wins
KINDS = (
    ("head_width", r"\w*(dim_head|head_dim|d_head|head_size)", 16, True),
    ("heads", r"(n_|num_)?(\w+_)?heads?|num_attention_heads", 2, False),
    ("ff_width", r"\w*(mlp_dim|ff_dim|ffn_dim|dim_feedforward|hidden_features|d_ff|intermediate_size)", 64, True),
    ("width", r"\w*dim|\w*dim_max|d_model|\w*hidden_size|n_embd|\w*width|d_embed|n_(\w+_)?state|in_features", 32, True),
    ("depth", r"\w*depth|(n_|num_)(\w+_)?layers?|layers|(n_|num_)blocks", 2, False),
    ("vocab", r"\w*vocab\w*|(n_|num_)tokens", 100, False),
    (
        "seq",
        r"\w*_ctx|\w*seq_len(gth)?|block_size|max_len|context_length|max_position_embeddings|n_positions",
        16,
        True,
    ),
    ("image", r"\w*(image_size|img_size)|input_size", 16, True),
    ("patch", r"\w*patch_size", 8, False),
    ("classes", r"(num_|n_)?classes|num_labels|out_features", 10, False),
    ("channels", r"channels|in_chans|in_channels|num_channels", 3, False),  # filled, never shrunk
    ("codes", r"codebook_size|(num_|n_)codes", 16, False),
    ("quantizers", r"(num_|n_)quantizers", 2, False),
)
UNKNOWN_INT = 16  # a required integer no kind names
MIN_SIDE = 8  # the image side and sequence length never go below one patch (8) or one window

# What a forward's argument is, by its name
INPUTS = (
    ("image", r"img|image|images|imgs|pixel_values|video|x_start"),
    ("tokens", r"tokens|idx|input_ids|ids|token_ids|text|src|tgt"),
    ("timesteps", r"t|time|times|timesteps?|noise_levels?|sigmas?"),
    ("labels", r"y|labels?|class_labels|classes|class_ids"),
    ("context", r"context|cond|conditioning|encoder_hidden_states|xa|encoder_out|memory"),
)

# A constructor parameter that takes a model: a wrapper's (`GaussianDiffusion(model, …)`, `MAE(encoder=…)`)
MODEL_PARAMS = re.compile(r"model|net|network|backbone|denoise_fn|unet|encoder|decoder|transformer|vit")

# The names of configuration classes (`GPTConfig`, `ModelArgs`, `ModelDimensions`)
CONFIG_SUFFIXES = ("Config", "Cfg", "Args", "Arguments", "Dims", "Dimensions", "Params", "Hparams", "Settings")

# Size words in model variants' names, smallest first (`test_vit`, `vit_tiny_patch16`, `DiT_S_8`)
SIZE_WORDS = ("test", "atto", "femto", "pico", "nano", "micro", "tiny|t", "mini", "small|s", "medium|m",
              "base|b", "large|l", "xl", "huge|h|xxl", "giant|g", "gigantic")  # fmt: skip
UNSIZED = SIZE_WORDS.index("base|b")
# How a constructor's literal sizes weigh in a variant's cost: width² · depth · (image / patch)²
COST = {"width": 2, "depth": 1, "image": 2, "patch": -2, "seq": 1}


def kind_of(name: str) -> str | None:
    return next((kind for kind, pattern, _, _ in KINDS if re.fullmatch(pattern, name)), None)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def size(kind: str, scale: float = 1.0) -> int:
    _, _, value, scaled = next(k for k in KINDS if k[0] == kind)
    if not scaled:
        return value if kind != "depth" or scale >= 1 else 1
    return max(MIN_SIDE if kind in ("image", "seq") else 2, int(value * scale))


REQUIRED = object()  # a parameter without a default


# Kinds a `None` default is filled for (`depth=None` that must be passed); a width left None is
# derived from another (`out_dim=None`: the input's channels)
FILLED_WHEN_NONE = frozenset({"depth", "vocab", "seq", "image", "patch"})


def small(name: str, default: object = REQUIRED, scale: float = 1.0) -> int | None:
    """The small size for a parameter: when it has none (`REQUIRED`), an integer default larger
    than the small one (channels keep theirs) or, for some kinds, None; None when its name says no
    size or its default stays."""
    kind = kind_of(name)
    if kind is None:
        return None
    value = size(kind, scale)
    larger = kind != "channels" and _is_int(default) and default > value
    if default is REQUIRED or larger or (default is None and kind in FILLED_WHEN_NONE):
        return value
    return None


def input_kind(name: str) -> str | None:
    return next((kind for kind, pattern in INPUTS if re.fullmatch(pattern, name.lower())), None)


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[_\-./]", name.lower()) if w]


def size_rank(name: str) -> int:
    """How large a variant's name says it is: its largest size word's place, `base` when none."""
    ranks = [i for word in _words(name) for i, words in enumerate(SIZE_WORDS) if word in words.split("|")]
    return max(ranks, default=UNSIZED)


def cost(literals: Iterable[tuple[str, object]]) -> float:
    """How costly the literal sizes a variant passes make it (DiT_S_8 under DiT_S_2: a larger patch)."""
    found = 1.0
    for name, value in literals:
        power = COST.get(kind_of(name) or "")
        if power and _is_int(value) and value > 0:
            found *= value**power
    return found if math.isfinite(found) else math.inf


def shared_start(one: str, other: str) -> int:
    """How many characters two names share at their start (`GPT` and `GPTConfig`: 3)."""
    return next((i for i, (a, b) in enumerate(zip(one, other, strict=False)) if a != b), min(len(one), len(other)))
