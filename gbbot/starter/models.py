"""`model:` candidates for a repository that never compiles: its nn.Module classes, with small
constructor arguments and inputs guessed from the parameters' names. Pure, over discover's facts.

A class is proposed when every required parameter of its constructor and of its forward has a
name this module knows how to fill (`dim`, `depth`, `heads`, `image_size`, `vocab_size`, `img`,
`tokens`, `x` …), or that a `*Config` class of the repository sets (`n_mels: int = 80`) or one
of its YAML or JSON files (`configs/model.yaml`'s `n_mels: 80`), or that
the repository itself passes as literals where it builds the class (a test's `Perceiver(
num_freq_bands=3, max_freq=5.0)`: then those keywords as written); known sizes are small, for a
CPU run. Settings with defaults are kept, except known
sizes larger than these, which are made small too, together (heads must divide dim); the inputs'
shapes follow the sizes the model is built with, its defaults included. Any other class is a commented
template with the parameters left to fill in. Models no other class uses (the whole networks) come
first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gbbot.starter.discover import ClassFacts, FileFacts, Function, Param

MODULE_BASES = frozenset({"nn.Module", "torch.nn.Module", "Module"})
# Small sizes by constructor parameter name: consistent with each other (heads * dim_head = dim).
DIMS = ("dim", "d_model", "hidden_size", "hidden_dim", "embed_dim", "n_embd", "width", "emb_dim", "in_features",
        "in_dim", "input_dim", "d_embed", "embedding_dim")  # fmt: skip
SIZES = {
    **dict.fromkeys(DIMS, 32),
    **dict.fromkeys(("depth", "n_layer", "n_layers", "num_layers", "layers", "num_blocks"), 2),
    **dict.fromkeys(("heads", "n_head", "n_heads", "num_heads", "num_attention_heads"), 2),
    **dict.fromkeys(("dim_head", "head_dim"), 16),
    **dict.fromkeys(("mlp_dim", "ff_dim", "dim_feedforward", "hidden_features", "d_ff", "intermediate_size"), 64),
    **dict.fromkeys(("image_size", "img_size"), 32),
    **dict.fromkeys(("patch_size",), 8),
    **dict.fromkeys(("num_classes", "n_classes", "out_features", "out_dim", "output_dim", "num_labels"), 10),
    **dict.fromkeys(("vocab_size", "num_tokens", "n_vocab", "vocab"), 100),
    **dict.fromkeys(
        ("max_seq_len", "block_size", "seq_len", "max_len", "context_length", "max_position_embeddings"), 16
    ),
    **dict.fromkeys(("channels", "in_chans", "in_channels", "num_channels"), 3),
    **dict.fromkeys(("codebook_size", "num_codes", "n_codes"), 16),
    **dict.fromkeys(("num_quantizers", "n_quantizers"), 2),
}  # fmt: skip
IMAGE_INPUTS = frozenset({"img", "image", "images", "imgs", "pixel_values", "video"})
TOKEN_INPUTS = frozenset({"tokens", "idx", "input_ids", "ids", "token_ids", "src", "text"})
FEATURE_INPUTS = frozenset({"x", "input", "inputs", "hidden_states", "h", "features", "embeddings", "emb"})
BATCH, LENGTH = 2, 8
MAX_PROPOSED = 5  # models run in a starter config; the rest are listed


@dataclass(frozen=True)
class ModelPlan:
    name: str
    target: str  # module:Class
    kwargs: dict  # constructor keyword arguments
    inputs: list  # forward's positional inputs (tensor specs)
    why: str
    missing: tuple[str, ...] = ()  # required parameters nothing could fill: a template, not a proposal
    root: bool = True  # no other class of the repository uses it


def _is_module(cls: ClassFacts, modules: set[str]) -> bool:
    return any(base in MODULE_BASES or base.split(".")[-1] in modules for base in cls.bases)


def module_classes(files: tuple[FileFacts, ...]) -> list[tuple[FileFacts, ClassFacts]]:
    """nn.Module subclasses, through local base classes (by name), outside tests."""
    names: set[str] = set()
    for _ in range(4):
        names |= {c.name for f in files for c in f.classes if _is_module(c, names)}
    return [(f, c) for f in files if not f.is_test for c in f.classes if c.name in names and not c.name.startswith("_")]


def _method(facts: FileFacts, cls: ClassFacts, name: str, by_class: dict[str, tuple[FileFacts, ClassFacts]]):
    """The method as defined on the class or, by name, on a local base."""
    for _ in range(4):
        found = next((f for f in facts.functions if f.name == f"{cls.name}.{name}"), None)
        if found is not None:
            return found
        base = next((by_class[b.split(".")[-1]] for b in cls.bases if b.split(".")[-1] in by_class), None)
        if base is None:
            return None
        facts, cls = base
    return None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


CONFIG_SUFFIXES = ("Config", "Cfg", "Args", "Arguments", "Dims", "Dimensions", "Params", "Hparams", "Settings")


def settings(files: tuple[FileFacts, ...], modules: set[str]) -> dict[str, object]:
    """The repository's configured sizes: the literal settings of its `*Config` classes (a
    dataclass `GPTConfig` with `n_layer: int = 12`), the first class naming one winning."""
    found: dict[str, object] = {}
    for facts in files:
        for cls in facts.classes:
            if cls.name.endswith(CONFIG_SUFFIXES) and cls.name not in modules:
                for name, value in cls.fields:
                    found.setdefault(name, value)
    return found


def examples(files: tuple[FileFacts, ...], classes: set[str]) -> dict[str, dict]:
    """How the repository itself builds each class, where it does with literal keywords (a test's
    `Perceiver(num_freq_bands=3, max_freq=5.0, depth=2)`): the call naming the most of them."""
    found: dict[str, dict] = {}
    for facts in files:
        for name, keywords in facts.constructions:
            if name in classes and len(keywords) > len(found.get(name, {})):
                found[name] = dict(keywords)
    return found


def _sized(params: tuple[Param, ...], configured: dict | None = None) -> tuple[dict, list[str]]:
    """Constructor keyword arguments, and the required parameters left unfilled: a known size by
    name (small), else the repository's configured value, else missing."""
    kwargs, missing = {}, []
    for p in params:
        larger = _is_int(p.default) and p.default > SIZES.get(p.name, 0)
        if p.name in SIZES and (p.required or larger):
            kwargs[p.name] = SIZES[p.name]
        elif p.required and configured and p.name in configured:
            kwargs[p.name] = configured[p.name]
        elif p.required:
            missing.append(p.name)
    return kwargs, missing


def _sizes(params: tuple[Param, ...], kwargs: dict) -> dict:
    """The sizes the model is built with: the constructor's integer defaults, then what is passed
    (the inputs' shapes follow them: `dim=24` makes a [2, 8, 24] input)."""
    return {**{p.name: p.default for p in params if not p.required and _is_int(p.default)}, **kwargs}


def _size(kwargs: dict, names: tuple[str, ...], default: int) -> int:
    return next((kwargs[n] for n in names if n in kwargs), default)


def _input(param: Param, kwargs: dict) -> dict | None:
    name = param.name.lower()
    channels = _size(kwargs, ("channels", "in_chans", "in_channels", "num_channels"), 3)
    side = _size(kwargs, ("image_size", "img_size"), 32)
    vocab = _size(kwargs, ("vocab_size", "num_tokens", "n_vocab", "vocab"), 0)
    image = "image_size" in kwargs or "img_size" in kwargs
    if name in IMAGE_INPUTS or (name in FEATURE_INPUTS and image):
        return {"tensor": [BATCH, channels, side, side]}
    if name in TOKEN_INPUTS or (name in FEATURE_INPUTS and vocab):
        return {"tensor": [BATCH, LENGTH], "dtype": "long", "high": vocab or 100}
    dim = _size(kwargs, DIMS, 0)
    if name in FEATURE_INPUTS and dim:
        return {"tensor": [BATCH, LENGTH, dim]}
    return None


def _inputs(forward: Function | None, kwargs: dict) -> tuple[list, list[str]]:
    if forward is None:
        return [], ["forward"]
    inputs, missing = [], []
    for p in forward.params:
        if not p.required:
            break
        spec = _input(p, kwargs)
        if spec is None or p.keyword_only:
            missing.append(f"forward's {p.name}")
        else:
            inputs.append(spec)
    return inputs, missing


def _used_names(files: tuple[FileFacts, ...], name: str) -> bool:
    """Whether another class's methods name the class or builder `name`: then it is a part (a
    Unet's `Upsample(dim)` block), not a whole model."""
    return any(
        name in {u.split(".")[-1] for u in fn.uses} and not fn.name.startswith(f"{name}.")
        for f in files
        if not f.is_test
        for fn in f.functions
        if "." in fn.name
    )


SEQUENTIAL = frozenset({"nn.Sequential", "torch.nn.Sequential", "Sequential"})
ONE_INPUT = Param("x", True)  # nn.Sequential's forward takes one input


def _builders(files: tuple[FileFacts, ...], classes: set[str]) -> list[ModelPlan]:
    """Module-level functions that return a model (nn.Sequential or one of the classes): a
    `model:` target may be any callable that returns one."""
    found = []
    for facts in files:
        if facts.is_test:
            continue
        for fn in facts.functions:
            built = {r.split(".")[-1] for r in fn.returns}
            if "." in fn.name or fn.name.startswith("_") or not (fn.returns & SEQUENTIAL or built & classes):
                continue
            kwargs, missing = _sized(fn.params)
            if fn.open_params:
                missing.append("what its *args/**kwargs need")
            forward = Function("forward", 0, False, False, False, params=(ONE_INPUT,))
            inputs, missing_inputs = _inputs(forward, _sizes(fn.params, kwargs))
            if not fn.returns & SEQUENTIAL:
                inputs, missing_inputs = [], ["forward's inputs"]
            why = f"{facts.path}:{fn.line}: {fn.name}() returns an nn.Module"
            missing = (*missing, *missing_inputs)
            root = not _used_names(files, fn.name)
            found.append(ModelPlan(fn.name, f"{facts.module}:{fn.name}", kwargs, inputs, why, missing, root))
    return found


def plans(files: tuple[FileFacts, ...], file_settings: tuple[tuple[str, object], ...] = ()) -> list[ModelPlan]:
    """Every module class and model-building function: proposals (nothing missing) and
    templates, whole models first. Sizes nothing names come from the repository's `*Config`
    classes, then from `file_settings` (its YAML and JSON files, the first file naming one winning)."""
    classes = module_classes(files)
    by_class = {c.name: (f, c) for f, c in classes}
    found = _builders(files, set(by_class))
    configured = {**dict(reversed(file_settings)), **settings(files, set(by_class))}
    built_as = examples(files, set(by_class))
    for facts, cls in classes:
        init = _method(facts, cls, "__init__", by_class)
        kwargs, missing = _sized(init.params if init else (), configured)
        example = built_as.get(cls.name, {})
        if missing and set(missing) <= set(example):  # the sizes the repository builds it with
            kwargs, missing = dict(example), []
        elif init is not None and init.open_params and not example:
            missing.append("what its *args/**kwargs need")
        elif init is not None and init.open_params:
            kwargs = {**example, **kwargs}
        sizes = _sizes(init.params if init else (), kwargs)
        inputs, missing_inputs = _inputs(_method(facts, cls, "forward", by_class), sizes)
        why = f"{facts.path}:{cls.line}: {cls.name} is an nn.Module"
        target = f"{facts.module}:{cls.name}"
        root = not _used_names(files, cls.name)
        found.append(ModelPlan(cls.name, target, kwargs, inputs, why, (*missing, *missing_inputs), root))
    return sorted(found, key=lambda p: (bool(p.missing), not p.root))


def entry_lines(plan: ModelPlan, name: str, commented: bool) -> list[str]:
    """The YAML lines of one model: entrypoint (JSON flow style is valid YAML)."""
    lines = [f"- name: {name}", f"  model: {plan.target}"]
    if plan.missing:
        lines.append(f"  # fill in: {', '.join(plan.missing)}")
    if plan.kwargs:
        lines.append(f"  kwargs: {json.dumps(plan.kwargs)}")
    if any(m.startswith("forward") for m in plan.missing):
        lines.append("  inputs: [{tensor: [2, 8]}]  # one literal or tensor spec per forward argument")
    else:
        lines.append(f"  inputs: {json.dumps(plan.inputs)}")
    prefix = "  # " if commented else "  "
    return [prefix + line for line in lines]


TEMPLATE = """\
  # - name: my-model
  #   model: mypkg.model:MyModel        # the nn.Module class to build
  #   kwargs: {dim: 32, depth: 2}        # its constructor's arguments (args: for positional ones)
  #   inputs: [{tensor: [2, 8], dtype: long, high: 100}]   # forward's arguments: literals or tensor specs
  #   # method: generate                 # another method than forward
  #   # compile: {fullgraph: false}      # torch.compile's options
"""
