"""Reports with recompilations built from model records, for the publishing tests: a frame at the
recompile limit (new), a frame whose dtype guard keeps failing (persisting on the base), and
automatic dynamic shapes at work (info, nothing to fix)."""

from __future__ import annotations

from gbbot.analysis import recompile
from gbbot.core.model import Diff, GraphBreak, Recompilation, RecompileDiff, RecompileReason, Report
from tests import reports as shared
from tests.builders import BASE_SHA, HEAD_SHA, fingerprint

DOC = "https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html"


def reason(kind: str, **changes: object) -> RecompileReason:
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


def frame(
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
        doc_url=DOC,
    )
    values.update(changes)
    return Recompilation(**values)


AT_LIMIT = frame("repeat", 3, 8, (reason("int_argument"),), limit_hit=True)
DTYPE = frame(
    "scale",
    27,
    2,
    (reason("dtype", count=1, guard="tensor 'x' dtype mismatch. expected Float, actual Double", line=None, code=""),),
)
INFO = frame("grow", 37, 2, (reason("shape", count=1, dynamic=True, guard="tensor 'x' size mismatch at index 0"),))


def recompiled_report(
    breaks: list[GraphBreak] = (),
    recompiles: tuple[Recompilation, ...] = (INFO, DTYPE, AT_LIMIT),
    *,
    persisting: tuple[Recompilation, ...] = (DTYPE,),
    baseline: bool = True,
) -> Report:
    """One entrypoint; with a baseline, every break is new and each problem of `persisting`
    frames was on the base too, the others are new."""
    entry = shared.entrypoint("train-step", breaks, frames_skipped=0, recompiles=recompiles)
    diff = None
    if baseline:
        problems = recompile.problems(recompiles)
        old = set(recompile.problems(persisting))
        new = tuple(f for f in problems if f not in old)
        limits = {recompile.limit_fingerprint(rc) for rc in recompiles if rc.limit_hit}
        fps = tuple(b.fingerprint for b in breaks)
        diff = Diff(
            base_ref="main",
            base_sha=BASE_SHA,
            new=fps,
            fixed=(),
            persisting=(),
            entrypoints=(),
            recompiles=RecompileDiff(
                new=new,
                persisting=tuple(f for f in problems if f in old),
                new_limit=tuple(f for f in new if f in limits),
            ),
        )
    return shared.report(entry, commit=HEAD_SHA, diff=diff)
