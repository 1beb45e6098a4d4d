"""The trial service of one `gbbot fix`: a patch set and the entrypoints it may affect in, a
verdict out. Every run happens in one scratch copy, and the service owns what the runs taught:

- each entrypoint's run without this round's patches (its baseline), taken when a trial first
  needs it, and the runs standing once a round's patches are in place (the next round's baseline);
- how a second unpatched run of an entrypoint differs from the first, asked once, when a patched
  run's result differs (then a difference after a patch says nothing);
- a fast-mode verdict on a setting that changes what the compiler is given, confirmed with the
  compiler itself. Fast mode swaps the entrypoint's backend for one that generates no code: breaks
  are Dynamo's and stay the same. With `capture_scalar_outputs` or
  `capture_dynamic_output_shape_ops` on, Dynamo puts numbers and shapes read from tensors into the
  graph, and with `allow_rnn` the recurrent modules it otherwise leaves alone; the backend must
  compile graphs it never saw, and Inductor (torch 2.13) fails on some ("InductorError: TypeError:
  BooleanAtom not allowed in this context" on a VITS model). So such a patch is run once more in
  faithful mode (the backend the code names): that run must end as the baseline run did, with
  results equal; where they differ, an unpatched faithful run decides (the compiler's own numbers,
  or a failure it has without the patch too, are not the patch's doing). One faithful run per
  distinct patch and set of entrypoints: a setting several breaks need is confirmed once.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

from gbbot.backends.contract import Backend
from gbbot.core.config import Config, ConfigError, Entrypoint, parse_config
from gbbot.core.model import Mode, Report, Status, Tool
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

# Settings under which Dynamo hands the compiler numbers and shapes read from tensors, or (with
# `allow_rnn`, which torch calls experimental) the recurrent modules it otherwise leaves alone.
COMPILED_SETTINGS = ("capture_scalar_outputs", "capture_dynamic_output_shape_ops", "allow_rnn", "nested_graph_breaks")
# As code (`flag=True`, `config.flag = True`) or as a model: entry's option (`flag: true`).
_TURNED_ON = {flag: re.compile(rf"\b{flag}\b['\"]?\s*[=:]\s*true\b", re.IGNORECASE) for flag in COMPILED_SETTINGS}
CONFIRMED = "confirmed in faithful mode"  # said in a confirmed fix's summary
Runs = dict[str, Observation]  # entrypoint name → its run
Key = tuple[tuple[tuple[str, str], ...], tuple[str, ...]]  # a patch (its files' texts) and entrypoints


def settings_turned_on(patches: Iterable[FilePatch]) -> tuple[str, ...]:
    """The compiled settings the patches turn on (more mentions of `flag=True` after than before)."""
    patches = list(patches)
    return tuple(
        flag
        for flag, pattern in _TURNED_ON.items()
        if any(len(pattern.findall(p.after)) > len(pattern.findall(p.before)) for p in patches)
    )


def key_of(trial: Trial) -> Key:
    return tuple(sorted((p.path, p.after) for p in trial.patches)), tuple(sorted(trial.names))


@dataclass(frozen=True)
class Lens:
    """How one round reads a patched run: `later`, a break the next round would try (none in the
    last round); `earlier`, a line of the round's text → the user's (earlier rounds' patches)."""

    later: FixableLater = never
    earlier: LineMap = same_line


def lines_before(patches: Sequence[FilePatch], earlier: LineMap = same_line) -> LineMap:
    """A line of a patched file → the same line before these patches, and before the earlier
    rounds' (`earlier`): a line of the file as the user has it. None: a patch wrote it."""
    texts = {p.path: (p.before, p.after) for p in patches}

    def to_base(path: str, line: int) -> int | None:
        found = original_line(*texts[path], line) if path in texts else line
        return None if found is None else earlier(path, found)

    return to_base


def judge_trial(
    trial: Trial, baseline: Runs, after: Mapping[str, Observation], compare: ResultComparer, lens: Lens
) -> Judgement:
    """`judge` on the trial's entrypoints that ran both times; never ok where the baseline run
    itself did not succeed."""
    seen = {n: after[n] for n in trial.names if n in after and n in baseline}
    before = {n: baseline[n] for n in seen}
    judgement = judge(trial.goals, before, seen, compare, lens.later, lines_before(trial.patches, lens.earlier))
    if trial.cuts_graphs:
        judgement = _cut(judgement)
    unusable = [n for n in before if before[n].outcome.status is not Status.OK]
    if not unusable:
        return judgement
    why = f"the baseline run of {', '.join(unusable)} did not succeed, so nothing can be verified there"
    return replace(judgement, ok=False, reason="; ".join(filter(None, [why, judgement.reason])))


def _cut(judgement: Judgement) -> Judgement:
    """A lever that leaves the breaks holds only where the graphs are fewer and no frame more runs
    eagerly."""
    old, new = judgement.before, judgement.after
    rest = judgement.summary.split("; ", 1)[-1]  # not "removes a break": it is met fewer times, not gone
    summary = f"the break stays, resumed in its function; breaks met {old.breaks} → {new.breaks}; {rest}"
    if new.graphs < old.graphs and new.frames_skipped <= old.frames_skipped:
        return replace(judgement, summary=summary)
    eager = f"frames running eagerly {old.frames_skipped} → {new.frames_skipped}"
    why = f"it did not cut the graphs ({old.graphs} → {new.graphs}, {eager})"
    return replace(judgement, ok=False, reason="; ".join(filter(None, [judgement.reason, why])), summary=summary)


def _not_cut(name: str, before: Observation | None, after: Observation) -> str | None:
    """Why a lever's faithful run of `name` does not bear out its cut graphs (None: it does)."""
    if before is None:
        return f"{name} has no unpatched faithful run to count its graphs against"
    old, new = before.report, after.report
    if new.graph_count < old.graph_count and new.frames_skipped <= old.frames_skipped:
        return None
    return f"in {name}, graphs {old.graph_count} → {new.graph_count} with the compiler the code names"


class Trials:
    """The runs of one `gbbot fix` in `scratch`, and what they taught (see the module's doc)."""

    def __init__(
        self,
        scratch: Scratch,
        config: Config,
        mode: Mode | None,
        jobs: int,
        backend: Backend,
        compare: ResultComparer,
        progress: Callable[[str], None],
        config_file: str | None = None,
    ) -> None:
        self.scratch, self.config, self.mode, self.jobs = scratch, config, mode, jobs
        self.backend, self.compare, self.progress = backend, compare, progress
        self.config_file = config_file  # the configuration's path in the repository: a fix may edit it
        self._configs: dict[str, Config] = {}
        self._runs: dict[tuple, Observation] = {}  # (entrypoint, mode, patched texts it reads) → its run
        self.first: Runs = {}  # each entrypoint's run before any patch
        self.baseline: Runs = self.first  # the round's runs without its patches
        self.standing: Runs = {}  # the runs once the round's patches are in place
        self._lens = Lens()
        self._unstable: dict[str, str] = {}  # entrypoint → how two unpatched runs differ ("": they agree)
        self._verdicts: dict[Key, str] = {}  # faithful runs' word on a fast verdict ("": borne out)
        self._faithful: dict[str, tuple[Observation, Observation]] = {}  # (baseline run, unpatched faithful run)

    # --- runs --------------------------------------------------------------------------------

    def observe(
        self,
        names: Iterable[str],
        mode: Mode | None = None,
        jobs: int | None = None,
        time_calls: bool = False,
        fresh: bool = False,
    ) -> tuple[Report, Runs]:
        """Run the named entrypoints that the configuration still has, in the scratch copy as it
        stands (in the fix's mode unless told). An entrypoint that already ran in this mode on the
        same text of every patched file it reads is not run again (`fresh`: it is)."""
        config = self._config()
        mode = mode or self.mode or config.mode
        wanted = [n for n in names if config.entrypoint(n) is not None]
        keys = {n: self._state(n, mode) for n in wanted}
        known = {} if fresh or time_calls else {n: self._runs[k] for n, k in keys.items() if k in self._runs}
        missing = [n for n in wanted if n not in known]
        if not missing:  # (check() would take "no names" for "all of them")
            return Report(Tool(), None, mode, None, tuple(known[n].report for n in wanted)), known
        report, runs = observe(self.scratch, config, missing, mode, jobs or self.jobs, self.backend, time_calls)
        self._runs.update((keys[n], run) for n, run in runs.items())
        runs = {**known, **runs}
        ran = tuple(runs[n].report for n in wanted if n in runs)
        return replace(report, entrypoints=ran), {n: runs[n] for n in wanted if n in runs}

    def _state(self, name: str, mode: Mode) -> tuple:
        """What a run of `name` in `mode` depends on that a patch may change: the text of each
        patched file it reads (by its first run's record; every patched file when there is none)."""
        first = self.first.get(name)
        reads = first.outcome.reads if first is not None else None
        root = self.scratch.root
        known = reads is not None and not reads.overflow

        def read_by(path: str) -> bool:
            return (
                not known
                or path == self.config_file
                or not {str(root / path), str((root / path).resolve())}.isdisjoint(reads.files)
            )  # type: ignore[union-attr]

        texts = []
        for path, original in sorted(self.scratch.written.items()):
            try:
                now = (root / path).read_bytes()
            except OSError:
                now = b""
            if now != original and read_by(path):  # (a file back as it was is no patch)
                texts.append((path, hashlib.sha256(now).hexdigest()))
        return name, mode, tuple(texts)

    def _config(self) -> Config:
        """The configuration as the scratch copy holds it (a patch may set a `model:` entry's
        `compile:` option); the one given where it is not in the repository or does not load."""
        if self.config_file is None:
            return self.config
        try:
            text = (self.scratch.root / self.config_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return self.config
        if not self._configs:
            self._configs[text] = self.config  # the first read: the text the configuration came from
        if text not in self._configs:
            try:
                self._configs[text] = parse_config(text, self.config.path)
            except ConfigError:
                self._configs[text] = self.config
        return self._configs[text]

    def start(self, names: Sequence[str]) -> Report:
        """The first run of `names`, without any patch: the first round's baseline."""
        report, runs = self.observe(names)
        self._add_baseline(runs)
        return report

    def _add_baseline(self, runs: Runs) -> None:
        self.baseline.update(runs)
        for name, run in runs.items():
            self.standing.setdefault(name, run)

    def fill(self, names: Iterable[str], into: Runs | None = None) -> None:
        """Run, unpatched, those of `names` the baseline (or the runs `into`) does not have yet."""
        runs = self.baseline if into is None else into
        missing = [n for n in names if n not in runs]
        if not missing:
            return
        self.progress(f"baseline run of {', '.join(missing)}…")
        found = self.observe(missing)[1]
        if runs is self.baseline:
            self._add_baseline(found)
        else:
            runs.update(found)

    def begin_round(self, number: int, lens: Lens) -> None:
        """From round 2 on, the runs standing after the last round are the baseline."""
        self._lens = lens
        if number > 1:
            self.baseline = self.standing
            self.standing = dict(self.standing)

    @contextmanager
    def without(self, patches: Sequence[FilePatch]) -> Iterator[None]:
        """The scratch copy with `patches` taken out for a while."""
        self.scratch.write(patches, after=False)
        try:
            yield
        finally:
            self.scratch.write(patches)

    # --- trials -------------------------------------------------------------------------------

    def attempt(self, trials: Sequence[Trial]) -> tuple[list[Judgement], Report]:
        """Put every trial's patches in place at once (they touch different files), run the
        union of their entrypoints, and judge each trial on its own entrypoints."""
        names = tuple(dict.fromkeys(n for trial in trials for n in trial.names))
        self.fill(names)
        patches = [p for trial in trials for p in trial.patches]
        self.scratch.write(patches)
        try:  # judged with the patches in place: `later` reads the patched files
            after_report, after = self.observe(names)
            fast = [judge_trial(t, self.baseline, after, self.compare, self._lens) for t in trials]
            judged = [c or f for c, f in zip(self.confirmed(trials, fast, patches), fast, strict=True)]
        finally:
            self.scratch.write(patches, after=False)
        differing = {n for t, j in zip(trials, judged, strict=True) if not j.ok for n in self._changed(after, t)}
        self.reproducible(differing)
        return [self._with_unstable(t, j) for t, j in zip(trials, judged, strict=True)], after_report

    def keep(self, trials: Sequence[Trial], judged: Sequence[bool]) -> tuple[list[Judgement | None], Report]:
        """Put every trial's patches in place for good and run the union of their entrypoints: the
        next round starts from this. Trials marked in `judged` are judged against the baseline;
        one that fails is taken back out, and its entrypoints keep their baseline runs. The runs
        of the rest stand (`standing`)."""
        names = tuple(dict.fromkeys(n for trial in trials for n in trial.names))
        self.fill(names)
        patches = [p for trial in trials for p in trial.patches]
        self.scratch.write(patches)
        report, after = self.observe(names)
        judgements = [
            judge_trial(t, self.baseline, after, self.compare, self._lens) if wanted else None
            for t, wanted in zip(trials, judged, strict=True)
        ]
        judgements = self.confirmed(trials, judgements, patches)
        for trial, judgement in zip(trials, judgements, strict=True):
            if judgement is not None and not judgement.ok:
                self.scratch.write(trial.patches, after=False)
                continue
            self.standing.update((n, after[n]) for n in trial.names if n in after)
        return judgements, report

    def _changed(self, after: Mapping[str, Observation], trial: Trial) -> list[str]:
        """The trial's entrypoints whose patched run ended or returned otherwise than the baseline's."""
        seen = [n for n in trial.names if n in after and n in self.baseline]
        return [n for n in seen if changed_behaviour(self.baseline[n], after[n], self.compare) is not None]

    def reproducible(self, names: Iterable[str], runs: Mapping[str, Observation] | None = None) -> None:
        """Run each of `names` once more without patches (the caller's scratch copy has none in
        place), once per `gbbot fix`, and note how that run differs from the first, if it does."""
        wanted = [n for n in dict.fromkeys(names) if n not in self._unstable]
        if not wanted:
            return
        runs = self.baseline if runs is None else runs
        self.progress(f"a second unpatched run of {', '.join(wanted)}, to see whether its result is reproducible…")
        _report, again = self.observe(wanted, fresh=True)
        for name in wanted:
            differs = changed_behaviour(runs[name], again[name], self.compare) if name in again else None
            self._unstable[name] = differs or ""

    def unstable(self, name: str) -> bool:
        return bool(self._unstable.get(name))

    def _with_unstable(self, trial: Trial, judgement: Judgement) -> Judgement:
        """A failed judgement that also says which of its entrypoints are not reproducible unpatched."""
        unstable = [(n, self._unstable[n]) for n in trial.names if self._unstable.get(n)]
        if judgement.ok or not unstable:
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

    # --- fast verdicts on compiled settings, confirmed in faithful mode --------------------------

    def _fast_pass(self, judgement: Judgement | None) -> bool:
        """A verdict of fast mode (no code generated) that the trial passed."""
        return judgement is not None and judgement.ok and (self.mode or self.config.mode) is Mode.FAST

    def _wanted(self, trial: Trial, judgement: Judgement | None) -> bool:
        """Whether the trial's fast verdict still needs a faithful run."""
        if not self._fast_pass(judgement):
            return False
        return bool(settings_turned_on(trial.patches)) and key_of(trial) not in self._verdicts

    def confirmed(
        self,
        trials: Sequence[Trial],
        judgements: Sequence[Judgement | None],
        patches: Sequence[FilePatch],
        baseline: Mapping[str, Observation] | None = None,
        compare: ResultComparer | None = None,
    ) -> list[Judgement | None]:
        """The trials' fast verdicts, confirmed in faithful mode where they need it. Called with
        `patches` (every trial's) in place; against `baseline` (the round's), results compared with
        `compare` (the fix's)."""
        baseline = self.baseline if baseline is None else baseline
        compare = compare or self.compare
        confirming = [t for t, j in zip(trials, judgements, strict=True) if self._wanted(t, j)]
        if confirming:
            names = sorted({n for trial in confirming for n in trial.names})
            flags = sorted({f for trial in confirming for f in settings_turned_on(trial.patches)})
            said = f"confirming {' and '.join(flags)} with the compiler the code names (faithful mode)"
            self.progress(f"{said}: {', '.join(names)}…")
            patched = self.observe(names, Mode.FAITHFUL)[1]
            missing = self._needing_unpatched(baseline, confirming, patched, compare)
            if missing:
                with self.without(patches):
                    self.progress(f"a faithful run of {', '.join(missing)} without the patch, to compare with…")
                    runs = self.observe(missing, Mode.FAITHFUL)[1]
                self._faithful.update((n, (baseline[n], runs[n])) for n in missing if n in runs)
            for trial in confirming:
                self._settle(baseline, trial, patched, compare)
        return [self._judged(t, j) for t, j in zip(trials, judgements, strict=True)]

    def _known_unpatched(self, baseline: Mapping[str, Observation]) -> dict[str, Observation]:
        """The unpatched faithful runs taken beside the baseline runs that stand now."""
        return {n: run for n, (fast, run) in self._faithful.items() if baseline.get(n) is fast}

    def _needing_unpatched(
        self,
        baseline: Mapping[str, Observation],
        trials: Sequence[Trial],
        patched: Mapping[str, Observation],
        compare: ResultComparer,
    ) -> list[str]:
        """The entrypoints whose patched faithful run differs from the fast baseline run, or whose
        graphs a lever must cut with that compiler too, and that have no unpatched faithful run
        beside that baseline run yet."""
        known = self._known_unpatched(baseline)
        return sorted(
            {
                n
                for trial in trials
                for n in trial.names
                if n in baseline
                and n in patched
                and n not in known
                and (trial.cuts_graphs or changed_behaviour(baseline[n], patched[n], compare) is not None)
            }
        )

    def _settle(
        self,
        baseline: Mapping[str, Observation],
        trial: Trial,
        patched: Mapping[str, Observation],
        compare: ResultComparer,
    ) -> None:
        """Why the trial's faithful runs do not bear out its fast verdict ("" when they do),
        recorded. A patched run that differs from the fast baseline run is compared with the
        unpatched faithful one; with none to compare with, it is not borne out."""
        unpatched = self._known_unpatched(baseline)
        problems: list[str] = []
        for name in (n for n in trial.names if n in baseline):
            if name not in patched:
                problems.append(f"{name} could not be run in faithful mode")
                continue
            if trial.cuts_graphs:  # the graphs must drop with that compiler too (a failure there is a break)
                problems += filter(None, [_not_cut(name, unpatched.get(name), patched[name])])
            if changed_behaviour(baseline[name], patched[name], compare) is None:
                continue
            if name not in unpatched:
                problems.append(f"{name} differs from its fast run, and has no unpatched faithful run to compare with")
            else:
                differs = changed_behaviour(unpatched[name], patched[name], compare)
                problems += [differs] if differs else []
        self._verdicts[key_of(trial)] = "; ".join(problems)

    def _judged(self, trial: Trial, judgement: Judgement | None) -> Judgement | None:
        """The fast verdict, failed where the faithful runs did not bear it out."""
        if not self._fast_pass(judgement):
            return judgement
        assert judgement is not None
        flags = settings_turned_on(trial.patches)
        problem = self._verdicts.get(key_of(trial)) if flags else None
        if problem is None:
            return judgement
        if not problem:
            return replace(judgement, summary=f"{judgement.summary}; {CONFIRMED}")
        why = (
            f"with {' and '.join(flags)} on, the compiler the code names fails where fast mode (which "
            f"generates no code) passed: {problem}"
        )
        return Judgement(False, why, judgement.summary, judgement.before, judgement.after, judgement.revealed)


def reproducible_only(trials: Trials, entrypoint: Entrypoint, before: str, after: str) -> str | None:
    """`trials.compare`, but equal for an entrypoint whose result differs between unpatched runs."""
    return None if trials.unstable(entrypoint.name) else trials.compare(entrypoint, before, after)
