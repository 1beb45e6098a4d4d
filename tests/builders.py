"""Reports built directly from model records, for the publishing tests (no torch run needed:
what is published depends only on the report)."""

from __future__ import annotations

import hashlib

from gbbot.core.model import (
    Diff,
    EntrypointDiff,
    GraphBreak,
    Report,
)
from tests import reports as shared

HEAD_SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
BASE_SHA = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"


def fingerprint(seed: str) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:16]


def graph_break(n: int = 0, **changes: object) -> GraphBreak:
    """tests.reports.graph_break with the publishing tests' defaults: many files, distinct prints."""
    values: dict[str, object] = dict(
        fingerprint=fingerprint(f"break-{n}"),
        gb_type="Attempted to call function marked as skipped",
        file=f"model/layer_{n % 7}.py",
        line=10 + n,
        function="forward",
        code=f'print("step", {n})',
        explanation="Dynamo does not know how to trace the builtin `print`.",
        hints=("Remove the print, or use torch._higher_order_ops.print.",),
        user_stack=(),
        fix=None,
    )
    values.update(changes)
    return shared.graph_break(n, **values)


def report(
    breaks: list[GraphBreak],
    *,
    new: list[GraphBreak] | None = None,
    fixed: list[GraphBreak] = (),
    commit: str = HEAD_SHA,
    entrypoint: str = "train-step",
) -> Report:
    """A report of one entrypoint; with `new` given (a subset of `breaks`), a diff against a base
    where the other breaks persist and `fixed` were fixed."""
    entry = shared.entrypoint(entrypoint, breaks, frames_skipped=0)
    diff = None
    if new is not None:
        new_fps = tuple(b.fingerprint for b in new)
        persisting = tuple(b.fingerprint for b in breaks if b.fingerprint not in new_fps)
        fixed_fps = tuple(b.fingerprint for b in fixed)
        diff = Diff(
            base_ref="main",
            base_sha=BASE_SHA,
            new=new_fps,
            fixed=fixed_fps,
            persisting=persisting,
            entrypoints=(EntrypointDiff(entrypoint, new_fps, fixed_fps, persisting, graph_delta=len(new)),),
            fixed_breaks=tuple(fixed),
        )
    return shared.report(entry, commit=commit, diff=diff)
