"""Reports built directly from model records, for tests of what gbbot does with a report (render,
publish, diff, fix): no torch run is needed, since those depend only on the report.

Two kinds of break: `traced_break`, one print in pkg/model.py as classify makes it from a trace
(with its user stack and fixer; the markdown golden file is made from it), and `graph_break`, the
publishing tests' many distinct breaks spread over seven files. `report_of` joins entrypoints into
a report; `report` is one entrypoint's report with a diff against the PR's base, and
`recompiled_report` the same with recompilations.
"""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

from gbbot.analysis import recompile
from gbbot.analysis import report as report_
from gbbot.core.model import (
    Category,
    Change,
    ChangeState,
    Diff,
    EntrypointDiff,
    EntrypointReport,
    Frame,
    GraphBreak,
    Mode,
    Origin,
    Recompilation,
    RecompileReason,
    Report,
    Status,
    Tool,
)

HEAD_SHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
BASE_SHA = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"
RECOMPILE_DOC = (
    "https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html"
)


def fingerprint(seed: str) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:16]


# --- breaks, entrypoints, reports --------------------------------------------------------------


def traced_break(n: int = 1, **changes) -> GraphBreak:
    """`print("step")` in pkg/model.py's Net.forward, called from train.py, as a trace gives it."""
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


def graph_break(n: int = 0, **changes: object) -> GraphBreak:
    """A traced_break with the publishing tests' defaults: many files, distinct prints."""
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
    return traced_break(n, **values)


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


def report_of(*entrypoints: EntrypointReport, **changes) -> Report:
    values = dict(
        tool=Tool("gbbot", "0.1.0"),
        torch_version="2.13.0+cpu",
        mode=Mode.FAST,
        commit="0123456789abcdef0123456789abcdef01234567",
        entrypoints=tuple(entrypoints),
    )
    values.update(changes)
    return Report(**values)


def changed(breaks: list[GraphBreak], state: ChangeState, *entrypoints: str) -> tuple[Change, ...]:
    """`breaks` (each once) in `state`, in `entrypoints`."""
    return tuple(Change(b, state, entrypoints) for b in {b.fingerprint: b for b in breaks}.values())


def listed(diff: Diff, entrypoint: str | None = None) -> SimpleNamespace:
    """A diff's fingerprints per state, over all its entrypoints or in one's own comparison, as the
    report's JSON lists them (`.new`, `.fixed`, `.hidden_by`, …; `.recompiles.new`, …)."""
    data = report_.to_json(report_of(diff=diff))["diff"]
    if entrypoint is not None:
        data = next(e for e in data["entrypoints"] if e["name"] == entrypoint)
    lists = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in STATE_NAMES}
    return SimpleNamespace(**lists, hidden_by=data.get("hidden_by"), recompiles=states(diff.recompiles or ()))


STATE_NAMES = {s.value for s in ChangeState}


def states(recompiles: tuple[tuple[str, ChangeState], ...]) -> SimpleNamespace:
    """Recompilation problems' fingerprints per state (`.new`, `.by_new_break`, …)."""
    return SimpleNamespace(**{s.value: tuple(f for f, state in recompiles if state is s) for s in ChangeState})


def report(
    breaks: list[GraphBreak],
    *,
    new: list[GraphBreak] | None = None,
    fixed: list[GraphBreak] = (),
    commit: str = HEAD_SHA,
    name: str = "train-step",
) -> Report:
    """A report of entrypoint `name`; with `new` given (a subset of `breaks`), a diff against a
    base where the other breaks persist and `fixed` were fixed."""
    entry = entrypoint(name, breaks, frames_skipped=0)
    diff = None
    if new is not None:
        new_fps = {b.fingerprint for b in new}
        changes = (
            *changed(new, ChangeState.NEW, name),
            *changed(list(fixed), ChangeState.FIXED, name),
            *changed([b for b in breaks if b.fingerprint not in new_fps], ChangeState.PERSISTING, name),
        )
        diff = Diff(
            base_ref="main",
            base_sha=BASE_SHA,
            changes=changes,
            entrypoints=(EntrypointDiff(name, graph_delta=len(new)),),
            compared=changes,
        )
    return report_of(entry, commit=commit, diff=diff)


# --- recompilations: a frame at the recompile limit (new), a frame whose dtype guard keeps failing
# (persisting on the base), and automatic dynamic shapes at work (info, nothing to fix) ----------


def recompile_reason(kind: str, **changes: object) -> RecompileReason:
    values: dict[str, object] = dict(
        fingerprint=fingerprint(f"reason-{kind}"),
        kind=kind,
        guard="n == 1",
        count=7,
        dynamic=False,
        cause=f"Cause of {kind}.",
        advice=f"Advice for {kind}.",
        line=5,
        code="for _ in range(n):",
    )
    values.update(changes)
    return RecompileReason(**values)


def recompiled_frame(
    function: str, line: int, compilations: int, reasons: tuple[RecompileReason, ...], **changes: object
) -> Recompilation:
    values: dict[str, object] = dict(
        fingerprint=fingerprint(f"frame-{function}"),
        file="model/loops.py",
        line=line,
        function=function,
        compilations=compilations,
        limit_hit=False,
        reasons=reasons,
        doc_url=RECOMPILE_DOC,
    )
    values.update(changes)
    return Recompilation(**values)


AT_LIMIT = recompiled_frame("repeat", 3, 8, (recompile_reason("int_argument"),), limit_hit=True)
DTYPE = recompiled_frame(
    "scale",
    27,
    2,
    (
        recompile_reason(
            "dtype", count=1, guard="tensor 'x' dtype mismatch. expected Float, actual Double", line=None, code=""
        ),
    ),
)
INFO = recompiled_frame(
    "grow", 37, 2, (recompile_reason("shape", count=1, dynamic=True, guard="tensor 'x' size mismatch at index 0"),)
)


def recompiled_report(
    breaks: list[GraphBreak] = (),
    recompiles: tuple[Recompilation, ...] = (INFO, DTYPE, AT_LIMIT),
    *,
    persisting: tuple[Recompilation, ...] = (DTYPE,),
    baseline: bool = True,
) -> Report:
    """One entrypoint; with a baseline, every break is new and each problem of `persisting`
    frames was on the base too, the others are new."""
    entry = entrypoint("train-step", breaks, frames_skipped=0, recompiles=recompiles)
    diff = None
    if baseline:
        problems = recompile.problems(recompiles)
        old = set(recompile.problems(persisting))
        new = tuple(f for f in problems if f not in old)
        limits = {recompile.limit_fingerprint(rc) for rc in recompiles if rc.limit_hit}
        diff = Diff(
            base_ref="main",
            base_sha=BASE_SHA,
            changes=changed(breaks, ChangeState.NEW),
            entrypoints=(),
            recompiles=(
                *((f, ChangeState.NEW) for f in new),
                *((f, ChangeState.PERSISTING) for f in problems if f in old),
                *((f, ChangeState.NEW_LIMIT) for f in new if f in limits),
            ),
        )
    return report_of(entry, commit=HEAD_SHA, diff=diff)
