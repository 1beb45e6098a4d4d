"""How many entrypoints run at once: a number, or `auto`, worked out from the machine.

`auto` is for CPU runners: one entrypoint per core, no more than the memory holds (each one is a
Python process with torch and a model in it), and always 1 where entrypoints use a GPU, since
entrypoints that share one GPU should not run side by side unless you say so.
"""

from __future__ import annotations

from dataclasses import dataclass

AUTO = "auto"
# What one entrypoint's process is taken to need: torch, Dynamo and a small model, traced. A
# larger model needs more; `--jobs N` says so.
MEMORY_PER_JOB = 2 << 30


@dataclass(frozen=True)
class Machine:
    """What `auto` is worked out from (edges/machine.py reads it)."""

    cpus: int
    available_bytes: int | None  # None: unknown
    gpu: bool  # a GPU is there, or the config asks for one


def parse(text: str) -> int | str:
    """`auto` or a whole number of at least 1; ValueError, with what was expected, otherwise."""
    if text == AUTO:
        return AUTO
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"expected a whole number of at least 1 or {AUTO!r}, got {text!r}")
    return int(text)


def auto(machine: Machine) -> int:
    """The number of entrypoints `auto` runs at once on `machine`."""
    if machine.gpu:
        return 1
    fits = machine.cpus if machine.available_bytes is None else machine.available_bytes // MEMORY_PER_JOB
    return max(1, min(machine.cpus, fits))
