"""Compiled frames: on values (a trace's records as Python values), then on recorded traces."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest

from gbbot.analysis import classify, frames, report
from gbbot.checks import tree
from gbbot.core import counts
from gbbot.core.model import (
    BreakMessage,
    CompiledFrame,
    Frame,
    FrameMetrics,
    FrameRef,
    RawBreak,
    RunOutcome,
    Status,
    TraceLog,
)
from gbbot.trace import registry, tracelog
from tests import builders
from tests.conftest import FIXTURES

ROOT = "/repo"
LOGGER = BreakMessage("logging.Logger method not supported for non-export cases", "GB0291")
PRINT = BreakMessage("Failed to trace builtin operator", "GB0059")
FIXTURE_ROOT = "/tmp/gbbot-fixture"  # where tests/fixtures/record.py ran the programs


def metrics(frame_id: int, name: str, first: int, file: str = "model.py", index: int = 0, **changes) -> FrameMetrics:
    values = dict(
        co_name=name,
        co_filename=f"{ROOT}/{file}",
        graph_op_count=1,
        fail_type=None,
        frame_id=frame_id,
        compile_index=index,
        co_firstlineno=first,
        log="t.log",
    )
    values.update(changes)
    return FrameMetrics(**values)


def record(message: BreakMessage, stack: list[tuple[int, str]], frame_id: int, index: int = 0, **changes) -> RawBreak:
    traceback = tuple(Frame(f"{ROOT}/model.py", line, fn) for line, fn in stack)
    values = dict(frame_skipped=False, frame_id=frame_id, compile_index=index, log="t.log")
    values.update(changes)
    return RawBreak(message, (), traceback, **values)


def analysed(log: TraceLog):
    idx = frames.index(log, ROOT)
    breaks = classify.classify(log.breaks, ROOT, frames=idx, ids=registry.EMPTY)
    return breaks, frames.compiled_frames(idx, breaks, log)


# --- a logger in a callee that the caller's loop inlines ----------------------------------------

# Model.forward (line 20) loops over blocks; Block.forward (line 5) logs at line 6. Compile 0/0
# of Model.forward meets the logger, cannot split the loop and falls back to eager; Block.forward
# is then compiled on its own (1/0) and split at the logger, its resume function after (2/0).
LOOP = TraceLog(
    breaks=(
        record(LOGGER, [(22, "forward"), (6, "forward")], 0, frame_skipped=True, ends_frame=True),
        record(LOGGER, [(6, "forward")], 1),
    ),
    metrics=(
        metrics(0, "forward", 20, graph_op_count=None, fail_type="Unsupported"),
        metrics(1, "forward", 5, graph_op_count=0),
        metrics(2, "torch_dynamo_resume_in_forward_at_6", 6),
    ),
)
MODEL = FrameRef("model.py", 20, "forward")
BLOCK = FrameRef("model.py", 5, "forward")


def test_a_break_names_the_frames_it_was_traced_in_and_the_one_it_made_eager():
    (brk,), _ = analysed(LOOP)
    assert brk.frames == (MODEL, BLOCK)
    assert brk.frame == MODEL
    assert brk.makes_eager == (MODEL,)


def test_the_caller_runs_eagerly_not_the_function_the_break_is_in():
    (brk,), compiled = analysed(LOOP)
    assert compiled == (
        CompiledFrame(MODEL, ("0/0",), 0, True, brk.fingerprint, (brk.fingerprint,)),
        CompiledFrame(BLOCK, ("1/0", "2/0"), 1, False, None, (brk.fingerprint,)),
    )


def test_a_break_is_hit_once_per_compile_that_met_it_as_many_as_the_frames_it_is_shown_in():
    (brk,), _ = analysed(LOOP)
    # the caller's compile it ended and the callee's compile it split: two, as TORCH_LOGS shows
    # it (torch's counters["graph_break"] says 1: it counts only the split)
    assert brk.count == 2 == len(brk.frames)


def test_a_compile_dynamo_restarted_after_the_break_counts_it_once():
    first, ended = LOOP.breaks
    restarted = replace(LOOP, breaks=(replace(first, frame_skipped=False, ends_frame=False), first, ended))
    (brk,), _ = analysed(restarted)
    assert brk.count == 2


def test_a_break_met_only_as_the_end_of_its_frame_was_still_hit_once():
    only = replace(LOOP, breaks=LOOP.breaks[:1])
    (brk,), _ = analysed(only)
    assert brk.count == 1


def test_a_resume_function_is_the_frame_of_the_nearest_function_of_its_name_above_it():
    log = TraceLog(
        breaks=(record(PRINT, [(41, "forward")], 3),),
        metrics=(
            metrics(0, "forward", 5),
            metrics(1, "forward", 40),  # a second class's forward in the same file
            metrics(3, "torch_dynamo_resume_in_forward_at_41", 41),
        ),
    )
    (brk,), compiled = analysed(log)
    assert brk.frames == (FrameRef("model.py", 40, "forward"),)
    assert [c.frame for c in compiled] == [FrameRef("model.py", 5, "forward"), FrameRef("model.py", 40, "forward")]


def test_a_fullgraph_compile_that_raised_leaves_no_frame_running_eagerly():
    failed = metrics(
        0,
        "forward",
        20,
        graph_op_count=None,
        fail_type="Unsupported",
        fail_reason="Failed to trace builtin operator\n  Explanation: print\n please visit: https://x/gb/gb0059.html",
        fail_file=f"{ROOT}/model.py",
        fail_line=22,
    )
    log = TraceLog(tracelog.fullgraph_failures((), (failed,)), (failed,))
    (brk,), compiled = analysed(log)
    assert brk.fullgraph_failure and brk.makes_eager == () and not brk.frame_skipped
    assert [c.eager for c in compiled] == [False]


def test_a_frame_that_fell_back_without_a_break_record_still_runs_eagerly():
    log = TraceLog((), (metrics(0, "step", 3, graph_op_count=None, fail_type="Unsupported"),))
    _, compiled = analysed(log)
    assert compiled == (CompiledFrame(FrameRef("model.py", 3, "step"), ("0/0",), 0, True),)


def test_records_of_two_trace_files_are_two_compiles_even_with_the_same_ids():
    other = TraceLog(
        breaks=(replace(LOOP.breaks[1], log="u.log"),),
        metrics=(replace(LOOP.metrics[1], log="u.log", co_name="step", co_firstlineno=50),),
    )
    both = TraceLog(LOOP.breaks + other.breaks, LOOP.metrics + other.metrics)
    idx = frames.index(both, ROOT)
    assert idx.of(other.breaks[0]) == FrameRef("model.py", 50, "step")
    assert idx.of(LOOP.breaks[1]) == BLOCK


# --- gbbot's own frames ------------------------------------------------------------------------


def test_gbbots_launcher_server_and_shim_never_appear_in_a_users_stack():
    own = [
        Frame("<frozen runpy>", 198, "_run_module_as_main"),
        Frame("/opt/venv/lib/python3.11/site-packages/gbbot/backends/warm_server.py", 343, "run_module"),
        Frame("/opt/venv/lib/python3.11/site-packages/gbbot/child/launch.py", 80, "main"),
        Frame("/opt/venv/lib/python3.11/site-packages/gbbot/child/_shim/sitecustomize.py", 40, "compile"),
    ]
    user = [Frame(f"{ROOT}/train.py", 3, "main"), Frame(f"{ROOT}/model.py", 6, "forward")]
    raw = RawBreak(LOGGER, (), (*own[:3], user[0], own[3], user[1]), False)
    (brk,) = classify.classify([raw], ROOT, ids=registry.EMPTY)
    assert [(f.file, f.function) for f in brk.user_stack] == [("train.py", "main"), ("model.py", "forward")]


def test_a_users_own_file_named_like_gbbots_is_kept():
    raw = RawBreak(LOGGER, (), (Frame(f"{ROOT}/tools/launch.py", 3, "main"),), False)
    (brk,) = classify.classify([raw], ROOT, ids=registry.EMPTY)
    assert brk.file == "tools/launch.py"


# --- counted once, from frames ----------------------------------------------------------------


def _entry(name: str, compiled: tuple[CompiledFrame, ...], breaks=()):
    return builders.entrypoint(name, breaks, frames=compiled, frames_skipped=sum(c.eager for c in compiled))


def test_frames_running_eagerly_are_counted_once_across_entrypoints():
    eager = CompiledFrame(MODEL, ("0/0",), 0, True, "f" * 16)
    compiled = CompiledFrame(BLOCK, ("1/0",), 1, False)
    rep = builders.report_of(_entry("train", (eager, compiled)), _entry("eval", (eager,)))
    assert counts.counts(rep).frames_eager == 1
    assert counts.eager_frames(rep) == (MODEL,)


def test_two_frames_of_one_function_name_in_one_file_are_two_frames():
    a = CompiledFrame(MODEL, ("0/0",), 0, True)
    b = CompiledFrame(BLOCK, ("1/0",), 0, True)
    assert counts.counts(builders.report_of(_entry("train", (a, b)))).frames_eager == 2


def test_a_report_made_before_frames_counts_eager_frames_as_it_did():
    brk = builders.traced_break(frame_skipped=True)
    rep = builders.report_of(builders.entrypoint("train", (brk,), frames_skipped=1))
    assert counts.counts(rep).frames_eager == 1


# --- in the JSON report -------------------------------------------------------------------------


def test_frames_go_through_the_json_report_and_back():
    breaks, compiled = analysed(LOOP)
    entry = report.entrypoint_report(RunOutcome("train", Status.OK, 0, 1.0), LOOP, breaks, frames=compiled)
    rep = report.new_report([entry], None, "2.13.0", None)
    data = json.loads(report.dumps(rep))
    assert data["entrypoints"][0]["frames"][0] == {
        "frame": {"file": "model.py", "line": 20, "function": "forward"},
        "compile_ids": ["0/0"],
        "graphs": 0,
        "eager": True,
        "eager_by": breaks[0].fingerprint,
        "breaks": [breaks[0].fingerprint],
        # what the run measured of it (analysis/cost.py): nothing here, the frame made no graph
        "graph_ops": [],
        "graph_runs": None,
        "entries": None,
        "compile_time_s": None,
    }
    assert data["entrypoints"][0]["breaks"][0]["makes_eager"] == [
        {"file": "model.py", "line": 20, "function": "forward"}
    ]
    assert data["entrypoints"][0]["frames_skipped"] == 1 and data["counts"]["frames_eager"] == 1
    back = report.from_json(data)
    assert back.entrypoints[0].frames == compiled and back.entrypoints[0].breaks == breaks


def test_a_report_without_frames_still_reads():
    data = json.loads(report.dumps(builders.report([builders.traced_break()])))
    for entry in data["entrypoints"]:
        entry.pop("frames")
        for brk in entry["breaks"]:
            brk.pop("frames"), brk.pop("makes_eager")
    assert report.from_json(data).entrypoints[0].frames == ()


# --- recorded runs (tests/fixtures/record.py) --------------------------------------------------

COUNTERS = json.loads((FIXTURES / "counters.json").read_text())


@pytest.fixture
def recorded(tmp_path):
    """A recorded trace read as `gbbot parse` reads one, with the recorded programs' sources at
    hand (qualnames come from them): the trace's paths moved from where record.py ran the
    programs into this test's own directory, which holds a copy of them."""

    def read(name: str):
        for program in (FIXTURES / "programs").glob("*.py"):
            shutil.copy(program, tmp_path / program.name)
        moved = (FIXTURES / f"{name}.trace.log").read_text().replace(FIXTURE_ROOT, str(tmp_path))
        (tmp_path / f"{name}.trace.log").write_text(moved)
        return tree.from_logs(tmp_path / f"{name}.trace.log", tmp_path, name).entrypoints[0]

    return read


def test_recorded_logger_in_a_block_makes_the_models_loop_frame_run_eagerly(recorded):
    entry = recorded("blocks")
    (brk,) = entry.breaks
    model, block = FrameRef("blocks.py", 28, "forward"), FrameRef("blocks.py", 18, "forward")
    assert (brk.gb_id, brk.function, brk.line) == ("GB0291", "Block.forward", 19)
    assert brk.frames == (model, block) and brk.makes_eager == (model,)
    assert [(f.frame, f.eager, f.eager_by) for f in entry.frames] == [
        (model, True, brk.fingerprint),
        (block, False, None),
    ]
    assert entry.frames_skipped == 1


def test_recorded_occurrences_count_each_frame_a_break_is_shown_in(recorded):
    for name in ("blocks", "gpt2"):
        entry = recorded(name)
        for brk in entry.breaks:
            assert brk.count == len(brk.frames), name
        # torch's counters["graph_break"] counts only the compiles a break split, not those it ended
        assert sum(b.count for b in entry.breaks) > COUNTERS[name], name


def test_recorded_gpt2_loss_warning_is_one_break_traced_in_four_frames(recorded):
    (brk,) = recorded("gpt2").breaks
    assert brk.gb_id == "GB0291" and brk.count == 4
    assert [f.function for f in brk.frames] == ["wrapper", "wrapped_func", "forward", "loss_function"]
    assert brk.frames[3].file == "transformers/modeling_utils.py"


# --- a compile that raised an error is the entrypoint's failure, not a break ------------------

MISMATCH = (
    "RuntimeError when making fake tensor call\n  Explanation: Dynamo failed to run FX node with fake tensors: "
    "got RuntimeError('a and b must have same reduction dim'). Check the shapes.\n"
    "  Hint: Your code may result in an error when running in eager.\n"
    " For more details about this graph break, please visit: https://x/gb/gb4315.html"
)


def crashed(fail_type: str = "TorchRuntimeError") -> TraceLog:
    failed = metrics(
        0,
        "project",
        3,
        graph_op_count=None,
        fail_type=fail_type,
        fail_reason=MISMATCH,
        fail_file=f"{ROOT}/model.py",
        fail_line=4,
    )
    return TraceLog(tracelog.fullgraph_failures((), (failed,)), (failed,))


def test_a_compile_that_raised_an_error_is_a_compile_error_not_a_fullgraph_failure():
    (raw,) = crashed().breaks
    assert raw.compile_error and not raw.fullgraph_failure
    (raw,) = crashed("Unsupported").breaks
    assert raw.fullgraph_failure and not raw.compile_error


def test_a_compile_error_is_counted_in_no_break_total_and_runs_no_frame_eagerly(tmp_path):
    (tmp_path / "model.py").write_text("def x():\n    pass\n\ndef project(x, w):\n    return x @ w\n")
    parts = tree.classified(crashed(), ROOT, tree.SourceTree(tmp_path), None, "m")
    assert parts.breaks == () and [f.eager for f in parts.frames] == [False]
    error = parts.compile_error
    assert (error.gb_id, error.category.value, error.file, error.line) == ("GB4315", "USER_ERROR", "model.py", 4)
    assert (
        error.explanation
        == "Dynamo failed to run FX node with fake tensors: got RuntimeError('a and b must have same reduction dim')"
    )
    outcome = RunOutcome("m", Status.FAILED, 1, 1.0)
    entry = report.entrypoint_report(outcome, crashed(), parts.breaks, frames=parts.frames, compile_error=error)
    rep = report.new_report([entry], None, "2.13.0", None)
    data = json.loads(report.dumps(rep))
    assert data["counts"]["distinct"] == 0 and data["counts"]["occurrences"] == 0
    assert data["entrypoints"][0]["compile_error"]["gb_id"] == "GB4315"
    assert report.from_json(data).entrypoints[0].compile_error == error
