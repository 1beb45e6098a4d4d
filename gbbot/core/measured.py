"""What a verified fix changes in time, measured (`gbbot fix --measure`): each side — the
entrypoints without the patch, and with it — run `repeat` times in faithful mode, interleaved, and
each run timed by the shim (gbbot/child/_shim/sitecustomize.py) as the seconds per steady-state
call of its compiled callables (calls during which nothing compiled). Pure: the records, the
statistics (median and spread over the runs, never one timing alone), the phrase the views show,
and the JSON form (the report's `extra.fixes[].measured`)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

MIN_REPEAT = 2  # one timing is never reported
DEFAULT_REPEAT = 3
MAX_REPEAT = 20
EACH_CALL_COMPILED = "each call compiled"


@dataclass(frozen=True)
class RunTimes:
    """One timed run of an entrypoint (or several, added up): its compiled callables' outermost
    calls, the steady-state ones with their total wall time, and the device they ran on."""

    steady_calls: int
    steady_s: float
    compiled_calls: int = 0
    device: str = "cpu"

    @property
    def per_call(self) -> float | None:
        return self.steady_s / self.steady_calls if self.steady_calls else None


def added(runs: Iterable[RunTimes]) -> RunTimes:
    """Several entrypoints' timings of one run, as one: seconds per call over all their calls."""
    runs = list(runs)
    devices = sorted({r.device for r in runs}) or ["cpu"]
    return RunTimes(
        sum(r.steady_calls for r in runs),
        sum(r.steady_s for r in runs),
        sum(r.compiled_calls for r in runs),
        "+".join(devices),
    )


@dataclass(frozen=True)
class Measured:
    """A fix measured: seconds per steady-state call, one figure per run on each side. When a
    side cannot be measured, `not_measurable` says why and the figures are what runs gave."""

    before_s_per_call: tuple[float, ...]
    after_s_per_call: tuple[float, ...]
    repeat: int
    device: str = "cpu"
    mode: str = "faithful"
    entrypoints: tuple[str, ...] = ()
    not_measurable: str = ""

    @property
    def measurable(self) -> bool:
        return not self.not_measurable

    @property
    def before(self) -> float:
        return statistics.median(self.before_s_per_call)

    @property
    def after(self) -> float:
        return statistics.median(self.after_s_per_call)

    @property
    def ratio(self) -> float | None:
        """How many times faster a call is with the fix (below 1: slower); None when unmeasurable."""
        return self.before / self.after if self.measurable and self.after > 0 else None

    @property
    def spread(self) -> float:
        """Half the larger of the two sides' ranges (max - min): the figures' ±."""
        return max(half_range(self.before_s_per_call), half_range(self.after_s_per_call))


def half_range(values: Sequence[float]) -> float:
    return (max(values) - min(values)) / 2 if values else 0.0


def why_not(runs: Sequence[RunTimes | None]) -> str:
    """Why a side's runs give no figure, or "" when each run has steady-state calls."""
    if not runs:
        return "nothing was timed"
    if any(r is None for r in runs):
        return "a timed run did not succeed"
    if any(r.steady_calls == 0 for r in runs if r is not None):
        return EACH_CALL_COMPILED
    return ""


def from_runs(
    before: Sequence[RunTimes | None], after: Sequence[RunTimes | None], entrypoints: Sequence[str] = ()
) -> Measured:
    """The measurement from each side's timed runs (None: a run that did not succeed)."""
    reasons = [r for r in (why_not(before), why_not(after)) if r]
    ran = [r for r in (*before, *after) if r is not None]
    return Measured(
        tuple(r.per_call for r in before if r is not None and r.per_call is not None),
        tuple(r.per_call for r in after if r is not None and r.per_call is not None),
        repeat=max(len(before), len(after)),
        device=added(ran).device if ran else "cpu",
        entrypoints=tuple(entrypoints),
        not_measurable=reasons[0] if reasons else "",
    )


def _unit(value: float) -> tuple[float, str]:
    if value < 1e-3:
        return 1e6, "µs"
    return (1e3, "ms") if value < 1 else (1.0, "s")


def seconds(value: float, like: float | None = None) -> str:
    """A duration in the unit that reads best for it (or for `like`): 850 µs, 1.8 ms, 2.3 s."""
    scale, unit = _unit(value if like is None else like)
    return f"{value * scale:.3g} {unit}"


def phrase(measured: Measured) -> str:
    """'measured: 1.8 ms → 1.1 ms per call (1.6x; spread ±0.1 ms over 3 runs each, faithful mode, cpu)'."""
    if not measured.measurable:
        return f"not measurable: {measured.not_measurable}"
    ratio = f"{measured.ratio:.2g}x" if measured.ratio is not None else "no ratio"
    where = f"over {measured.repeat} runs each, {measured.mode} mode, {measured.device}"
    return (
        f"measured: {seconds(measured.before)} → {seconds(measured.after)} per call "
        f"({ratio}; spread ±{seconds(measured.spread, measured.after)} {where})"
    )


def to_json(measured: Measured) -> dict[str, Any]:
    """The report's `measured` object: the runs, and the figures read from them."""
    figures = (
        {"before_median_s": measured.before, "after_median_s": measured.after, "spread_s": measured.spread}
        if measured.measurable
        else {}
    )
    return {
        "before_s_per_call": list(measured.before_s_per_call),
        "after_s_per_call": list(measured.after_s_per_call),
        "repeat": measured.repeat,
        "device": measured.device,
        "mode": measured.mode,
        "entrypoints": list(measured.entrypoints),
        "not_measurable": measured.not_measurable,
        **figures,
        "ratio": measured.ratio,
        "phrase": phrase(measured),
    }
