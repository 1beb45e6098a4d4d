"""Arguments for `call:` entrypoints: YAML literals, plus tensor specs, checked in gbbot and built
in the child.

A value is a YAML literal (null, boolean, number, string, list, mapping) or a tensor spec: a
mapping with a `tensor:` key giving the shape,

    {tensor: [2, 8], dtype: long, high: 100, seed: 0}

Floating dtypes draw from randn, integer dtypes from randint(low, high), bool from randint(0, 2);
`fill:` gives a constant tensor instead. Every tensor draws from its own generator seeded with
`seed` (default 0), so two runs see the same values. A mapping with a `call:` key is the value a
callable of the repository returns, built in the child: a constructor's configuration object or
the model a wrapper takes,

    {call: mypkg.model:ModelArgs, kwargs: {d_model: 32, n_layer: 2}}

The wire format to the child is the config's own format as JSON: `check` runs in gbbot (config
errors), `build` in the child (no eval).
"""

from __future__ import annotations

import importlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from gbbot.core.errors import ConfigError
from gbbot.core.schema import Map, Pairs, Seq, choice, each, fail, finite, identifier, integer, matching, text, that

# YAML spellings → torch dtype attribute names
DTYPES = {
    "float32": "float32", "float": "float32", "float16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "float64": "float64", "double": "float64",
    "long": "int64", "int64": "int64", "int32": "int32", "int": "int32", "bool": "bool",
}  # fmt: skip
FLOATING = ("float32", "float16", "bfloat16", "float64")
DEFAULT_HIGH = 10  # randint's exclusive upper bound when a spec gives none
MAX_DIMS = 8
MAX_ELEMENTS = 1 << 28  # 1 GiB of float32: more is a typo in a shape, not a test input
# The encoded arguments travel as one argv string to a fresh child; Linux refuses a single one over
# 128 KiB (E2BIG) at exec. Bounded here, so a config works the same warm and with --no-warm.
MAX_ENCODED_CHARS = 100_000
TARGET = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")  # module:attribute, the config's call: and model:


def _shape(path: str, key: str, value: Any) -> list[int]:
    expected = f"a shape: a list of at most {MAX_DIMS} sizes (whole numbers ≥ 0), e.g. [2, 8]"
    if not isinstance(value, list) or len(value) > MAX_DIMS or not all(integer(n) and n >= 0 for n in value):
        raise fail(path, key, expected, value)
    if math.prod(value) > MAX_ELEMENTS:
        raise ConfigError(path, key, f"a tensor of {math.prod(value)} elements (at most {MAX_ELEMENTS})")
    return value


_whole = that(integer, "a whole number")
_keyword = identifier("a Python identifier")


def _seed(path: str, key: str, value: Any) -> int:
    if _whole(path, key, value) < 0:
        raise fail(path, key, "a whole number ≥ 0", value)
    return value


def _drawn(path: str, key: str, spec: dict[str, Any]) -> None:
    """low and high bound randint: integer dtypes only, low below high, never with fill."""
    dtype = spec.get("dtype", "float32")
    for name in ("low", "high"):
        if name in spec and DTYPES[dtype] in (*FLOATING, "bool"):
            raise ConfigError(path, f"{key}.{name}", f"only for integer dtypes (long, int32); this tensor is {dtype}")
    if spec.get("low", 0) >= spec.get("high", DEFAULT_HIGH):
        raise ConfigError(path, f"{key}.high", "must be greater than low (randint draws from low to high - 1)")
    if "fill" in spec and ("low" in spec or "high" in spec):
        raise fail(path, f"{key}.fill", "a finite number or boolean, without low/high", spec["fill"])


TENSOR = Map(
    {
        "tensor": _shape,
        "dtype": choice(*DTYPES),
        "seed": _seed,
        "low": _whole,
        "high": _whole,
        "fill": that(
            lambda value: isinstance(value, bool) or finite(value), "a finite number or boolean, without low/high"
        ),
        "device": text("a device name such as cpu or cuda"),
    },
    required=("tensor",),
    rule=_drawn,
    unknown="unknown key of a tensor spec; {hint}",
    first=True,
)


def check_value(path: str, key: str, value: Any) -> Any:
    """A literal, a tensor spec or a call: value, as JSON can carry it; ConfigError naming `key` otherwise."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise fail(path, key, "a finite number", value)
        return value
    if isinstance(value, list):
        return LIST(path, key, value)
    if isinstance(value, Mapping):
        if "tensor" in value:
            return TENSOR(path, key, value)
        if "call" in value:
            return CALL(path, key, value)
        if not all(isinstance(name, str) for name in value):
            raise fail(path, key, "a mapping with string keys", value)
        return dict(
            each(path, ((name, check_value, f"{key}.{name}", item) for name, item in value.items()), first=True)
        )
    expected = (
        "a YAML literal (number, string, boolean, null, list, mapping), a tensor spec {tensor: [shape]} "
        "or {call: module:callable}"
    )
    raise fail(path, key, expected, value)


ARGS = "a list of arguments, e.g. [{tensor: [2, 8]}, 3]"
KWARGS = "a mapping of name: argument"
check_args = Seq(check_value, ARGS)
LIST = Seq(check_value, "a list", into=list)
check_kwargs = Pairs(_keyword, check_value, KWARGS)
CALL = Map(
    {
        "call": matching(TARGET, "'module:callable', e.g. mypkg.model:ModelArgs"),
        "args": Seq(check_value, ARGS, into=list),
        "kwargs": Pairs(_keyword, check_value, KWARGS, into=dict),
    },
    required=("call",),
    unknown="unknown key of a call: value; known keys: {known}",
    first=True,
)


def check_size(path: str, key: str, args: tuple[Any, ...], kwargs: tuple[tuple[str, Any], ...]) -> None:
    """The arguments, encoded, fit one argv string on every platform gbbot starts children on."""
    size = len(encode(args, kwargs))
    if size > MAX_ENCODED_CHARS:
        raise ConfigError(
            path, key, f"the arguments take {size:,} characters encoded, over the {MAX_ENCODED_CHARS:,} gbbot passes "
            "to an entrypoint: build large inputs in the function, or with a tensor spec {tensor: [shape]}",
        )  # fmt: skip


def encode(args: tuple[Any, ...], kwargs: tuple[tuple[str, Any], ...]) -> str:
    """The checked arguments as one JSON text for the child's argv."""
    return json.dumps({"args": args, "kwargs": dict(kwargs)}, sort_keys=True, allow_nan=False)


def encode_model(entrypoint: Any) -> str:
    """A `model:` entrypoint's build-compile-call recipe as one JSON text for the child's argv:
    the constructor's arguments, the method, torch.compile's options, the inputs, train or eval
    (JSON writes the tuples as lists)."""
    recipe = {
        "args": entrypoint.args,
        "kwargs": dict(entrypoint.kwargs),
        "method": entrypoint.method,
        "compile": {k: dict(v) if k == "dynamo" else v for k, v in entrypoint.compile},
        "inputs": entrypoint.inputs,
        "input_kwargs": dict(entrypoint.input_kwargs),
        "train": entrypoint.train,
    }
    return json.dumps(recipe, sort_keys=True, allow_nan=False)


# --- in the child ------------------------------------------------------------------------------


def _tensor(spec: Mapping) -> Any:
    import torch

    dtype = getattr(torch, DTYPES[spec.get("dtype", "float32")])
    shape = tuple(spec["tensor"])
    generator = torch.Generator().manual_seed(spec.get("seed", 0))
    if "fill" in spec:
        value = torch.full(shape, spec["fill"], dtype=dtype)
    elif dtype.is_floating_point:
        value = torch.randn(shape, generator=generator).to(dtype)  # drawn in float32: same values for any dtype
    elif dtype == torch.bool:
        value = torch.randint(0, 2, shape, generator=generator).bool()
    else:
        value = torch.randint(
            spec.get("low", 0), spec.get("high", DEFAULT_HIGH), shape, generator=generator, dtype=dtype
        )
    return value.to(spec["device"]) if "device" in spec else value


class MissingTarget(Exception):
    """A `call:` or `model:` target that does not exist: its module cannot be found or lacks the attribute."""


def load(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    try:
        found = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only the target's own module (or a package above it) missing means "no such target";
        # a dependency it fails to import is an error in the user's code, shown in full.
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise MissingTarget(f"{type(exc).__name__}: {exc}") from None
        raise
    for part in attr.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise MissingTarget(f"AttributeError: module {module_name!r} has no attribute {attr!r}") from None
    return found


def build(value: Any) -> Any:
    """A checked value → the Python value the callable receives (tensor specs become tensors,
    `call:` values what their callable returns)."""
    if isinstance(value, list):
        return [build(item) for item in value]
    if isinstance(value, dict) and "tensor" in value:
        return _tensor(value)
    if isinstance(value, dict) and "call" in value:
        return load(value["call"])(*build(value.get("args", [])), **build(value.get("kwargs", {})))
    if isinstance(value, dict):
        return {name: build(item) for name, item in value.items()}
    return value


def decode_model(text: str) -> dict[str, Any]:
    """The child's side of `encode_model`: the recipe with its tensor specs still specs (the
    constructor's are built before the inputs', after the seed is set)."""
    return json.loads(text)


def decode(text: str) -> tuple[list[Any], dict[str, Any]]:
    """The child's side of `encode`: (args, kwargs) ready to call with."""
    data = json.loads(text)
    return [build(a) for a in data["args"]], {name: build(v) for name, v in data["kwargs"].items()}
