"""Child-process entry for `call:` entrypoints: `python -m gbbot.launch module:function [RESULT]`.

Imports the function with the repository root on sys.path, calls it with no arguments and, when a
RESULT path is given, saves its return value with torch.save for fix verification.
"""

from __future__ import annotations

import importlib
import os
import sys


def main(argv: list[str]) -> int:
    target, result_path = argv[0], (argv[1] if len(argv) > 1 else None)
    module_name, _, attr = target.partition(":")
    sys.path.insert(0, os.getcwd())
    function = importlib.import_module(module_name)
    for part in attr.split("."):
        function = getattr(function, part)
    value = function()
    if result_path:
        import torch

        torch.save(value, result_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
