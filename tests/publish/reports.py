"""Reports built directly from model records, for the publishing tests (no torch run needed:
what is published depends only on the report)."""

from __future__ import annotations

import hashlib
from dataclasses import replace

from gbbot.model import (
    Category,
    Diff,
    EntrypointDiff,
    EntrypointReport,
    GraphBreak,
    Mode,
    Origin,
    Report,
    Status,
    Tool,
)

HEAD_SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
BASE_SHA = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"


def fingerprint(seed: str) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:16]


def graph_break(n: int = 0, **changes: object) -> GraphBreak:
    brk = GraphBreak(
        fingerprint=fingerprint(f"break-{n}"),
        gb_id="GB0059",
        gb_type="Attempted to call function marked as skipped",
        category=Category.SUPPORTABLE,
        origin=Origin.USER,
        file=f"model/layer_{n % 7}.py",
        line=10 + n,
        function="forward",
        code=f'print("step", {n})',
        explanation="Dynamo does not know how to trace the builtin `print`.",
        hints=("Remove the print, or use torch._higher_order_ops.print.",),
        doc_url="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html",
        frame_skipped=False,
        in_loop=False,
        count=1,
        caused=(),
        user_stack=(),
    )
    return replace(brk, **changes)


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
    entry = EntrypointReport(entrypoint, Status.OK, 0, 1.5, len(breaks) + 1, sum(b.count for b in breaks), 0, tuple(breaks))
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
    return Report(Tool("gbbot", "0.1.0"), "2.13.0+cpu", Mode.FAST, commit, (entry,), diff)
