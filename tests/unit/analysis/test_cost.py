"""The pure cost analysis, on the records a trace and the fast-mode counts give (shapes seen in
real runs: tests/e2e/test_cost.py has them made by torch)."""

from __future__ import annotations

from dataclasses import replace

from gbbot.analysis import cost, frames
from gbbot.core.model import CallCount, FrameMetrics, FrameRef, GraphRuns, RunCounts, TraceLog
from gbbot.render.findings import cost_text
from tests.builders import traced_break

LOG = "dedicated_log_torch_trace_0.log"
ROOT = "/repo"
FILE = f"{ROOT}/pkg/model.py"


def metrics(frame_id: int, name: str, line: int, ops: int | None, fail: str | None = None) -> FrameMetrics:
    return FrameMetrics(name, FILE, ops, fail, frame_id=frame_id, compile_index=0, co_firstlineno=line, log=LOG,
                        compile_time_s=0.5)  # fmt: skip


def graph(frame_id: int, ops: int, runs: int) -> GraphRuns:
    return GraphRuns(f"{frame_id}/0", ops, ops + 2, runs, LOG)


def measured(log: TraceLog, counts: RunCounts | None, *breaks):
    idx = frames.index(log, ROOT)
    compiled = cost.measured(frames.compiled_frames(idx, breaks, log), idx, log, counts, ROOT)
    return {f.frame: f for f in compiled}, cost.with_costs(breaks, compiled)


MODEL, BLOCK = FrameRef("pkg/model.py", 20, "forward"), FrameRef("pkg/model.py", 10, "forward")


# Model.forward (line 20) calls Block.forward (line 10), whose print at line 12 breaks: traced in
# both frames, the caller's first; the caller's graph before the call is empty; each resumes.
def inlined(calls: int) -> tuple[TraceLog, RunCounts]:
    log = TraceLog((), (
        metrics(0, "forward", 20, None),
        metrics(1, "forward", 10, 2),
        metrics(2, "torch_dynamo_resume_in_forward_at_12", 12, 3),
        metrics(3, "torch_dynamo_resume_in_forward_at_21", 21, 1),
    ))  # fmt: skip
    counts = RunCounts((graph(1, 2, calls), graph(2, 3, calls), graph(3, 1, calls)))
    return log, counts


def test_a_break_one_call_deeper_costs_per_call_of_the_outermost_frame_and_follows_the_calls():
    for calls in (3, 128):
        log, counts = inlined(calls)
        by_ref, (brk,) = measured(log, counts, replace(traced_break(), frames=(MODEL, BLOCK)))
        assert by_ref[MODEL].entries == calls and by_ref[BLOCK].entries == calls  # the caller: by its resume
        assert by_ref[BLOCK].graph_ops == (2, 3) and by_ref[BLOCK].graph_runs == (calls, calls)
        assert brk.cost.function == "forward" and brk.cost.entries == calls
        assert brk.cost.graph_ops == (1, 2, 3) and brk.cost.launches_per_call == 3
        assert cost_text(brk.cost) == (
            f"splits forward into 3 graphs of 1 / 2 / 3 ops: 3 graph launches and eager code between on each of "
            f"{calls} calls"
        )


def test_without_counts_the_trace_figures_stay_and_nothing_is_called_measured():
    log, _ = inlined(3)
    by_ref, (brk,) = measured(log, None, replace(traced_break(), frames=(MODEL, BLOCK)))
    assert by_ref[BLOCK].graph_ops == (2, 3) and by_ref[BLOCK].compile_time_s == 1.0
    assert by_ref[BLOCK].graph_runs is None and brk.cost.entries is None and brk.cost.launches_per_call is None
    assert cost_text(brk.cost) == "splits forward into 3 graphs of 1 / 2 / 3 ops"


def test_a_frame_that_runs_eagerly_is_entered_once_per_call_of_its_compiled_callable():
    log = TraceLog((), (metrics(0, "forward", 10, None, fail="Unsupported"),))
    counts = RunCounts((), (CallCount(FILE, 10, "forward", 64, LOG),))
    brk = replace(traced_break(frame_skipped=True), frames=(BLOCK,), makes_eager=(BLOCK,))
    _, (found,) = measured(log, counts, brk)
    assert found.cost.runs_eagerly and found.cost.entries == 64
    assert cost_text(found.cost) == "forward runs eagerly on each of 64 calls"


def test_measured_order_puts_the_most_paid_first_and_the_rule_breaks_ties():
    setup, step = FrameRef("pkg/model.py", 1, "setup"), FrameRef("pkg/model.py", 5, "step")
    log = TraceLog((), (
        metrics(0, "setup", 1, 1), metrics(1, "torch_dynamo_resume_in_setup_at_2", 2, 1),
        metrics(2, "step", 5, 1), metrics(3, "torch_dynamo_resume_in_step_at_6", 6, 1),
    ))  # fmt: skip
    counts = RunCounts(tuple(graph(i, 1, runs) for i, runs in enumerate((1, 1, 50, 50))))
    once = replace(traced_break(1, frame_skipped=True), frames=(setup,))  # the rule alone would put it first
    many = replace(traced_break(2), frames=(step,))
    unmeasured = traced_break(3)
    _, ordered = measured(log, counts, once, unmeasured, many)
    assert [b.fingerprint for b in ordered] == [many.fingerprint, once.fingerprint, unmeasured.fingerprint]
    assert [b.line for b in cost.with_costs([traced_break(5), traced_break(4, frame_skipped=True)], ())] == [14, 15]
