"""`gbbot fix` end to end: baseline run → rounds of (plan → verify each candidate → put the
verified patches in place in the scratch copy → re-run, and plan for what that revealed) → (apply).
It composes the package's steps: `workspace` (the repository), `trials` (runs in a scratch copy),
`batch` (verification runs), `apply` (patches put together, and written into the repository) and
`rounds` (what carries from one round to the next)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from gbbot.backends.contract import Backend
from gbbot.checks.tree import CheckOptions, select
from gbbot.core.config import Config
from gbbot.core.fixes import Counts, FixResult, FixStatus, bounded
from gbbot.core.measured import DEFAULT_REPEAT, Measured
from gbbot.core.model import ChangeState, GraphBreak, Mode, Origin, Report
from gbbot.core.words import plural
from gbbot.edges import git
from gbbot.fix import plan as planning
from gbbot.fix import rounds as rounding
from gbbot.fix.apply import Chosen, InPlace, put_in_place, write_all
from gbbot.fix.batch import Scope, Trial, verify_all
from gbbot.fix.compiles import ConfigFile
from gbbot.fix.measure import measure
from gbbot.fix.patch import FilePatch, original_line
from gbbot.fix.rounds import Round
from gbbot.fix.same_output import ChildComparer
from gbbot.fix.trials import Lens, Runs, Trials, reproducible_only
from gbbot.fix.verify import (
    Judgement,
    LineMap,
    Observation,
    ResultComparer,
    Scratch,
    changed_behaviour,
    default_backend,
    judge,
    never,
    settled,
    totals,
)
from gbbot.fix.workspace import config_path, copy_reader, library_lookup, python_files
from gbbot.recipes.base import SourceError

Found = list[tuple[GraphBreak, tuple[str, ...]]]
# Said of the entrypoints `gbbot fix` runs last, with every patch in place.
BYSTANDERS = "entrypoints that no patch was verified on but that read a patched file, run with every patch"


@dataclass(frozen=True)
class FixOptions:
    apply: bool = False
    only: tuple[str, ...] = ()  # gb ids or recipe ids
    fingerprints: tuple[str, ...] = ()
    entrypoints: tuple[str, ...] = ()  # run only these (no report given)
    mode: Mode | None = None
    jobs: int = 2
    backend: Backend | None = None
    compare: ResultComparer | None = None  # None: in a child of the backend (same_output.ChildComparer)
    progress: Callable[[str], None] = field(default=lambda _message: None)
    rounds: int = rounding.DEFAULT_ROUNDS  # 1: fix only the breaks the first run shows
    measure: bool = False  # time each first-round verified fix, `repeat` faithful runs a side
    repeat: int = DEFAULT_REPEAT
    inductor_cache: Path | None = None  # Inductor's cache kept between runs; None: one of this run's own


@dataclass(frozen=True)
class FixRun:
    report: Report  # the baseline, with the fix results
    results: tuple[FixResult, ...]  # round by round, each in report order
    written: tuple[str, ...] = ()  # repository files written (apply)
    joint: tuple[Judgement, ...] = ()  # patches sharing a file or entrypoint, verified together
    notes: tuple[str, ...] = ()  # what the user should know: collisions, files left alone
    after: Report | None = None  # each entrypoint's last run: the patched scratch copy at the end
    unwritten: tuple[str, ...] = ()  # files whose verified patch was not written (apply)
    rounds: tuple[Round, ...] = ()
    left: tuple[GraphBreak, ...] = ()  # revealed by the last round, with no round left to fix them
    overall: Judgement | None = None  # the patches of every round against the unpatched runs
    measured: Measured | None = None  # --measure, more than one fix: all the patches together
    # entrypoints no patch was verified on that read a patched file, run with every patch in place
    bystanders: Judgement | None = None

    @property
    def totals(self) -> tuple[Counts, Counts]:
        """Breaks, graphs and eager frames before any patch → after the last round's, as runs measured them."""
        return totals(self.report.entrypoints), totals((self.after or self.report).entrypoints)

    @property
    def breaks(self) -> tuple[GraphBreak, ...]:
        """Every break a run showed: the baseline's, then those revealed round by round."""
        later = [b for r in self.rounds for b in r.revealed]
        return tuple({b.fingerprint: b for b in [*self.report.breaks, *later, *self.left]}.values())


def _trials(root: Path, scratch: Scratch, config: Config, options: FixOptions) -> Trials:
    backend = options.backend or default_backend(config, options.inductor_cache or scratch.base / "inductor")
    compare = options.compare or ChildComparer(scratch.root, scratch.base / "compare", config, backend)
    where = config_path(root, config)
    return Trials(scratch, config, options.mode, options.jobs, backend, compare, options.progress, where)


def _start(root: Path, trials: Trials, options: FixOptions, given: Report | None) -> Report:
    """The given report, or a run of the selected entrypoints (in the scratch copy, so that the
    baseline and the patched runs see the same paths) that is the baseline too."""
    if given is not None:
        return given
    names = [e.name for e in select(trials.config, CheckOptions(only=options.entrypoints))]
    options.progress(f"running {len(names)} entrypoint{'s' * (len(names) != 1)} in a scratch copy…")
    return replace(trials.start(names), commit=git.head_sha(root))


def _selected(found: Found, options: FixOptions) -> Found:
    return [f for f in found if planning.selected(f[0], options.only, options.fingerprints)]


def _in_report_order(
    found: Sequence[tuple[GraphBreak, tuple[str, ...]]], results: Iterable[FixResult]
) -> tuple[FixResult, ...]:
    by_fingerprint = {r.fingerprint: r for r in results}
    return tuple(by_fingerprint[b.fingerprint] for b, _ in found if b.fingerprint in by_fingerprint)


def with_fixes(report: Report, results: Iterable[FixResult]) -> Report:
    """The report with `results` as it keeps them: within the schema's bounds, so that this report
    reads the same as the one its JSON loads into."""
    return replace(report, fixes=tuple(bounded(r) for r in results))


@dataclass(frozen=True)
class Context:
    """What every round of one `gbbot fix` shares."""

    root: Path
    config: Config
    options: FixOptions
    trials: Trials
    read: planning.FileReader
    paths: tuple[str, ...]  # the repository's Python files: where compile sites are searched


Verified = dict[str, tuple[FilePatch, ...]]  # a verified fix's fingerprint → its patches, as verified


def _round(
    ctx: Context,
    number: int,
    found: Found,
    report: Report,
    texts: tuple[dict[str, str], dict[str, str]],
    patches: Verified,
    levers: bool = False,
) -> tuple[list[FixResult], InPlace | None]:
    """Plan and verify fixes for `found` on the scratch copy as it stands, then put the verified
    ones in place and re-run what they touch. `texts`: each patched file's text before any round,
    and as earlier rounds left it; `patches` gets each verified fix's patches; `levers`: the last
    round's (`plan`'s)."""
    originals, current = texts
    scope = Scope(report, ctx.config)
    lookup = library_lookup(ctx.root, ctx.config)
    planned, others = planning.plan(found, ctx.read, lookup, ctx.paths, _config_file(ctx), levers)
    later = functools.partial(fixable_later, ctx.read) if number < ctx.options.rounds and not levers else never
    ctx.trials.begin_round(number, Lens(later, functools.partial(_in_original, originals, current)))
    verified = verify_all(planned, scope, ctx.trials.attempt, ctx.options.progress)
    chosen: list[Chosen] = [
        (item, candidate) for item, (_, candidate) in zip(planned, verified, strict=True) if candidate
    ]
    patches.update((result.fingerprint, candidate.patches) for result, candidate in verified if candidate)
    fixes = [rounding.on_original(result, candidate, originals, current) for result, candidate in verified]
    others = [rounding.on_original(result, None, originals, current) for result in others]
    results = rounding.numbered(_in_report_order(found, [*others, *fixes]), number)
    if not chosen:
        return results, None
    in_place = put_in_place(scope, chosen, ctx.trials.keep, ctx.options.progress, ctx.trials.attempt)
    return [_left_out(r, in_place.dropped) for r in results], in_place


def _settle(
    in_place: InPlace, originals: dict[str, str], current: dict[str, str], joint: list[Judgement], notes: list[str]
) -> None:
    """A round's patches in place: each file's text before any round (kept) and as it stands now."""
    for patch in in_place.patches:
        originals.setdefault(patch.path, patch.before)
        current[patch.path] = patch.after
    joint += in_place.joint
    notes += in_place.notes


def _still_there(results: Sequence[FixResult], report: Report, options: FixOptions) -> Found:
    """The breaks the last runs still show that no verified patch is for (a scaffold, advice, a
    dropped fix): what the last round tries the `nested_graph_breaks` lever on."""
    unfixed = {r.fingerprint for r in results if r.status in (FixStatus.SCAFFOLD, FixStatus.ADVICE, FixStatus.DROPPED)}
    return [f for f in _selected(planning.found_breaks(report), options) if f[0].fingerprint in unfixed]


def _levered(results: Sequence[FixResult], levers: Sequence[FixResult]) -> list[FixResult]:
    """The last round's verdicts in the results: a kept lever keeps beside it what the break had
    (why no patch removes it, its options or scaffold: the break stays); one not kept is said in
    the break's reason."""
    by_fingerprint = {r.fingerprint: r for r in levers}
    merged: list[FixResult] = []
    for result in results:
        lever = by_fingerprint.get(result.fingerprint)
        if lever is not None and lever.status is FixStatus.VERIFIED:
            result = replace(
                lever, reason=result.reason, advice=result.advice, scaffold=result.scaffold, tried=result.tried
            )
        elif lever is not None:
            result = replace(result, reason=f"{result.reason}; {lever.variant}: {lever.reason} (tried, not kept)")
        merged.append(result)
    return merged


def _config_file(ctx: Context) -> ConfigFile | None:
    """The configuration as the scratch copy holds it now (a `model:` entry's setting goes there)."""
    path = config_path(ctx.root, ctx.config)
    try:
        return ConfigFile(path, ctx.read(path)) if path else None
    except planning.Unpatchable:
        return None


def _left_out(result: FixResult, dropped: dict[str, str]) -> FixResult:
    """A fix verified alone whose patch was left out of its group (the others hold together without
    it): dropped, saying why, with no diff to apply."""
    why = dropped.get(result.fingerprint)
    if why is None or result.status is not FixStatus.VERIFIED:
        return result
    summary = f"not kept ({why}); alone: {result.summary}"  # one account: the verdict first
    return replace(result, status=FixStatus.DROPPED, reason=why, summary=summary, diff=None, hunks=())


def _in_original(originals: dict[str, str], current: dict[str, str], path: str, line: int) -> int | None:
    """A line of the scratch copy's text → the same line of the user's file (None: a patch wrote it)."""
    return original_line(originals[path], current[path], line) if path in current else line


# Said of a break with no fix of its own that the last runs no longer show.
ALONGSIDE = "gone once the verified patches are in place: a fix for another break removes it too"


def _removed_alongside(results: list[FixResult], first: Runs, last: Runs, to_base: LineMap) -> list[FixResult]:
    """Results for breaks with no fix of their own (a scaffold, advice) that the last runs no
    longer show, fixed rather than hidden by the diff's rule, say so: a verified patch for another
    break removed them too (XLM's second `assert` on an `.item()` is checked at run time once the
    first one's override turns `capture_scalar_outputs` on)."""
    gone: set[str] = set()
    for name, before in first.items():
        after = last.get(name)
        if after is not None and after is not before:
            gone |= {c.fingerprint for c in settled(before, after, to_base) if c.state is ChangeState.FIXED}
    left = (FixStatus.SCAFFOLD, FixStatus.ADVICE)
    return [
        replace(r, reason=f"{r.reason}; {ALONGSIDE}") if r.status in left and r.fingerprint in gone else r
        for r in results
    ]


def fixable_later(read: planning.FileReader, brk: GraphBreak) -> bool:
    """Would a later round try a patch for this break? Its line, as the scratch copy holds it now,
    is one a recipe rewrites (an `.item()` whose number decides an `if` is not: capturing it only
    moves the break)."""
    if brk.origin is Origin.TORCH or brk.ignored:
        return False
    try:
        found, _ = planning.candidates(brk, read(brk.file), read)
    except (planning.Unpatchable, SourceError):
        return False
    return bool(found)


def named(breaks: Iterable[GraphBreak]) -> str:
    """`GB0124 item_capture at model.py:12, …`: breaks named on one line."""
    return ", ".join(f"{b.gb_id or b.gb_type} {b.fix or ''} at {b.file}:{b.line}".replace("  ", " ") for b in breaks)


def _overall(trials: Trials, rounds: list[Round]) -> Judgement | None:
    """Every round's patches at once against the unpatched runs: when later rounds built on
    earlier ones, what the user gets is one change, and it is checked as one."""
    if sum(1 for r in rounds if r.fixed) < 2:
        return None  # one round's patches: each verified, together where they meet
    first, last = trials.first, trials.standing
    names = [n for n in last if n in first and last[n] is not first[n]]
    return judge((), first, {n: last[n] for n in names}, trials.compare)


def _reads_any(observation: Observation, paths: set[str]) -> bool:
    """Whether the run read one of `paths`; True where it kept no record of its reads (unknown)."""
    reads = observation.outcome.reads
    return reads is None or reads.overflow or not paths.isdisjoint(reads.files)


def _bystanders(trials: Trials, report: Report, final: Sequence[FilePatch]) -> Judgement | None:
    """The report's entrypoints that read a patched file (by their baseline run's record of what
    they read; any whose run kept no record; one that never ran in the scratch copy is run
    unpatched first) but were never run with a patch in place, run once with every
    patch, judged against their unpatched runs and, where a patch turns on a setting that changes
    what the compiler is given, confirmed with that compiler. A setting written into a helper that
    compiles every model holds for models none of whose breaks it was verified on (`allow_rnn` for
    an LSTM run without autograd, in a helper that also compiles one trained with it: torch 2.13's
    Inductor cannot compile that one). None when there is none."""
    if not final:
        return None
    first, last = trials.first, trials.standing
    known = {e.name for e in trials.config.entrypoints}
    missing = [e.name for e in report.entrypoints if e.name in known and e.name not in first and e.name not in last]
    if missing:  # handed a report (the action): these never ran in the scratch copy, unpatched
        with trials.without(final):
            trials.fill(missing, into=first)
    root = trials.scratch.root
    code = [p for p in final if p.path != trials.config_file]  # a `compile:` option is its entry's alone
    paths = {str(root / p.path) for p in code} | {str((root / p.path).resolve()) for p in code}
    names = sorted(n for n, run in first.items() if last.get(n, run) is run and _reads_any(run, paths))
    if not names:
        return None
    trials.progress(f"running {', '.join(names)}, which read a patched file, with every patch in place…")
    _report, after = trials.observe(names)
    before = {n: first[n] for n in names if n in after}
    differing = [n for n in before if changed_behaviour(before[n], after[n], trials.compare) is not None]
    if differing:  # a result that differs unpatched too says nothing of the patches
        with trials.without(final):
            trials.reproducible(differing, first)
    compare = functools.partial(reproducible_only, trials)
    judgement = judge((), before, after, compare)
    lost = [n for n in names if n not in after]  # not run: unknown, so not held
    if lost:
        why = f"{', '.join(lost)} could not be run with the patches in place"
        judgement = replace(judgement, ok=False, reason="; ".join(filter(None, [why, judgement.reason])))
    (confirmed,) = trials.confirmed([Trial(tuple(final), (), tuple(names))], [judgement], final, first, compare)
    return confirmed or judgement


def _measured(
    ctx: Context, results: list[FixResult], verified: Verified, final: Sequence[FilePatch]
) -> tuple[list[FixResult], Measured | None]:
    """`--measure`: each first-round verified fix timed on its own against the unpatched copy
    (later rounds' fixes were verified on top of earlier patches, so they are measured only in
    the whole), and, when more than one fix was kept, every round's patches together."""
    ctx.trials.scratch.write(final, after=False)  # the copy as the user has it
    timed: list[FixResult] = []
    for result in results:
        patches = verified.get(result.fingerprint)
        if result.status is FixStatus.VERIFIED and result.round == 1 and patches and result.entrypoints:
            result = replace(result, measured=measure(ctx.trials, patches, result.entrypoints, ctx.options.repeat))
        timed.append(result)
    names = tuple(dict.fromkeys(n for r in results if r.status is FixStatus.VERIFIED for n in r.entrypoints))
    several = sum(r.status is FixStatus.VERIFIED for r in results) > 1
    combined = measure(ctx.trials, final, names, ctx.options.repeat) if several and final and names else None
    return timed, combined


def fix(root: Path, config: Config, options: FixOptions = FixOptions(), report: Report | None = None) -> FixRun:
    """Find (or take) the breaks, verify a patch for each fixable one, and fix what those patches
    reveal in further rounds (at most `options.rounds`); apply on request."""
    with Scratch(root) as scratch:
        trials = _trials(root, scratch, config, options)
        first_report = _start(root, trials, options, report)
        ctx = Context(root, config, options, trials, copy_reader(root, scratch.root), python_files(root))
        found = _selected(planning.found_breaks(first_report), options)
        current_report = first_report
        originals: dict[str, str] = {}
        current: dict[str, str] = {}
        results: list[FixResult] = []
        rounds: list[Round] = []
        joint: list[Judgement] = []
        notes: list[str] = []
        revealed: Found = []
        verified: Verified = {}
        seen = {b.fingerprint for b, _ in found}
        for number in range(1, options.rounds + 1):
            if number > 1:
                options.progress(
                    f"round {number}: fixing what round {number - 1} revealed ({named(b for b, _ in revealed)})…"
                )
            texts = (originals, current)
            round_results, in_place = _round(ctx, number, found, current_report, texts, verified)
            results += round_results
            fixed = len(in_place.kept) if in_place else 0
            rounds.append(Round(number, len(found), tuple(b for b, _ in revealed), fixed))
            if in_place is None:
                found = []
                break
            _settle(in_place, originals, current, joint, notes)
            shown = rounding.revealed_breaks(trials.baseline, trials.standing)
            current_report = rounding.merged(current_report, trials.standing)
            found = [f for f in _selected(shown, options) if f[0].fingerprint not in seen]
            seen.update(b.fingerprint for b, _ in found)
            revealed = [(rounding.in_original(b, originals, current), names) for b, names in found]
            if not found:
                break
        still = _still_there(results, current_report, options)
        if still:  # the last round: the lever, over the breaks no fix removed
            options.progress(f"last round: nested_graph_breaks for {plural(len(still), 'break')} no fix removed…")
            lever_results, in_place = _round(
                ctx, len(rounds) + 1, still, current_report, (originals, current), verified, True
            )
            results = _levered(results, lever_results)
            if in_place is not None and in_place.kept:  # a lever tried and not kept is said in its break's reason
                rounds.append(Round(len(rounds) + 1, len(still), (), len(in_place.kept), lever=True))
            if in_place is not None:
                _settle(in_place, originals, current, joint, notes)
                current_report = rounding.merged(current_report, trials.standing)
        overall = _overall(trials, rounds)
        bystanders = _bystanders(trials, first_report, rounding.final_patches(originals, current))
        to_base = functools.partial(_in_original, originals, current)
        results = _removed_alongside(results, trials.first, trials.standing, to_base)
        combined: Measured | None = None
        if options.measure:
            results, combined = _measured(ctx, results, verified, rounding.final_patches(originals, current))
    patches = rounding.final_patches(originals, current)
    written: list[str] = []
    held = bystanders is None or bystanders.ok
    if options.apply and patches and (overall is None or overall.ok) and held:
        written, write_notes = write_all(root, patches)
        notes += write_notes
    elif options.apply and overall is not None and not overall.ok:
        notes.append(f"every round's patches together, against the unpatched runs: {overall.reason}; nothing written")
    if not held and bystanders is not None:
        said = "; nothing written" if options.apply else "; `--apply` writes nothing"
        notes.append(f"{BYSTANDERS}: {bystanders.reason}{said}")
    unwritten = tuple(p.path for p in patches if p.path not in written) if options.apply else ()
    left = tuple(rounding.in_original(b, originals, current) for b, _ in found)
    final = with_fixes(first_report, results)
    after = current_report if current_report is not first_report else None
    return FixRun(
        final,
        tuple(results),
        tuple(written),
        tuple(joint),
        tuple(notes),
        after,
        unwritten,
        tuple(rounds),
        left,
        overall,
        combined,
        bystanders,
    )
