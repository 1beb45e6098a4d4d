"""Child-process entry for `call:` entrypoints: `python -m gbbot.launch module:function [RESULT]`.

Imports the function with the repository root on sys.path, calls it with no arguments and, when a
RESULT path is given, saves its return value with torch.save for fix verification. This module's
own frames are kept out of what the user reads: a missing target is one line, and the traceback of
a target that raises starts in the user's code.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback


class MissingTarget(Exception):
    """The `call:` target does not exist: its module cannot be found or lacks the attribute."""


def load(target: str):
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


def _print_user_traceback(exc: BaseException) -> None:
    """The traceback from the first frame outside this module."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)


def main(argv: list[str]) -> int:
    target, result_path = argv[0], (argv[1] if len(argv) > 1 else None)
    sys.path.insert(0, os.getcwd())
    try:
        value = load(target)()
    except MissingTarget as exc:
        print(f"gbbot: call target {target!r} not found: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        _print_user_traceback(exc)
        return 1
    if result_path:
        import torch

        torch.save(value, result_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
