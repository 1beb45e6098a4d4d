"""A trace directory holds one log file per process (or rank), and each file numbers its frames from
0: recompilations are counted per file, never across files that reuse a frame id."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from gbbot.analysis import recompile
from gbbot.core.model import CompiledFrame, FrameRef
from gbbot.trace import tracelog
from tests.builders import DTYPE, entrypoint, report_of
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


# --- a recompile whose frame now runs eagerly is hidden, not fixed ------------------------------


def test_a_recompile_gone_because_its_frame_now_runs_eagerly_is_hidden_not_fixed():
    forward = FrameRef("model/loops.py", 25, "scale", "scale")
    recompiled = replace(DTYPE, frame=forward)
    base = report_of(
        entrypoint("train", (), recompiles=(recompiled,), frames=(CompiledFrame(forward, ("0/0", "0/1"), 2, False),))
    )
    head = report_of(entrypoint("train", (), frames=(CompiledFrame(forward, ("0/0",), 0, True, "e" * 16),)))
    result = recompile.compare(head, base)
    (problem,) = recompile.problems([recompiled])
    assert result.hidden == (problem,) and result.fixed == ()
    still_compiled = report_of(entrypoint("train", (), frames=(CompiledFrame(forward, ("0/0",), 1, False),)))
    assert recompile.compare(still_compiled, base).fixed == (problem,)


def test_a_recompiled_frame_is_named_by_its_code_object():
    log = tracelog.read_path(FIXTURES / "recompile.trace.log")
    (first, *_) = recompile.analyse(log, "/tmp/rc")
    assert first.frame is not None and first.frame.file.endswith(".py") and first.frame.line > 0
