"""Hand-made Reports for renderer tests (no torch needed)."""

from __future__ import annotations

from gbbot.core.model import Category, EntrypointReport, Frame, GraphBreak, Mode, Origin, Report, Status, Tool


def graph_break(n: int = 1, **changes) -> GraphBreak:
    values = dict(
        fingerprint=f"{n:016x}",
        gb_id="GB0059",
        gb_type="Failed to trace builtin operator",
        category=Category.SUPPORTABLE,
        origin=Origin.USER,
        file="pkg/model.py",
        line=10 + n,
        function="Net.forward",
        code='print("step")',
        explanation="Dynamo does not know how to trace builtin operator `print`.",
        hints=("Consider using `torch._dynamo.config.reorderable_logging_functions`.",),
        doc_url="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html",
        frame_skipped=False,
        in_loop=False,
        count=1,
        caused=(),
        user_stack=(
            Frame("train.py", 3, "<module>", "main()"),
            Frame("pkg/model.py", 10 + n, "forward", 'print("step")'),
        ),
        fix="print",
    )
    values.update(changes)
    return GraphBreak(**values)


def entrypoint(name: str = "train", breaks=(), **changes) -> EntrypointReport:
    values = dict(
        name=name,
        status=Status.OK,
        exit_code=0,
        duration_s=1.5,
        graph_count=len(breaks) + 1,
        break_count=sum(b.count for b in breaks),
        frames_skipped=sum(b.frame_skipped for b in breaks),
        breaks=tuple(breaks),
        error=None,
    )
    values.update(changes)
    return EntrypointReport(**values)


def report(*entrypoints: EntrypointReport, **changes) -> Report:
    values = dict(
        tool=Tool("gbbot", "0.1.0"),
        torch_version="2.13.0+cpu",
        mode=Mode.FAST,
        commit="0123456789abcdef0123456789abcdef01234567",
        entrypoints=tuple(entrypoints),
    )
    values.update(changes)
    return Report(**values)
