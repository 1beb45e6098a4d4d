"""`gbbot fix --measure` alternates the timed runs, without the patch then with it, so that drift on
the machine (another job starting, a CPU clocking down) hits both sides alike; the patch is out of
the scratch copy when it is done, even when a run fails."""

from __future__ import annotations

import pytest

from gbbot.core.measured import RunTimes
from gbbot.fix.measure import interleaved


def test_runs_alternate_without_and_with_the_patch():
    seen: list[str] = []
    state = {"patched": False}

    def run(names):
        seen.append("B" if state["patched"] else "A")
        return RunTimes(5, 0.005 * (2 if state["patched"] else 3))

    def patch(on: bool) -> None:
        state["patched"] = on

    before, after = interleaved(run, ("train",), patch, 3)
    assert "".join(seen) == "ABABAB"
    assert [r.per_call for r in before] == pytest.approx([0.003] * 3)
    assert [r.per_call for r in after] == pytest.approx([0.002] * 3)
    assert state["patched"] is False


def test_the_patch_is_taken_out_when_a_run_raises():
    state = {"patched": False}

    def run(names):
        if state["patched"]:
            raise KeyboardInterrupt
        return RunTimes(1, 0.001)

    with pytest.raises(KeyboardInterrupt):
        interleaved(run, ("train",), lambda on: state.__setitem__("patched", on), 2)
    assert state["patched"] is False
