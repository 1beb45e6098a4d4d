"""Child-process entry for `call:` and `model:` entrypoints:
`python -m gbbot.child.launch [--arguments JSON] module:function [RESULT]`, and
`python -m gbbot.child.launch --model RECIPE module:Class [RESULT]`.

Imports the function with the repository root on sys.path, calls it with the entrypoint's
arguments (gbbot/core/call_args.py builds them here, tensors included; none without --arguments) and,
when a RESULT path is given, saves its return value with torch.save for fix verification.
A `model:` target is built instead: the seed set to 0 first (the same weights in every run), the
class called with the constructor's arguments, `eval()` unless the recipe says train, the method
compiled with the recipe's options (`forward`: the module itself, as `torch.compile(model)`), and
called with the inputs; its return value, detached, is the result. This
module's own frames are kept out of what the user reads: a missing target is one line, and the
traceback of a target that raises starts in the user's code.

`compare_saved` is the child side of comparing two saved results: loading a pickle may run any
code the pickle names, so it happens here, in a process started like an entrypoint (same runner,
same environment allow-list), never in gbbot's own process. It prints one verdict line.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback

from gbbot.core import call_args
from gbbot.core.call_args import MissingTarget, load

# The import machinery between this launcher and the user's module: importlib.import_module, the
# frozen bootstrap and call_args (which builds the arguments), frames that say nothing about the user's code.
MACHINERY_FILES = (__file__, call_args.__file__, importlib.__file__)
FROZEN_IMPORTLIB = "<frozen importlib._bootstrap"


def _is_users(frame: traceback.FrameSummary) -> bool:
    return frame.filename not in MACHINERY_FILES and not frame.filename.startswith(FROZEN_IMPORTLIB)


def _users_only(found: traceback.TracebackException | None) -> None:
    """Drop the launcher's and the import machinery's frames, in the chained exceptions too."""
    seen: set[int] = set()
    while found is not None and id(found) not in seen:
        seen.add(id(found))
        found.stack = traceback.StackSummary.from_list([f for f in found.stack if _is_users(f)])
        _users_only(found.__cause__)
        found = found.__context__


def _print_user_traceback(exc: BaseException) -> None:
    """The traceback of the user's frames only: where their code raised, or which of their imports
    failed (a module the target imports that is not installed), as if they had run it themselves."""
    shown = traceback.TracebackException.from_exception(exc)
    _users_only(shown)
    print("".join(shown.format()), end="", file=sys.stderr)


VERDICT_PREFIX = "gbbot-verdict: "
BEFORE_VARIABLE, AFTER_VARIABLE = "GBBOT_COMPARE_BEFORE", "GBBOT_COMPARE_AFTER"
REASON_CHARS = 300


MODEL_SEED = 0


class NotAModel(Exception):
    """The `model:` target built something without the method to compile."""


def build_model(target, recipe: dict):
    """The compiled callable for a `model:` recipe, and its inputs: (callable, args, kwargs)."""
    import torch

    torch.manual_seed(MODEL_SEED)
    built = target(*call_args.build(recipe["args"]), **call_args.build(recipe["kwargs"]))
    method = recipe["method"]
    if not callable(getattr(built, method, None)):
        raise NotAModel(f"{type(built).__name__} has no method {method!r} to compile")
    if isinstance(built, torch.nn.Module) and not recipe["train"]:
        built.eval()
    options = dict(recipe["compile"])
    _turn_on(options.pop("dynamo", {}))
    whole = method == "forward" and isinstance(built, torch.nn.Module)
    compiled = torch.compile(built, **options) if whole else torch.compile(getattr(built, method), **options)
    return compiled, call_args.build(recipe["inputs"]), call_args.build(recipe["input_kwargs"])


def _turn_on(settings: dict) -> None:
    """The entry's `compile: {dynamo: …}` settings, for this process (it runs this one model):
    `capture_scalar_outputs`, `capture_dynamic_output_shape_ops`, and logger methods added to
    `ignore_logging_functions` (`[warning_once]` → `logging.Logger.warning_once`, a method a
    library may have added to Logger when it was imported)."""
    import logging

    import torch._dynamo

    for name, value in settings.items():
        if name != "ignore_logging_functions":
            setattr(torch._dynamo.config, name, value)
            continue
        missing = [m for m in value if not callable(getattr(logging.Logger, m, None))]
        if missing:
            raise NotAModel(f"compile.dynamo.ignore_logging_functions: logging.Logger has no method {missing[0]!r}")
        torch._dynamo.config.ignore_logging_functions |= {getattr(logging.Logger, m) for m in value}


def _detached(value):
    """Tensors without their autograd graph, so a result in training mode saves like any other."""
    import torch
    from torch.utils import _pytree

    return _pytree.tree_map(lambda v: v.detach() if isinstance(v, torch.Tensor) else v, value)


def main(argv: list[str]) -> int:
    sys.path.insert(0, os.getcwd())
    recipe = arguments = None
    if argv[:1] == ["--model"]:
        recipe, argv = call_args.decode_model(argv[1]), argv[2:]
    elif argv[:1] == ["--arguments"]:
        arguments, argv = argv[1], argv[2:]
    target, result_path = argv[0], (argv[1] if len(argv) > 1 else None)
    try:
        found = load(target)
    except MissingTarget as exc:
        print(f"gbbot: {'call' if recipe is None else 'model'} target {target!r} not found: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # the target's module raised while importing: the user's frames
        _print_user_traceback(exc)
        return 1
    try:
        if recipe is None:
            args, kwargs = call_args.decode(arguments) if arguments else ([], {})  # a call: value imports here
            value = found(*args, **kwargs)
        else:
            compiled, args, kwargs = build_model(found, recipe)
            value = _detached(compiled(*args, **kwargs))
    except NotAModel as exc:
        print(f"gbbot: model target {target!r}: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        _print_user_traceback(exc)
        return 1
    if result_path:
        import torch

        torch.save(value, result_path)
    return 0


def _short(text: str) -> str:
    return " ".join(text.split())[:REASON_CHARS]


def difference(old: object, new: object) -> str | None:
    """Why two return values differ under torch.testing's rules (== where those do not apply)."""
    import torch

    try:
        torch.testing.assert_close(new, old, equal_nan=True)
    except AssertionError as exc:
        return _short(str(exc)) or "the returned values differ"
    except (TypeError, ValueError, NotImplementedError):
        return None if new == old else "the returned values differ"
    return None


def verdict(before: str, after: str) -> dict[str, object]:
    """{"equal": true|false|null, "reason": …}; null when the files could not be loaded or compared."""
    import torch

    try:
        old, new = (torch.load(p, map_location="cpu", weights_only=False) for p in (before, after))
        why = difference(old, new)
    except Exception as exc:  # whatever the pickle or its comparison raised: no verdict
        return {"equal": None, "reason": _short(f"{type(exc).__name__}: {exc}")}
    return {"equal": why is None, "reason": why or ""}


def compare_saved() -> None:
    """Compare the results named by the two variables; print the verdict as the last line."""
    found = verdict(os.environ[BEFORE_VARIABLE], os.environ[AFTER_VARIABLE])
    print(VERDICT_PREFIX + json.dumps(found), flush=True)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
