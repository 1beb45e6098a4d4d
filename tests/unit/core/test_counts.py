"""Which frames a break makes run eagerly, said once for every view (the comment's "runs eagerly"
line and the frame counts read the same frames)."""

from __future__ import annotations

from gbbot.core.counts import made_eager
from gbbot.core.model import FrameRef
from tests.builders import graph_break

CALLER = FrameRef("model.py", 30, "forward", "Model.forward")


def test_the_frame_dynamo_was_compiling_not_the_breaks_own_function():
    brk = graph_break(1, file="model.py", function="Block.forward", frame_skipped=True, makes_eager=(CALLER,))
    assert made_eager(brk) == (CALLER,)


def test_a_report_made_before_frames_names_the_breaks_own_function_without_a_first_line():
    brk = graph_break(1, file="model.py", function="Block.forward", frame_skipped=True)
    assert made_eager(brk) == (FrameRef("model.py", 0, "Block.forward"),)


def test_a_break_that_sends_nothing_to_eager_names_no_frame():
    assert made_eager(graph_break(1, frame_skipped=False)) == ()
