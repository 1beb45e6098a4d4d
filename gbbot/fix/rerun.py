"""The entrypoint runs of one `gbbot fix`, all in the scratch copy: the baseline (each entrypoint
run once without patches, when it is first needed) and the trials (patches in place, the
entrypoints re-run, each trial judged against the baseline)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from gbbot.backends.contract import Backend
from gbbot.core.config import Config
from gbbot.core.model import Mode, Report, Status, Tool
from gbbot.fix import confirm
from gbbot.fix.batch import Trial
from gbbot.fix.patch import FilePatch, original_line
from gbbot.fix.verify import (
    FixableLater,
    Judgement,
    LineMap,
    Observation,
    ResultComparer,
    Scratch,
    changed_behaviour,
    judge,
    never,
    observe,
    same_line,
)

# Entrypoint name → its run without patches. Filled as trials need entrypoints: a mutable cache
# owned by the caller and passed in explicitly.
Baseline = dict[str, Observation]


@dataclass(frozen=True)
class Rerun:
    """What stays the same across every run of one `gbbot fix`: where, how, and how results
    are compared."""

    scratch: Scratch
    config: Config
    mode: Mode | None
    jobs: int
    backend: Backend
    compare: ResultComparer
    progress: Callable[[str], None]
    later: FixableLater = never  # a break the next round would try (none in the last round)
    earlier: LineMap = same_line  # a line of the round's text → the user's (earlier rounds' patches)
    # entrypoint → how two unpatched runs of it differ ("" when they agree): asked once, when a
    # patched run's result differs from the baseline's
    unstable: dict[str, str] = field(default_factory=dict, compare=False)
    # fast verdicts on compiled settings, confirmed in faithful mode (fix/confirm.py)
    confirmations: confirm.Confirmations = field(default_factory=confirm.Confirmations, compare=False)


def observe_named(rerun: Rerun, names: Iterable[str]) -> tuple[Report, Baseline]:
    """Run the named entrypoints that the configuration still has."""
    known = {e.name for e in rerun.config.entrypoints}
    wanted = [n for n in names if n in known]
    if not wanted:  # (check() would take "no names" for "all of them")
        return Report(Tool(), None, rerun.mode or rerun.config.mode, None, ()), {}
    return observe(rerun.scratch, rerun.config, wanted, rerun.mode, rerun.jobs, rerun.backend)


def fill_baseline(rerun: Rerun, baseline: Baseline, names: Iterable[str]) -> None:
    """Run, unpatched, those of `names` the baseline does not have yet, and add them."""
    missing = [n for n in names if n not in baseline]
    if missing:
        rerun.progress(f"baseline run of {', '.join(missing)}…")
        baseline.update(observe_named(rerun, missing)[1])


def attempt(rerun: Rerun, baseline: Baseline, trials: Sequence[Trial]) -> tuple[list[Judgement], Report]:
    """Put every trial's patches in place at once (they touch different files), run the
    union of their entrypoints, and judge each trial on its own entrypoints."""
    names = tuple(dict.fromkeys(n for trial in trials for n in trial.names))
    fill_baseline(rerun, baseline, names)
    patches = [p for trial in trials for p in trial.patches]
    rerun.scratch.write(patches)
    try:  # judged with the patches in place: `later` reads the patched files
        after_report, after = observe_named(rerun, names)
        fast = [judge_trial(trial, baseline, after, rerun.compare, rerun.later, rerun.earlier) for trial in trials]
        unpatch = functools.partial(unpatched, rerun, patches)
        confirmed = confirm.confirmed(rerun, baseline, trials, fast, unpatch)
        judged = [c if c is not None else f for c, f in zip(confirmed, fast, strict=True)]
    finally:
        rerun.scratch.write(patches, after=False)
    differing = {
        n for trial, j in zip(trials, judged, strict=True) if not j.ok for n in _changed(rerun, baseline, after, trial)
    }
    check_reproducible(rerun, baseline, differing)
    judged = [_with_unstable(rerun, trial, j) for trial, j in zip(trials, judged, strict=True)]
    return judged, after_report


def unpatched(rerun: Rerun, patches: Sequence[FilePatch], out: bool) -> None:
    """Take `patches` out of the scratch copy (`out`), or put them back."""
    rerun.scratch.write(patches, after=not out)


def _changed(rerun: Rerun, baseline: Baseline, after: Mapping[str, Observation], trial: Trial) -> list[str]:
    """The trial's entrypoints whose patched run ended or returned otherwise than the baseline's."""
    seen = [n for n in trial.names if n in after and n in baseline]
    return [n for n in seen if changed_behaviour(baseline[n], after[n], rerun.compare) is not None]


def check_reproducible(rerun: Rerun, baseline: Baseline, names: Iterable[str]) -> None:
    """Run each of `names` once more without patches, once per `gbbot fix`, and note how that run
    differs from the baseline's, if it does: then a difference after a patch says nothing."""
    wanted = [n for n in dict.fromkeys(names) if n not in rerun.unstable]
    if not wanted:
        return
    rerun.progress(f"a second unpatched run of {', '.join(wanted)}, to see whether its result is reproducible…")
    _report, again = observe_named(rerun, wanted)
    for name in wanted:
        differs = changed_behaviour(baseline[name], again[name], rerun.compare) if name in again else None
        rerun.unstable[name] = differs or ""


def _with_unstable(rerun: Rerun, trial: Trial, judgement: Judgement) -> Judgement:
    """A failed judgement that also says which of its entrypoints are not reproducible unpatched."""
    if judgement.ok:
        return judgement
    unstable = [(n, rerun.unstable[n]) for n in trial.names if rerun.unstable.get(n)]
    if not unstable:
        return judgement
    said = [
        f"{name} itself is not reproducible: a second run without any patch differs from the first "
        f"({why}), so its outputs cannot judge a patch (fix the seed, or initialise the weights "
        "that `torch.empty` leaves unset)"
        for name, why in unstable
    ]
    # how the patched run's result differed says nothing more: the unpatched runs differ too
    noise = tuple(f"the {what} of {name} changed" for name, _ in unstable for what in ("result", "output"))
    rest = [part for part in judgement.reason.split("; ") if part and not part.startswith(noise)]
    return replace(judgement, reason="; ".join([*said, *rest]), unjudgeable=True)


def keep(
    rerun: Rerun, baseline: Baseline, trials: Sequence[Trial], judged: Sequence[bool]
) -> tuple[list[Judgement | None], Baseline, Report]:
    """Put every trial's patches in place for good and run the union of their entrypoints: the
    next round starts from this. Trials marked in `judged` are judged against `baseline`; one
    that fails is taken back out, and its entrypoints keep their baseline runs. Returns the
    judgements (None where not judged), the runs now standing for each entrypoint, and the report
    of the runs."""
    names = tuple(dict.fromkeys(n for trial in trials for n in trial.names))
    fill_baseline(rerun, baseline, names)
    rerun.scratch.write([p for trial in trials for p in trial.patches])
    report, after = observe_named(rerun, names)
    judgements = [
        judge_trial(trial, baseline, after, rerun.compare, rerun.later, rerun.earlier) if wanted else None
        for trial, wanted in zip(trials, judged, strict=True)
    ]
    unpatch = functools.partial(unpatched, rerun, [p for trial in trials for p in trial.patches])
    judgements = confirm.confirmed(rerun, baseline, trials, judgements, unpatch)
    standing = dict(baseline)
    for trial, judgement in zip(trials, judgements, strict=True):
        if judgement is not None and not judgement.ok:
            rerun.scratch.write(trial.patches, after=False)
            continue
        standing.update((n, after[n]) for n in trial.names if n in after)
    return judgements, standing, report


def lines_before(patches: Sequence[FilePatch], earlier: LineMap = same_line) -> LineMap:
    """A line of a patched file → the same line before these patches, and before the earlier
    rounds' (`earlier`): a line of the file as the user has it. None: a patch wrote it."""
    texts = {p.path: (p.before, p.after) for p in patches}

    def to_base(path: str, line: int) -> int | None:
        found = original_line(*texts[path], line) if path in texts else line
        return None if found is None else earlier(path, found)

    return to_base


def judge_trial(
    trial: Trial,
    baseline: Mapping[str, Observation],
    after: Mapping[str, Observation],
    compare: ResultComparer,
    later: FixableLater = never,
    earlier: LineMap = same_line,
) -> Judgement:
    """`judge` on the trial's entrypoints that ran both times; never ok where the baseline run
    itself did not succeed."""
    seen = {n: after[n] for n in trial.names if n in after and n in baseline}
    before = {n: baseline[n] for n in seen}
    judgement = judge(trial.goals, before, seen, compare, later, lines_before(trial.patches, earlier))
    unusable = [n for n in before if before[n].outcome.status is not Status.OK]
    if not unusable:
        return judgement
    why = f"the baseline run of {', '.join(unusable)} did not succeed, so nothing can be verified there"
    return replace(judgement, ok=False, reason="; ".join(filter(None, [why, judgement.reason])))
