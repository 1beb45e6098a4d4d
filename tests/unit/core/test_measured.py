"""The figures of `gbbot fix --measure`: one per timed run on each side, the median and spread of
each side, the ratio, "not measurable" when a side has no steady-state call, the phrase the views
show, and the JSON form."""

from __future__ import annotations

import pytest

from gbbot.core.measured import EACH_CALL_COMPILED, Measured, RunTimes, added, from_runs, phrase, seconds, to_json

MS = 1e-3


def runs(*per_call_ms: float, calls: int = 10) -> list[RunTimes]:
    return [RunTimes(calls, ms * MS * calls, compiled_calls=1) for ms in per_call_ms]


def test_each_side_is_the_median_of_its_runs_and_the_spread_the_wider_half_range():
    measured = from_runs(runs(1.9, 1.8, 1.7), runs(1.0, 1.2, 1.1), ("train",))
    assert measured.before_s_per_call == pytest.approx((1.9 * MS, 1.8 * MS, 1.7 * MS))
    assert measured.before == pytest.approx(1.8 * MS) and measured.after == pytest.approx(1.1 * MS)
    assert measured.spread == pytest.approx(0.1 * MS)
    assert measured.ratio == pytest.approx(1.8 / 1.1)
    assert measured.repeat == 3 and measured.entrypoints == ("train",)
    assert phrase(measured) == (
        "measured: 1.8 ms → 1.1 ms per call (1.6x; spread ±0.1 ms over 3 runs each, faithful mode, cpu)"
    )


def test_a_slower_patch_reads_as_a_ratio_below_one():
    measured = from_runs(runs(1.0, 1.0), runs(2.0, 2.0))
    assert measured.ratio == pytest.approx(0.5)
    assert "(0.5x; spread ±0 ms over 2 runs each" in phrase(measured)


def test_a_side_where_each_call_compiled_is_not_measurable():
    compiled_only = [RunTimes(0, 0.0, compiled_calls=1), RunTimes(0, 0.0, compiled_calls=1)]
    measured = from_runs(runs(1.0, 1.1), compiled_only)
    assert not measured.measurable and measured.not_measurable == EACH_CALL_COMPILED
    assert measured.ratio is None
    assert phrase(measured) == "not measurable: each call compiled"
    data = to_json(measured)
    assert data["ratio"] is None and "before_median_s" not in data and data["phrase"] == phrase(measured)


def test_a_run_that_did_not_succeed_leaves_no_figure():
    measured = from_runs([*runs(1.0), None], runs(1.0, 1.0))
    assert measured.not_measurable == "a timed run did not succeed"
    assert from_runs([], []).not_measurable == "nothing was timed"


def test_several_entrypoints_of_one_run_are_one_figure_over_all_their_calls():
    one = added([RunTimes(10, 10 * MS, 1, "cpu"), RunTimes(30, 90 * MS, 2, "cuda")])
    assert one.per_call == pytest.approx(2.5 * MS) and one.compiled_calls == 3 and one.device == "cpu+cuda"
    assert RunTimes(0, 0.0).per_call is None


@pytest.mark.parametrize(
    ("value", "text"), [(850e-6, "850 µs"), (1.84e-3, "1.84 ms"), (0.25, "250 ms"), (2.3, "2.3 s")]
)
def test_durations_read_in_the_unit_that_fits(value, text):
    assert seconds(value) == text


def test_the_phrase_names_the_device():
    measured = Measured((2 * MS, 2 * MS), (1 * MS, 1 * MS), 2, device="cuda")
    assert phrase(measured).endswith("over 2 runs each, faithful mode, cuda)")
