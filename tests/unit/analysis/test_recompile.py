"""A trace directory holds one log file per process (or rank), and each file numbers its frames from
0: recompilations are counted per file, never across files that reuse a frame id."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from gbbot.analysis import recompile
from gbbot.core.model import CompiledFrame, Frame, FrameRef, Status
from gbbot.trace import tracelog
from tests.builders import DTYPE, INFO, entrypoint, recompile_reason, recompiled_frame, report_of, states, traced_break
from tests.conftest import FIXTURES

RECORDED = FIXTURES / "recompile.trace.log"  # frames 0 (`loop`) and 1 (`apply`)
ROOT = "/tmp/rc"  # where the recorded program lived


def one_compile(function: str, frame_id: int) -> str:
    """A log in which frame `frame_id` (`function` of other.py) compiled once."""
    head = "V1201 00:39:05.447000 20000 torch/_dynamo/utils.py:2009] "
    return "".join(
        head + line + "\n"
        for line in (
            '{"str": ["/tmp/rc/other.py", 1]}',
            f'{{"dynamo_start": {{"stack": [{{"line": 5, "name": "{function}", "filename": 1}}]}}, '
            f'"frame_id": {frame_id}, "frame_compile_id": 0, "attempt": 0}}',
            f'{{"compilation_metrics": {{"compile_id": "{frame_id}/0", "co_name": "{function}", '
            f'"co_filename": "/tmp/rc/other.py", "co_firstlineno": 5, "graph_op_count": 1, '
            f'"recompile_reason": null}}, "frame_id": {frame_id}, "frame_compile_id": 0, "attempt": 0}}',
        )
    )


def shown(found: tuple) -> list[tuple]:
    return [(rc.file, rc.function, rc.compilations, rc.limit_hit, [r.kind for r in rc.reasons]) for rc in found]


def test_frames_with_the_same_id_in_two_files_are_two_frames(tmp_path: Path) -> None:
    shutil.copy(RECORDED, tmp_path / "dedicated_log_torch_trace_a.log")
    (tmp_path / "dedicated_log_torch_trace_b.log").write_text(one_compile("other", 0) + one_compile("helper", 1))
    alone = recompile.analyse(tracelog.read_path(RECORDED), ROOT)
    together = recompile.analyse(tracelog.read_path(tmp_path), ROOT)
    # other.py's frames compiled once each: no recompilation, and `loop` is not counted three times
    expected = [("ep3.py", "loop", 2, True, ["int_argument"]), ("ep3.py", "apply", 2, False, ["type"])]
    assert shown(together) == shown(alone) == expected


def test_two_files_that_each_compile_a_frame_once_show_no_recompilation(tmp_path: Path) -> None:
    (tmp_path / "rank_0.log").write_text(one_compile("forward", 0))
    (tmp_path / "rank_1.log").write_text(one_compile("forward", 0))
    assert recompile.analyse(tracelog.read_path(tmp_path), ROOT) == ()


def test_the_same_recompiling_frame_in_two_files_is_reported_once(tmp_path: Path) -> None:
    for name in ("rank_0.log", "rank_1.log"):
        shutil.copy(RECORDED, tmp_path / name)
    assert shown(recompile.analyse(tracelog.read_path(tmp_path), ROOT)) == shown(
        recompile.analyse(tracelog.read_path(RECORDED), ROOT)
    )


# Guard texts as torch 2.13 writes them in `recompile_reason` (and TORCH_LOGS=recompiles), each
# from a real run: the kind, what the cause names and what the advice must (not) say.
REAL_GUARDS = [
    ("GLOBAL_STATE changed: grad_mode ", "grad_mode", "torch.no_grad()", "evaluation step as its own function"),
    ("GLOBAL_STATE changed: autocast(cpu)_enabled deterministic_algorithms ", "autocast", "torch.autocast", "autocast"),
    ("GLOBAL_STATE changed: deterministic_algorithms ", "deterministic", "use_deterministic_algorithms", "once"),
    (
        "len(xs) == 2                                             # return sum(xs)  # rc.py:20 in g",
        "length",
        "`xs`",
        "torch.stack(xs)",
    ),
    ("tensor 'x' size mismatch at index 1. expected 3, actual 4", "shape", "dimension 1", "mark_dynamic(x, 1)"),
    (
        "self.k == 1          # return x * self.k  # rc.py:32 in forward (HINT: torch.compile considers integer attributes)",
        "module_attribute",
        "`self.k`",
        "allow_unspec_int_on_nn_module",
    ),
    (
        "___check_type_id(o, 94129817156176), type=<class '__main__.A'>  # return x * o.scale  # rc2.py:9 in u",
        "type",
        "`o`",
        "one type",
    ),
    (
        "___check_obj_id(fn.__code__, 140236090820688), type=<class 'code'>  # return fn(x)  # rc2.py:13 in w",
        "object_id",
        "`fn`",
        "Create it once",
    ),
    (
        "___check_type_id(self._modules['act'], 94129798961440), type=<class 'torch.nn.ReLU'>  # y = self.act(x)  # m.py:19 in forward",
        "module_swap",
        "`self.act`",
        "__init__",
    ),
    (
        "tensor 'self._modules['mlp']._modules['1']._parameters['bias']' size mismatch at index 0. expected 8, "
        "actual 16. Guard failed on a parameter, consider using torch._dynamo.config.force_parameter_static_shapes",
        "shape",
        "`self.mlp[1].bias`",
        "mark_dynamic(self.mlp[1].bias, 0)",
    ),
    (
        "self.training == True      # return self.act(x) if self.training else x  # rc2.py:19 in forward",
        "training",
        "model.eval()",
        "separate functions",
    ),
]


@pytest.mark.parametrize(("text", "kind", "in_cause", "in_advice"), REAL_GUARDS)
def test_a_real_guard_gets_its_family_with_advice_naming_what_it_names(text, kind, in_cause, in_advice) -> None:
    guard = recompile.parse_reason(text)
    found = recompile.load_rules().kind(guard.text)
    assert found.kind == kind
    assert in_cause in recompile.filled(found.cause, guard)
    assert in_advice in recompile.filled(found.advice, guard)
    assert "keep its input stable" not in recompile.filled(found.advice, guard)


def test_a_requires_grad_flip_is_not_said_to_be_training_against_evaluation() -> None:
    """A model already in eval mode meets it too: an input made with requires_grad on one call."""
    guard = recompile.parse_reason("tensor 'x' requires_grad mismatch. expected requires_grad=0")
    kind = recompile.load_rules().kind(guard.text)
    said = f"{recompile.filled(kind.cause, guard)} {recompile.filled(kind.advice, guard)}"
    assert kind.kind == "requires_grad" and "`x`" in said
    assert not re.search(r"train|eval", said, re.IGNORECASE)


def test_a_size_guard_on_dimension_1_never_advises_dimension_0() -> None:
    guard = recompile.parse_reason("tensor 'hidden' size mismatch at index 1. expected 64, actual 80")
    advice = recompile.filled(recompile.load_rules().kind(guard.text).advice, guard)
    assert "mark_dynamic(hidden, 1)" in advice and ", 0)" not in advice


# --- a recompile whose frame now runs eagerly is hidden, not fixed ------------------------------


def test_a_recompile_gone_because_its_frame_now_runs_eagerly_is_hidden_not_fixed():
    forward = FrameRef("model/loops.py", 25, "scale", "scale")
    recompiled = replace(DTYPE, frame=forward)
    base = report_of(
        entrypoint("train", (), recompiles=(recompiled,), frames=(CompiledFrame(forward, ("0/0", "0/1"), 2, False),))
    )
    head = report_of(entrypoint("train", (), frames=(CompiledFrame(forward, ("0/0",), 0, True, "e" * 16),)))
    result = states(recompile.compare(head, base))
    (problem,) = recompile.problems([recompiled])
    assert result.hidden == (problem,) and result.fixed == ()
    still_compiled = report_of(entrypoint("train", (), frames=(CompiledFrame(forward, ("0/0",), 1, False),)))
    assert states(recompile.compare(still_compiled, base)).fixed == (problem,)


def test_a_recompiled_frame_is_named_by_its_code_object():
    log = tracelog.read_path(FIXTURES / "recompile.trace.log")
    (first, *_) = recompile.analyse(log, "/tmp/rc")
    assert first.frame is not None and first.frame.file.endswith(".py") and first.frame.line > 0


def test_a_resume_function_is_the_new_break_s_whose_stack_passes_its_line() -> None:
    """The break is inside a helper the frame inlined: the resume function resumes after the call
    line in the frame's file, which is on the break's stack, not its own line."""
    brk = traced_break(
        1,
        file="model/helpers.py",
        line=3,
        user_stack=(Frame("model/loops.py", 12, "forward", "log(x)"), Frame("model/helpers.py", 3, "log", "print(x)")),
    )
    frame = FrameRef("model/loops.py", 12, "forward")
    resumed = recompiled_frame("Net.forward", 12, 4, (recompile_reason("int_argument"),), frame=frame, resumes_at=12)
    elsewhere = replace(resumed, fingerprint="0" * 16, resumes_at=30)
    assert recompile.made_by(resumed, [brk]) == brk
    assert recompile.made_by(elsewhere, [brk]) is None
    assert recompile.made_by(replace(resumed, resumes_at=None), [brk]) is None

    head = report_of(entrypoint("train", [brk], recompiles=(resumed, INFO)))
    compared = states(recompile.compare(head, report_of(entrypoint("train")), [brk]))
    assert compared.new == () and compared.by_new_break == (resumed.reasons[0].fingerprint,)
    # Without the break being new (it was on the base), the same recompilation is new.
    assert states(recompile.compare(head, report_of(entrypoint("train")))).new == (resumed.reasons[0].fingerprint,)
    marked = recompile.attributed(head, recompile.by_new_breaks(head, [brk]))
    assert [rc.new_break for rc in marked.entrypoints[0].recompiles] == [brk.fingerprint, None]


def test_a_frame_the_base_never_compiled_recompiles_because_of_the_new_break_that_made_it() -> None:
    """Block.forward was inlined into its caller on the base; the head's new print in it makes the
    caller break at the call, so Dynamo compiles Block.forward on its own, once per size. A frame
    the base compiled too is not the break's unless it is the break's resume function."""
    block = FrameRef("model/loops.py", 5, "forward", "Block.forward")
    caller = FrameRef("model/loops.py", 20, "forward", "Net.forward")
    brk = traced_break(1, file="model/loops.py", line=7, frames=(caller, block), makes_eager=(caller,))
    shape = recompile_reason("shape", fingerprint="a" * 16)
    recompiled = recompiled_frame("Block.forward", 5, 4, (shape,), frame=block)
    head = report_of(
        entrypoint("train", [brk], recompiles=(recompiled,), frames=(CompiledFrame(caller, ("0/0",), 0, True),))
    )
    inlined = report_of(entrypoint("train", frames=(CompiledFrame(caller, ("0/0",), 1, False),)))
    assert recompile.by_new_breaks(head, [brk], inlined) == {recompiled.fingerprint: brk.fingerprint}
    assert states(recompile.compare(head, inlined, [brk])).by_new_break == (shape.fingerprint,)
    compiled = report_of(entrypoint("train", frames=(CompiledFrame(block, ("0/0",), 1, False),)))
    assert recompile.by_new_breaks(head, [brk], compiled) == {}
    failed = report_of(entrypoint("train", status=Status.FAILED))  # what the base compiled is unknown
    assert recompile.by_new_breaks(head, [brk], failed) == {}
    # A frame no break was traced in, compiled on its own because a new break makes its caller eager
    attention = FrameRef("model/loops.py", 30, "forward", "Attention.forward")
    alone = recompiled_frame("Attention.forward", 30, 3, (shape,), frame=attention, fingerprint="b" * 16)
    head = report_of(entrypoint("train", [brk], recompiles=(alone,)))
    assert recompile.by_new_breaks(head, [brk], inlined) == {alone.fingerprint: brk.fingerprint}
