"""`gbbot init`'s child: each model candidate built small and called once, uncompiled, with the
arguments found here, and what ran written back as config values.

    python -m gbbot.child.try_models REQUEST RESULTS

REQUEST is a JSON file: `{"candidates": [{"name", "target", "args", "kwargs", "example", "inner"}],
"settings": {name: value}, "seconds": CPU seconds per candidate and scale, "wanted": how many that
run are enough}`. One JSON line per candidate tried is appended to RESULTS: `{"name", "ok": true,
"args", "kwargs", "inputs", "input_kwargs"}`, or `"ok": false` with the `error`'s one line and
the arguments last tried.

The constructor: its required parameters and its integer sizes from gbbot/core/model_sizes.py
(by name), a required one no name tells from the repository's own values (`settings`,
`example`), a configuration object (a dataclass, a `*Config`/`*Args` class, an annotated class,
a `dict` filled key by key as the constructor asks) built the same way, and a wrapper's model
(`model`, `net`, `encoder`, or an `nn.Module` annotation) from the repository's other models
(`inner`). A smaller scale is tried when one runs out of time. The inputs: from the model's first
layer (`Embedding`: ids below its vocabulary; `Conv1d`/`Conv2d`: its channels and a few lengths
and sides, the model's own `image_size` first; `Linear`: its features) and from forward's
parameter names (timesteps, labels, conditioning); parameters with defaults keep them.
"""

from __future__ import annotations

import builtins
import inspect
import itertools
import json
import os
import re
import signal
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any

from gbbot.core import call_args
from gbbot.core import model_sizes as sizes

SCALES = (1.0, 0.5)
BATCH, LENGTH = 2, 8
MAX_VARIANTS = 3  # constructor argument sets per scale (a wrapper's model choices)
MAX_CALLS = 16  # input sets per built model
MAX_KEYS = 40  # keys a dict of sizes is given, one per KeyError
MAX_DEPTH = 2  # configuration objects and inner models nest no deeper
MAX_LAYERS = 50  # modules looked at for sizes (`image_size`, `num_classes`)
ERROR_CHARS = 200
CONFIG_PARAMS = re.compile(r"config|cfg|conf|args|dims|params|hparams|\w+_(config|cfg|args)")
FIRST_LAYERS = ("Embedding", "Conv1d", "Conv2d", "Conv3d", "Linear")  # of torch.nn
Arguments = tuple[list, dict]


class Unfilled(Exception):
    """A required parameter nothing fills: the candidate is a template."""


class TimeUp(BaseException):  # not an Exception: the model's own `except Exception` does not swallow it
    """The candidate's time at one scale ran out."""


@dataclass
class Context:
    settings: dict  # the repository's own values by parameter name
    inner: list  # module:Class targets a wrapper's model parameter may take
    scale: float = 1.0
    example: dict = field(default_factory=dict)  # the keywords the repository builds the candidate with
    depth: int = 0
    dicts: list = field(default_factory=list)  # the dicts of sizes handed out, filled on KeyError

    def deeper(self) -> Context:
        return Context(self.settings, self.inner, self.scale, {}, self.depth + 1, self.dicts)


def _signature(target: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(target)
    except (TypeError, ValueError):
        return None


def _resolved(owner: Any, annotation: Any) -> Any:
    """An annotation as the object it names: strings (`from __future__ import annotations`) are
    looked up in the owner's module, never evaluated."""
    if annotation is inspect.Parameter.empty:
        return None
    if not isinstance(annotation, str):
        return annotation
    module = vars(sys.modules.get(getattr(owner, "__module__", ""), builtins))
    head, *rest = annotation.split(".")
    found = module.get(head, getattr(builtins, head, None))
    for part in rest:
        found = getattr(found, part, None)
    return found


def _qualified(obj: Any) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def _is_module_class(obj: Any) -> bool:
    return inspect.isclass(obj) and any(
        c.__name__ == "Module" and c.__module__.startswith("torch.nn") for c in inspect.getmro(obj)
    )


def _config_class(owner: Any) -> Any:
    """The configuration class of the owner's module: the one sharing most of its name's start
    (`GPTConfig` for `GPT`), or the only one there is."""
    module = sys.modules.get(getattr(owner, "__module__", ""))
    found = [
        c for c in (vars(module).values() if module else ())
        if inspect.isclass(c) and c.__module__ == module.__name__ and c.__name__.endswith(sizes.CONFIG_SUFFIXES)
    ]  # fmt: skip
    name = getattr(owner, "__name__", "")
    best = max(found, key=lambda c: sizes.shared_start(c.__name__, name), default=None)
    return best if len(found) == 1 or (best and sizes.shared_start(best.__name__, name)) else None


def _object(target: str, cls: Any, context: Context) -> dict:
    """`cls` built small as a `call:` value (a configuration object, an inner model)."""
    args, kwargs = arguments(cls, [], {}, context.deeper())[0]
    return {"call": target, **({"args": args} if args else {}), "kwargs": kwargs}


def _models(owner: Any, annotation: Any, context: Context) -> list:
    """A wrapper's model: the annotated class (not nn.Module itself), else the repository's others."""
    annotated = [_qualified(annotation)] if _is_module_class(annotation) and annotation.__name__ != "Module" else []
    found = []
    for target in [*annotated, *context.inner]:
        if target == _qualified(owner) or context.depth >= MAX_DEPTH:
            continue
        try:
            found.append(_object(target, call_args.load(target), context))
        except Exception:  # an inner model that cannot be filled or imported: the next one
            continue
    return found[:MAX_VARIANTS]


def _values(owner: Any, param: inspect.Parameter, context: Context) -> list | None:
    """The values to try for one parameter ([]: keep its default; None: nothing fills it)."""
    required = param.default is param.empty
    annotation = _resolved(owner, param.annotation)
    built = inspect.isclass(annotation) and annotation not in (int, float, bool, str, dict, list, tuple, object)
    small = None if built else sizes.small(param.name, sizes.REQUIRED if required else param.default, context.scale)
    if small is not None:
        return [small]
    if not required:
        return []
    if param.name in context.settings:
        return [context.settings[param.name]]
    simple = {int: max(2, int(sizes.UNKNOWN_INT * context.scale)), float: 0.1, bool: False}
    if annotation in simple:
        return [simple[annotation]]
    if _is_module_class(annotation) or (not built and sizes.MODEL_PARAMS.fullmatch(param.name)):
        return _models(owner, annotation, context) or None
    if context.depth >= MAX_DEPTH:
        return None
    if built:
        return [_object(_qualified(annotation), annotation, context)]
    if CONFIG_PARAMS.fullmatch(param.name):
        config = _config_class(owner)
        if config is not None:
            return [_object(_qualified(config), config, context)]
        context.dicts.append({})
        return [context.dicts[-1]]
    return None


def _parameters(target: Any, example: dict) -> list[inspect.Parameter] | None:
    """The constructor's parameters; when it takes `**kwargs`, also those of the base class it
    hands them to (`Decoder(**kwargs)` → `AttentionLayers(dim, depth, …)`), a configuration
    class's annotated attributes (`n_layer: int = 32`), and the keywords the repository passes it."""
    signature = _signature(target)
    if signature is None:
        return None
    params = list(signature.parameters.values())
    if not inspect.isclass(target) or not any(p.kind == p.VAR_KEYWORD for p in params):
        return params
    for base in inspect.getmro(target)[1:]:
        inherited = _signature(vars(base).get("__init__"))
        named = [
            p
            for p in (inherited.parameters.values() if inherited else ())
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        if len(named) > 1:  # more than self
            params += named[1:]
            break
    if not _is_module_class(target):
        params += [
            inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=getattr(target, n, inspect.Parameter.empty))
            for n in vars(target).get("__annotations__", {}) if not n.startswith("_")
        ]  # fmt: skip
    params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in example]  # filled from the example
    seen: set[str] = set()
    return [p for p in params if not (p.name in seen or seen.add(p.name))]


def arguments(target: Any, args: list, kwargs: dict, context: Context) -> list[Arguments]:
    """The constructor argument sets to try: the given ones, then each parameter filled."""
    params = _parameters(target, context.example if context.depth == 0 else {})
    if params is None:
        return [(list(args), dict(kwargs))]
    named, options = [], []
    for param in params[len(args) :]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name in kwargs:
            continue
        values = _values(target, param, context)
        if values is None:
            raise Unfilled(param.name)
        if values:
            named.append(param)
            options.append(values)
    by_position = {inspect.Parameter.POSITIONAL_ONLY}
    return [([*args, *a], {**kwargs, **k}) for a, k in _combinations(named, options, by_position, MAX_VARIANTS)]


def _combinations(params: list, options: list, by_position: set, most: int) -> list[Arguments]:
    """The first `most` choices of one option per parameter, as (positional, keyword) arguments:
    those of a kind in `by_position` by position."""
    found = []
    for chosen in itertools.islice(itertools.product(*options), most):
        pairs = list(zip(params, chosen, strict=True))
        found.append(
            ([v for p, v in pairs if p.kind in by_position], {p.name: v for p, v in pairs if p.kind not in by_position})
        )
    return found


def _build(target: Any, args: list, kwargs: dict, context: Context) -> Any:
    """The model, a dict of sizes given each key its constructor asks for (KeyError) in turn."""
    torch = sys.modules.get("torch")  # imported by the model's module; a model without it needs no seed
    for _ in range(MAX_KEYS):
        if torch is not None:
            torch.manual_seed(0)  # as `gbbot check` builds it
        try:
            return target(*call_args.build(args), **call_args.build(kwargs))
        except KeyError as exc:
            key = exc.args[0] if exc.args else None
            if not context.dicts or not isinstance(key, str) or key in context.dicts[-1]:
                raise
            small = sizes.small(key, sizes.REQUIRED, context.scale)
            context.dicts[-1][key] = context.settings.get(key, small if small is not None else sizes.UNKNOWN_INT)
    raise RuntimeError(f"its dict of sizes was asked for more than {MAX_KEYS} keys")


# --- inputs -------------------------------------------------------------------------------------


def _flat(value: Any) -> dict:
    """Every integer setting a constructor was given, config objects and inner models included."""
    found = {}
    if isinstance(value, dict):
        for name, item in value.items():
            found.update(_flat(item) if isinstance(item, dict | list) else {name: item})
    elif isinstance(value, list):
        for item in value:
            found.update(_flat(item))
    return {k: v for k, v in found.items() if isinstance(v, int) and not isinstance(v, bool)}


def _known(model: Any, kwargs: dict) -> dict[str, list[int]]:
    """The sizes the model was built with, by kind: the constructor's (config objects and inner
    models included), then its modules' attributes (`self.image_size`, `self.channels`)."""
    found: dict[str, list[int]] = {}
    attributes = [(k, v) for m in itertools.islice(model.modules(), MAX_LAYERS) for k, v in vars(m).items()]
    for name, value in [*_flat(kwargs).items(), *attributes]:
        value = value[-1] if isinstance(value, tuple | list) and value else value
        kind = sizes.kind_of(name) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
        if kind is not None and value not in found.setdefault(kind, []):
            found[kind].append(value)
    return found


def _ids(high: int, length: int) -> dict:
    return {"tensor": [BATCH, length], "dtype": "long", "high": high}


def _layer(model: Any) -> tuple[str | None, Any]:
    """The model's first layer of a kind that says what its input is."""
    import torch

    for module in model.modules():
        kind = next((k for k in FIRST_LAYERS if isinstance(module, getattr(torch.nn, k))), None)
        if kind is not None:
            return kind, module
    return None, None


def _main_inputs(name: str, model: Any, known: dict[str, list[int]]) -> list:
    """The first argument: what the first layer takes, then what the name and sizes say."""
    length = min([LENGTH, *known.get("seq", [])])
    lengths = [*known.get("seq", []), *(2 * n for n in known.get("seq", [])), LENGTH, 16, 32, 64]
    sides, channels = [*known.get("image", []), 16, 32, 64], known.get("channels", [3])[0]
    kind, layer = _layer(model)
    found = []
    if kind == "Embedding":
        found.append(_ids(layer.num_embeddings, length))
    elif kind == "Conv1d":
        found += [{"tensor": [BATCH, layer.in_channels, n]} for n in lengths]
    elif kind in ("Conv2d", "Conv3d"):
        frames = [4] if kind == "Conv3d" else []
        found += [{"tensor": [BATCH, layer.in_channels, *frames, s, s]} for s in sides]
    elif kind == "Linear":
        found += [{"tensor": [BATCH, length, layer.in_features]}, {"tensor": [BATCH, layer.in_features]}]
    by_name = sizes.input_kind(name)
    if by_name == "image" or "image" in known:
        found += [{"tensor": [BATCH, channels, s, s]} for s in sides]
    if "seq" in known and "channels" in known:
        found += [{"tensor": [BATCH, channels, n]} for n in known["seq"]]
    if by_name == "tokens":
        found.append(_ids(known.get("vocab", [100])[0], length))
    found.append({"tensor": [BATCH, length, known.get("width", [32])[0]]})
    return list({json.dumps(f, sort_keys=True): f for f in found}.values())


def _other_inputs(name: str, model: Any, known: dict[str, list[int]]) -> list:
    """A later argument, by its name: timesteps, labels, ids, conditioning, else features."""
    import torch

    kind = sizes.input_kind(name)
    length, width = min([LENGTH, *known.get("seq", [])]), known.get("width", [32])[0]
    if kind == "timesteps":
        return [{"tensor": [BATCH]}, {"tensor": [BATCH], "dtype": "long", "high": 10}]
    if kind == "labels":
        return [{"tensor": [BATCH], "dtype": "long", "high": known.get("classes", [2])[0]}]
    if kind == "tokens":
        vocab = [m.num_embeddings for m in model.modules() if isinstance(m, torch.nn.Embedding)]
        return [_ids(min(vocab or [100]), length)]
    return [{"tensor": [BATCH, length, width]}, {"tensor": [BATCH, width]}]


def inputs(model: Any, kwargs: dict) -> list[Arguments]:
    """The input sets to try for `model.forward`: (positional, keyword) arguments."""
    signature = _signature(model.forward)
    params = [
        p for p in (signature.parameters.values() if signature else ())
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]  # fmt: skip
    known = _known(model, kwargs)
    options = [
        _main_inputs(p.name, model, known) if i == 0 else _other_inputs(p.name, model, known)
        for i, p in enumerate(params)
    ]
    by_position = {inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD}
    return _combinations(params, options, by_position, MAX_CALLS)


# --- one candidate ------------------------------------------------------------------------------


def _line(exc: BaseException) -> str:
    """`ValueError: …`; for an error without a message (a bare assert), where it was raised."""
    said = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {said[0]}" if said else type(exc).__name__
    where = traceback.extract_tb(exc.__traceback__)[-1:] if not said else []
    for frame in where:
        path = os.path.relpath(frame.filename)
        path = os.path.basename(path) if path.startswith("..") else path
        line += f" at {path}:{frame.lineno}: {(frame.line or '').strip()}"
    return line if len(line) <= ERROR_CHARS else line[: ERROR_CHARS - 1] + "…"


def _on_alarm(signum: int, frame: Any) -> None:
    raise TimeUp


def _at_scale(target: Any, candidate: dict, context: Context) -> dict:
    """The first constructor and input sets that ran at one scale: its result fields; else the
    error of the first model that built but failed when called, or of the first that did not build."""
    called = built = None
    for args, kwargs in arguments(target, candidate["args"], candidate["kwargs"], context):
        try:
            model = _build(target, args, kwargs, context)
            model.eval()
            tried = inputs(model, kwargs)
        except Exception as exc:
            built = built or {"error": _line(exc), "args": args, "kwargs": kwargs}
            continue
        for found in tried:
            try:
                model(*call_args.build(found[0]), **call_args.build(found[1]))
            except Exception as exc:
                called = called or {"error": _line(exc), "args": args, "kwargs": kwargs}
                continue
            return {"ok": True, "args": args, "kwargs": kwargs, "inputs": found[0], "input_kwargs": found[1]}
    return {"ok": False, **(called or built or {"error": "it built nothing"})}


def attempt(candidate: dict, settings: dict, seconds: float) -> dict:
    """One candidate tried at each scale, each under `seconds`: its result line."""
    name, first = candidate["name"], None
    try:
        target = call_args.load(candidate["target"])
    except Exception as exc:
        return {"name": name, "ok": False, "error": _line(exc)}
    for scale in SCALES:
        example = candidate.get("example", {})
        context = Context({**settings, **example}, candidate.get("inner", []), scale, example)
        signal.setitimer(signal.ITIMER_PROF, seconds)
        try:
            result = _at_scale(target, candidate, context)
        except Unfilled as exc:
            return {"name": name, "ok": False, "error": f"nothing says what to pass as {exc}"}
        except TimeUp:  # a smaller size may be quicker
            first = first or {"ok": False, "error": f"building and calling it took longer than {seconds:.0f}s of CPU"}
            continue
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        return {"name": name, **(result if result["ok"] else first or result)}
    return {"name": name, **first}


def main(argv: list[str]) -> int:
    with open(argv[0], encoding="utf-8") as asked:
        request = json.load(asked)
    sys.path.insert(0, os.getcwd())
    signal.signal(signal.SIGPROF, _on_alarm)
    wanted = request["wanted"]
    for candidate in request["candidates"]:
        result = attempt(candidate, request["settings"], request["seconds"])
        with open(argv[1], "a", encoding="utf-8") as out:
            out.write(json.dumps(result) + "\n")
        wanted -= result["ok"]
        if wanted <= 0:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
