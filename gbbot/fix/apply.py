"""The verified patches of one round put together: combined per file, put in place for good in
the scratch copy (the next round starts there), those that share a file or an entrypoint verified
together once more (each was verified alone); and, on `--apply`, the final patches written into
the repository."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gbbot.core.model import Report
from gbbot.fix import plan as planning
from gbbot.fix.batch import Scope, Trial, run_set
from gbbot.fix.patch import FilePatch
from gbbot.fix.plan import Candidate, FileReader, Planned
from gbbot.fix.verify import Judgement, Observation
from gbbot.fix.workspace import write_patch


@dataclass(frozen=True)
class InPlace:
    """A round's verified patches once in place: what stands in the scratch copy now."""

    patches: tuple[FilePatch, ...]  # in place, one per file (`before`: the round's text)
    kept: frozenset[str]  # fingerprints of the fixes in those patches
    joint: tuple[Judgement, ...]  # patches that share a file or an entrypoint, verified together
    standing: dict[str, Observation]  # each entrypoint's latest run
    report: Report  # the runs after the patches were put in place
    notes: tuple[str, ...] = ()


Chosen = tuple[Planned, Candidate]
# Put trials' patches in place for good, judge those marked: (judgements, standing runs, report).
Keep = Callable[[Sequence[Trial], Sequence[bool]], "tuple[list[Judgement | None], dict[str, Observation], Report]"]


def joint_groups(scope: Scope, chosen: Sequence[Chosen]) -> list[list[Chosen]]:
    """Verified patches that share a file or an entrypoint, grouped (connected components).
    Each was verified alone; a group of several must also be verified together."""
    groups: list[tuple[set[str], list[Chosen]]] = []
    for item in chosen:
        keys = {*(f"file:{p}" for p in item[1].paths), *(f"run:{n}" for n in run_set(scope, item[0], item[1].paths))}
        touching = [g for g in groups if g[0] & keys]
        merged = (keys.union(*(g[0] for g in touching)), [*(m for g in touching for m in g[1]), item])
        groups = [g for g in groups if all(g is not t for t in touching)] + [merged]
    return [members for _, members in groups]


def _joint_trial(scope: Scope, group: Sequence[Chosen], patches: Sequence[FilePatch], left_out: set[str]) -> Trial:
    files = {path for _, c in group for path in c.paths}
    mine = tuple(p for p in patches if p.path in files)
    names = tuple(dict.fromkeys(n for planned, _ in group for n in run_set(scope, planned, files)))
    goals = tuple((p.brk, p.entrypoints) for p, _ in group if p.brk.fingerprint not in left_out)
    return Trial(mine, goals, names)


def _refused(trials: Sequence[Trial], joint: Sequence[Judgement]) -> tuple[set[str], list[str]]:
    """The files of every group that failed together, and a note for each such group."""
    refused: set[str] = set()
    notes: list[str] = []
    for trial, judgement in zip(trials, joint, strict=True):
        if not judgement.ok:
            files = ", ".join(p.path for p in trial.patches)
            refused.update(p.path for p in trial.patches)
            notes.append(f"not written: {files}: together the patches fail ({judgement.reason})")
    return refused, notes


def write_all(root: Path, patches: Sequence[FilePatch]) -> tuple[list[str], list[str]]:
    """Write each final patch into the repository: the files written, and a note for each one left
    alone (changed since the first round read it, or not writable)."""
    written: list[str] = []
    notes: list[str] = []
    for patch in patches:
        note = write_patch(root, patch)
        notes += [note] if note else []
        written += [] if note else [patch.path]
    return written, notes


def _verified_text(chosen: Sequence[Chosen]) -> FileReader:
    """Each file as its patches were verified on: combining re-applies the recipes to exactly that
    text (never to what the file holds now), and writing checks the file still holds it."""
    texts = {patch.path: patch.before for _, candidate in chosen for patch in candidate.patches}
    return lambda path: texts[path]


def put_in_place(scope: Scope, chosen: Sequence[Chosen], keep: Keep, progress: Callable[[str], None]) -> InPlace:
    """Combine the round's verified patches per file and put them in place; groups that share a
    file or an entrypoint are verified together, and a group that fails together is taken out."""
    patches, missed = planning.combine([c for _, c in chosen], _verified_text(chosen))
    left_out = {fingerprint for fingerprint, _ in missed}
    groups = joint_groups(scope, chosen)
    trials = [_joint_trial(scope, g, patches, left_out) for g in groups]
    judged = [len(g) > 1 for g in groups]
    if any(judged):
        count = sum(len(t.goals) for t, j in zip(trials, judged, strict=True) if j)
        progress(f"verifying the {count} patches that share files or entrypoints together…")
    verdicts, standing, report = keep(trials, judged)
    pairs = [(t, v) for t, v in zip(trials, verdicts, strict=True) if v is not None]
    refused, refusals = _refused([t for t, _ in pairs], [v for _, v in pairs])
    kept = frozenset(
        planned.brk.fingerprint
        for planned, candidate in chosen
        if not refused & set(candidate.paths) and planned.brk.fingerprint not in left_out
    )
    notes = [f"{fingerprint}: {why}; not applied" for fingerprint, why in missed] + refusals
    in_place = tuple(p for p in patches if p.path not in refused)
    return InPlace(in_place, kept, tuple(v for _, v in pairs), standing, report, tuple(notes))
