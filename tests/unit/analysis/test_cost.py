"""The pure cost analysis, on the records a trace and the fast-mode counts give (shapes seen in
real runs: see tests/e2e/test_cost.py for them made by torch)."""

from __future__ import annotations

from dataclasses import replace

from gbbot.analysis import cost
from gbbot.core.model import FrameMetrics, GraphRuns, RunCounts, TraceLog
from gbbot.render.findings import cost_text
from tests.builders import traced_break

LOG = "dedicated_log_torch_trace_0.log"
ROOT = "/repo"


def metrics(frame_id: int, name: str, line: int, ops: int | None, fail: str | None = None, index: int = 0):
    return FrameMetrics(name, f"{ROOT}/pkg/model.py", ops, fail, frame_id=frame_id, compile_index=index,
                        co_firstlineno=line, log=LOG, compile_time_s=0.5)  # fmt: skip


def graph(compile_id: str, ops: int, runs: int) -> GraphRuns:
    return GraphRuns(compile_id, ops, ops + 2, runs, LOG)


# Model.forward (line 20) calls Block.forward (line 10), whose print at line 12 breaks: reported in
# both frames; the caller's graph is empty, each then resumes. Model is called `calls` times.
def inlined(calls: int) -> tuple[TraceLog, RunCounts]:
    log = TraceLog((), (
        metrics(0, "forward", 20, None),
        metrics(1, "forward", 10, 2),
        metrics(2, "torch_dynamo_resume_in_forward_at_12", 12, 3),
        metrics(3, "torch_dynamo_resume_in_forward_at_21", 21, 1),
    ))  # fmt: skip
    counts = RunCounts((graph("1/0", 2, calls), graph("2/0", 3, calls), graph("3/0", 1, calls)))
    return log, counts


def test_a_break_one_call_deeper_costs_per_call_of_the_outermost_function_and_follows_the_calls():
    for calls in (3, 128):
        log, counts = inlined(calls)
        runs = cost.frame_runs(log, counts, ROOT)
        brk = replace(traced_break(), compiles=(f"{LOG}:0/0", f"{LOG}:1/0"))
        found = cost.break_cost(brk, runs)
        assert found.function == "forward" and found.entries == calls
        assert found.graph_ops == (2, 3, 1) and found.launches_per_call == 3
        assert cost_text(found) == f"splits forward into 3 graphs of 2 / 3 / 1 ops: 3 graph launches and " \
            f"eager code between on each of {calls} calls"  # fmt: skip
        assert {f.file for f in runs.frames} == {"pkg/model.py"}  # never the runner's absolute path


def test_two_forwards_in_one_file_keep_their_own_resume_functions():
    log = TraceLog((), (
        metrics(0, "forward", 10, 4), metrics(1, "torch_dynamo_resume_in_forward_at_12", 12, 5),
        metrics(2, "forward", 40, 6), metrics(3, "torch_dynamo_resume_in_forward_at_44", 44, 7),
    ))  # fmt: skip
    runs = cost.frame_runs(log, None, ROOT)
    second = cost.break_cost(replace(traced_break(), compiles=(f"{LOG}:2/0",)), runs)
    assert second.graph_ops == (6, 7) and second.entries is None and second.launches_per_call is None


def test_a_frame_that_runs_eagerly_is_entered_once_per_call_of_its_compiled_callable():
    from gbbot.core.model import CallCount

    log = TraceLog((), (metrics(0, "forward", 10, None, fail="Unsupported"),))
    counts = RunCounts((), (CallCount(f"{ROOT}/pkg/model.py", 10, "forward", 64, LOG),))
    found = cost.break_cost(replace(traced_break(), compiles=(f"{LOG}:0/0",)), cost.frame_runs(log, counts, ROOT))
    assert found.runs_eagerly and found.entries == 64
    assert cost_text(found) == "forward runs eagerly on each of 64 calls"


def test_measured_order_puts_the_most_paid_first_and_the_rule_breaks_ties():
    log = TraceLog((), (
        metrics(0, "setup", 1, 1), metrics(1, "torch_dynamo_resume_in_setup_at_2", 2, 1),
        metrics(2, "step", 5, 1), metrics(3, "torch_dynamo_resume_in_step_at_6", 6, 1),
    ))  # fmt: skip
    counts = RunCounts(tuple(graph(f"{i}/0", 1, runs) for i, runs in enumerate((1, 1, 50, 50))))
    once = replace(traced_break(1, frame_skipped=True), compiles=(f"{LOG}:0/0",))  # the rule would put it first
    many = replace(traced_break(2), compiles=(f"{LOG}:2/0",))
    unmeasured = traced_break(3)
    ordered = cost.with_costs([once, unmeasured, many], cost.frame_runs(log, counts, ROOT))
    assert [b.fingerprint for b in ordered] == [many.fingerprint, once.fingerprint, unmeasured.fingerprint]
    ties = cost.with_costs([traced_break(5), traced_break(4, frame_skipped=True)], None)
    assert [b.line for b in ties] == [14, 15]  # nothing measured: the rule alone
