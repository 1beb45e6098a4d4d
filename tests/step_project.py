"""The smallest project the end-to-end tests of the action use: one `call:` entrypoint that
compiles a two-line function, and that function with one more line (a graph break) added."""

from __future__ import annotations

CONFIG = """\
version: 1
entrypoints:
  - name: step
    call: model:step
mode: fast
fail_on: new
"""
MODEL = """\
import torch


def f(x):
    x = x + 1
    return x * 2


def step():
    return torch.compile(f)(torch.ones(3))
"""


def with_line(line: str) -> str:
    """MODEL with `line` added to the compiled function, after its first statement."""
    return MODEL.replace("    x = x + 1\n", f"    x = x + 1\n    {line}\n")
