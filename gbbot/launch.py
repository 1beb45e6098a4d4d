"""Child-process entry for `call:` entrypoints:
`python -m gbbot.launch [--arguments JSON] module:function [RESULT]`.

Imports the function with the repository root on sys.path, calls it with the entrypoint's
arguments (gbbot/call_args.py builds them here, tensors included; none without --arguments) and,
when a RESULT path is given, saves its return value with torch.save for fix verification.
"""

from __future__ import annotations

import importlib
import os
import sys


def main(argv: list[str]) -> int:
    args: list = []
    kwargs: dict = {}
    if argv[:1] == ["--arguments"]:
        from gbbot import call_args

        args, kwargs = call_args.decode(argv[1])
        argv = argv[2:]
    target, result_path = argv[0], (argv[1] if len(argv) > 1 else None)
    module_name, _, attr = target.partition(":")
    sys.path.insert(0, os.getcwd())
    function = importlib.import_module(module_name)
    for part in attr.split("."):
        function = getattr(function, part)
    value = function(*args, **kwargs)
    if result_path:
        import torch

        torch.save(value, result_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
