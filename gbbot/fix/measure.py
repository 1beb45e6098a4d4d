"""`gbbot fix --measure`: what a verified fix changes in time. The entrypoints it re-ran are run
in faithful mode (the code torch.compile really makes), `repeat` times without the patch and
`repeat` times with it, interleaved (A B A B …) so that drift on the machine hits both sides, each
run's compiled calls timed by the shim; the figures are core/measured.py's. Runs in the scratch
copy, one entrypoint run at a time (runs side by side would time each other)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

from gbbot.core.measured import Measured, RunTimes, added, from_runs
from gbbot.core.model import Mode, Status
from gbbot.fix.patch import FilePatch
from gbbot.fix.trials import Trials
from gbbot.trace import call_times

TimedRun = Callable[[Sequence[str]], "RunTimes | None"]


def timed_run(trials: Trials, names: Sequence[str]) -> RunTimes | None:
    """One faithful-mode run of `names` in the scratch copy as it stands, timed; None when an
    entrypoint did not succeed or left no timings (nothing it ran was compiled)."""
    _, observed = trials.observe(names, Mode.FAITHFUL, jobs=1, time_calls=True)
    found: list[RunTimes] = []
    for name in names:
        outcome = observed[name].outcome if name in observed else None
        if outcome is None or outcome.status is not Status.OK:
            return None
        times, _ = call_times.read(Path(outcome.trace_dir) if outcome.trace_dir else None)
        if times is None:
            return None
        found.append(times)
    return added(found)


def interleaved(
    run: TimedRun, names: Sequence[str], patch: Callable[[bool], None], repeat: int
) -> tuple[list[RunTimes | None], list[RunTimes | None]]:
    """`repeat` runs without the patch and `repeat` with it, alternating, starting without;
    `patch(True)` puts it in place, `patch(False)` takes it out (it is out when this returns)."""
    before: list[RunTimes | None] = []
    after: list[RunTimes | None] = []
    for _ in range(repeat):
        before.append(run(names))
        patch(True)
        try:
            after.append(run(names))
        finally:
            patch(False)
    return before, after


def measure(trials: Trials, patches: Sequence[FilePatch], names: Sequence[str], repeat: int) -> Measured:
    """The fix made of `patches` (on the scratch copy's current text), measured on `names`."""
    trials.progress(f"measuring on {', '.join(names)}: {repeat} timed runs without the patch and {repeat} with it…")
    patch = functools.partial(trials.scratch.write, patches)  # patch(True): in place; patch(False): out
    before, after = interleaved(lambda n: timed_run(trials, n), names, patch, repeat)
    return from_runs(before, after, names)
