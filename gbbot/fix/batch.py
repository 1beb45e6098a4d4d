"""Verification in rounds, as few runs as attribution allows: which candidates run together,
and what each judgement settles. Pure: the runs happen in the `attempt` function passed in."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gbbot.analysis.advice import options_for
from gbbot.core.config import Config
from gbbot.core.fixes import FixResult, FixStatus
from gbbot.core.model import GraphBreak, Report
from gbbot.fix.patch import FilePatch
from gbbot.fix.plan import Candidate, Planned
from gbbot.fix.verify import Goal, Judgement
from gbbot.recipes.base import Recipe
from gbbot.recipes.compile_site import NestedBreaks


@dataclass(frozen=True)
class Trial:
    """Patches to verify together, the breaks they must remove, the entrypoints to re-run."""

    patches: tuple[FilePatch, ...]
    goals: tuple[Goal, ...]
    names: tuple[str, ...]
    cuts_graphs: bool = False  # a lever that leaves the breaks: it must cut the graphs instead


# Put the trials' patches in place, re-run their entrypoints: one judgement per trial, and the runs.
Attempt = Callable[[Sequence[Trial]], tuple[list[Judgement], Report]]


@dataclass(frozen=True)
class Scope:
    """What a fix run works on once the baseline is known: its report and the configuration."""

    report: Report
    config: Config


def run_set(scope: Scope, planned: Planned, paths: Iterable[str] = ()) -> tuple[str, ...]:
    """The entrypoints a patch can affect: where the break appeared, and every entrypoint
    that reported a break in a patched file (it imports that file)."""
    files = {planned.brk.file, *paths}
    touching = [e.name for e in scope.report.entrypoints if any(b.file in files for b in e.breaks)]
    known = {e.name for e in scope.config.entrypoints}
    return tuple(n for n in dict.fromkeys([*planned.entrypoints, *touching]) if n in known)


def _judged(
    brk: GraphBreak,
    recipe: Recipe,
    status: FixStatus,
    judgement: Judgement,
    names: Sequence[str],
    tried: Sequence[str],
    **details: Any,
) -> FixResult:
    """What re-running said about one recipe's patch for `brk`."""
    return FixResult(
        brk.fingerprint,
        status,
        brk.file,
        brk.line,
        recipe=recipe.id,
        variant=recipe.variant,
        title=recipe.title,
        description=recipe.description,
        summary=judgement.summary,
        entrypoints=tuple(names),
        before=judgement.before,
        after=judgement.after,
        tried=tuple(tried),
        **details,
    )


def _verified(candidate: Candidate, judgement: Judgement, names: Sequence[str], tried: Sequence[str]) -> FixResult:
    details = {"diff": candidate.diff, "hunks": candidate.hunks, "revealed": judgement.revealed}
    return _judged(candidate.brk, candidate.recipe, FixStatus.VERIFIED, judgement, names, tried, **details)


def _dropped(
    planned: Planned, judgement: Judgement, names: Sequence[str], tried: Sequence[str], last: int = -1
) -> FixResult:
    """The verdict on variant `last` (the last one tried); where another break took the targeted
    one's place (`.item()` captured, then an `if` breaks on its number), that break's options come
    with it."""
    recipe = planned.candidates[last].recipe
    options = options_for(judgement.instead[0]) if judgement.instead else ()
    # one account: the summary leads with the verdict the reason gives, and the breaks it says the
    # patched run revealed are listed, as for a kept fix
    told = replace(judgement, summary=f"not kept ({judgement.reason}); the patched run: {judgement.summary}")
    return _judged(
        planned.brk,
        recipe,
        FixStatus.DROPPED,
        told,
        names,
        tried[:-1],
        reason=judgement.reason,
        advice=options,
        revealed=judgement.revealed,
    )


@dataclass(frozen=True)
class Work:
    """One fixable break on its way through verification: which variant is next, whether it must
    run alone (it failed next to others, which must not be held against it), what failed."""

    planned: Planned
    names: tuple[str, ...]
    index: int = 0
    alone: bool = False
    tried: tuple[str, ...] = ()

    @property
    def candidate(self) -> Candidate:
        return self.planned.candidates[self.index]

    def trial(self) -> Trial:
        if leaves_the_break(self.candidate):
            return Trial(self.candidate.patches, (), self.names, cuts_graphs=True)
        return Trial(self.candidate.patches, ((self.planned.brk, self.planned.entrypoints),), self.names)


def leaves_the_break(candidate: Candidate) -> bool:
    """The `nested_graph_breaks` lever: the break stays, the graphs around it join up."""
    return issubclass(candidate.recipe, NestedBreaks)


def pack(waiting: Sequence[Work]) -> list[Work]:
    """The next round: candidates in different files with different entrypoints run together
    (one run per entrypoint for all of them); one that must run alone, alone."""
    batch: list[Work] = []
    files: set[str] = set()
    names: set[str] = set()
    for work in waiting:
        if work.alone and batch:
            continue
        if files & set(work.candidate.paths) or names & set(work.names):
            continue
        batch.append(work)
        files.update(work.candidate.paths)
        names.update(work.names)
        if work.alone:
            break
    return batch


def advance(work: Work, judgement: Judgement, together: bool) -> Work | FixResult:
    """The result once a candidate is verified or the last variant failed alone; else the work
    that is next."""
    if judgement.ok:
        return _verified(work.candidate, judgement, work.names, work.tried)
    if together:
        return replace(work, alone=True)
    if judgement.unjudgeable:  # another variant would be judged by the same unreproducible runs
        return _dropped(work.planned, judgement, work.names, (*work.tried, ""), work.index)
    tried = (*work.tried, f"{work.candidate.recipe.variant}: {judgement.reason}")
    if work.index + 1 < len(work.planned.candidates):
        return replace(work, index=work.index + 1, alone=False, tried=tried)
    return _dropped(work.planned, judgement, work.names, tried)


def _described(work: Work) -> str:
    recipe, brk = work.candidate.recipe, work.planned.brk
    return f"{recipe.id} ({recipe.variant}) at {brk.file}:{brk.line}"


def verify_all(
    planned: Sequence[Planned], scope: Scope, attempt: Attempt, progress: Callable[[str], None]
) -> list[tuple[FixResult, Candidate | None]]:
    """Verify every fixable break's candidates, variants in order, as few runs as attribution
    allows: independent candidates share one run per entrypoint; a failure is re-checked alone."""
    works = {i: Work(p, run_set(scope, p, (f for c in p.candidates for f in c.paths))) for i, p in enumerate(planned)}
    finished: dict[int, tuple[FixResult, Candidate | None]] = {}
    while works:
        batch = pack(list(works.values()))
        progress(f"verifying {', '.join(_described(w) for w in batch)}…")
        judgements, _ = attempt([w.trial() for w in batch])
        for work, judgement in zip(batch, judgements, strict=True):
            i = next(i for i, w in works.items() if w is work)
            step = advance(work, judgement, together=len(batch) > 1)
            if isinstance(step, Work):
                works[i] = step
                continue
            del works[i]
            finished[i] = (step, work.candidate if step.status is FixStatus.VERIFIED else None)
    return [finished[i] for i in range(len(planned))]
