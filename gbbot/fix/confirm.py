"""A fast-mode verdict on a setting that changes what the compiler is given, confirmed with the
compiler itself.

Fast mode swaps the entrypoint's backend for one that generates no code: breaks are Dynamo's and
stay the same, and runs are quick. Some settings are different: with `capture_scalar_outputs` or
`capture_dynamic_output_shape_ops` on, Dynamo puts numbers and shapes read from tensors into the
graph (unbacked symbols), and with `allow_rnn` the recurrent modules it otherwise leaves alone; the
backend must compile graphs it never saw before. Inductor (torch 2.13) fails on some of them —
"InductorError: TypeError: BooleanAtom not allowed in this context" on a VITS model — where fast
mode, generating no code, passes. So a patch that turns one of them on is run once more in
faithful mode (the backend the code names) before it counts as verified:

- the patched faithful run must end as the baseline run did, with results equal to it;
- where they differ, an unpatched faithful run decides (the compiler's own numbers, or a failure it
  has without the patch too, are not the patch's doing).

One faithful run per distinct patch and set of entrypoints: a setting that several breaks need is
the same patch each time, so it is confirmed once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gbbot.core.model import Mode
from gbbot.fix.batch import Trial
from gbbot.fix.patch import FilePatch
from gbbot.fix.verify import Judgement, Observation, changed_behaviour, observe

if TYPE_CHECKING:
    from gbbot.fix.rerun import Rerun

# Settings under which Dynamo hands the compiler numbers and shapes read from tensors, or (with
# `allow_rnn`, which torch calls experimental) the recurrent modules it otherwise leaves alone.
COMPILED_SETTINGS = ("capture_scalar_outputs", "capture_dynamic_output_shape_ops", "allow_rnn")
# As code (`flag=True`, `config.flag = True`) or as a model: entry's option (`flag: true`).
_TURNED_ON = {flag: re.compile(rf"\b{flag}\b['\"]?\s*[=:]\s*true\b", re.IGNORECASE) for flag in COMPILED_SETTINGS}


def settings_turned_on(patches: Iterable[FilePatch]) -> tuple[str, ...]:
    """The compiled settings the patches turn on (more mentions of `flag=True` after than before)."""
    patches = list(patches)
    return tuple(
        flag
        for flag, pattern in _TURNED_ON.items()
        if any(len(pattern.findall(p.after)) > len(pattern.findall(p.before)) for p in patches)
    )


CONFIRMED = "confirmed in faithful mode"  # said in a confirmed fix's summary

Key = tuple[tuple[tuple[str, str], ...], tuple[str, ...]]


@dataclass
class Confirmations:
    """What faithful runs said, kept for the whole `gbbot fix`: per patch (its files' texts) and
    entrypoints, why the faithful run does not bear the fast verdict out ("" when it does); and
    each entrypoint's unpatched faithful run, beside the fast baseline run it was taken with.
    Mutable on purpose: a cache owned by the caller's `Rerun`."""

    verdicts: dict[Key, str] = field(default_factory=dict)
    unpatched: dict[str, tuple[Observation, Observation]] = field(default_factory=dict)


def key_of(trial: Trial) -> Key:
    return tuple(sorted((p.path, p.after) for p in trial.patches)), tuple(sorted(trial.names))


def _fast_pass(rerun: Rerun, judgement: Judgement | None) -> bool:
    """A verdict of fast mode (no code generated) that the trial passed."""
    return judgement is not None and judgement.ok and (rerun.mode or rerun.config.mode) is Mode.FAST


def wanted(rerun: Rerun, trial: Trial, judgement: Judgement | None) -> bool:
    """Whether the trial's fast verdict still needs a faithful run: verified in fast mode, by a
    patch that turns on a compiled setting, and not confirmed before."""
    if not _fast_pass(rerun, judgement):
        return False
    return bool(settings_turned_on(trial.patches)) and key_of(trial) not in rerun.confirmations.verdicts


def faithful_runs(rerun: Rerun, trials: Sequence[Trial]) -> dict[str, Observation]:
    """One faithful run of the trials' entrypoints, with their patches in place (the caller's)."""
    names = sorted({n for trial in trials for n in trial.names})
    if not names:
        return {}
    flags = sorted({f for trial in trials for f in settings_turned_on(trial.patches)})
    rerun.progress(
        f"confirming {' and '.join(flags)} with the compiler the code names (faithful mode): {', '.join(names)}…"
    )
    return observe(rerun.scratch, rerun.config, names, Mode.FAITHFUL, rerun.jobs, rerun.backend)[1]


def settle(
    rerun: Rerun,
    baseline: Mapping[str, Observation],
    trial: Trial,
    patched: Mapping[str, Observation],
    unpatched: Mapping[str, Observation],
) -> str:
    """Why the trial's faithful runs do not bear out its fast verdict ("" when they do), recorded.
    A patched run that differs from the fast baseline run is compared with the unpatched faithful
    one; with none to compare with, it is not borne out."""
    problems: list[str] = []
    for name in trial.names:
        if name not in baseline:
            continue
        if name not in patched:
            problems.append(f"{name} could not be run in faithful mode")
            continue
        if changed_behaviour(baseline[name], patched[name], rerun.compare) is None:
            continue
        if name not in unpatched:
            problems.append(f"{name} differs from its fast run, and has no unpatched faithful run to compare with")
            continue
        differs = changed_behaviour(unpatched[name], patched[name], rerun.compare)
        problems += [differs] if differs else []
    said = "; ".join(problems)
    rerun.confirmations.verdicts[key_of(trial)] = said
    return said


def needing_unpatched(
    rerun: Rerun, baseline: Mapping[str, Observation], trials: Sequence[Trial], patched: Mapping[str, Observation]
) -> list[str]:
    """The entrypoints whose patched faithful run differs from the fast baseline run and that have
    no unpatched faithful run beside that baseline run yet."""
    known = known_unpatched(rerun, baseline)
    return sorted(
        {
            n
            for trial in trials
            for n in trial.names
            if n in baseline
            and n in patched
            and n not in known
            and changed_behaviour(baseline[n], patched[n], rerun.compare) is not None
        }
    )


def known_unpatched(rerun: Rerun, baseline: Mapping[str, Observation]) -> dict[str, Observation]:
    """The unpatched faithful runs taken beside the baseline runs that stand now."""
    return {n: run for n, (fast, run) in rerun.confirmations.unpatched.items() if baseline.get(n) is fast}


def run_unpatched(rerun: Rerun, baseline: Mapping[str, Observation], names: Sequence[str]) -> None:
    """An unpatched faithful run of `names` (the scratch copy as the baseline saw it), recorded."""
    if not names:
        return
    rerun.progress(f"a faithful run of {', '.join(names)} without the patch, to compare with…")
    runs = observe(rerun.scratch, rerun.config, names, Mode.FAITHFUL, rerun.jobs, rerun.backend)[1]
    rerun.confirmations.unpatched.update((n, (baseline[n], runs[n])) for n in names if n in runs)


def confirmed(
    rerun: Rerun,
    baseline: Mapping[str, Observation],
    trials: Sequence[Trial],
    judgements: Sequence[Judgement | None],
    unpatch: Callable[[bool], None],
) -> list[Judgement | None]:
    """The trials' fast verdicts, confirmed in faithful mode where they need it. Called with the
    trials' patches in place; `unpatch(True)` takes them out for an unpatched run, `unpatch(False)`
    puts them back."""
    confirming = [t for t, j in zip(trials, judgements, strict=True) if wanted(rerun, t, j)]
    if confirming:
        patched = faithful_runs(rerun, confirming)
        missing = needing_unpatched(rerun, baseline, confirming, patched)
        if missing:
            unpatch(True)
            try:
                run_unpatched(rerun, baseline, missing)
            finally:
                unpatch(False)
        unpatched = known_unpatched(rerun, baseline)
        for trial in confirming:
            settle(rerun, baseline, trial, patched, unpatched)
    return [judged(rerun, t, j) for t, j in zip(trials, judgements, strict=True)]


def judged(rerun: Rerun, trial: Trial, judgement: Judgement | None) -> Judgement | None:
    """The fast verdict, failed where the faithful runs did not bear it out."""
    if not _fast_pass(rerun, judgement):
        return judgement
    flags = settings_turned_on(trial.patches)
    problem = rerun.confirmations.verdicts.get(key_of(trial)) if flags else None
    if problem is None:
        return judgement
    if not problem:
        return replace(judgement, summary=f"{judgement.summary}; {CONFIRMED}")
    why = (
        f"with {' and '.join(flags)} on, the compiler the code names fails where fast mode (which "
        f"generates no code) passed: {problem}"
    )
    return Judgement(False, why, judgement.summary, judgement.before, judgement.after, judgement.revealed)
