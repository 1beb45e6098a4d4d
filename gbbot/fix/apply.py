"""`gbbot fix --apply`: combine the verified patches per file, verify once more together those
that share a file or an entrypoint (each was verified alone), and write what passed into the
repository."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gbbot.fix import plan as planning
from gbbot.fix.batch import Attempt, Scope, Trial, run_set
from gbbot.fix.patch import FilePatch
from gbbot.fix.plan import Candidate, FileReader, Planned
from gbbot.fix.verify import Judgement
from gbbot.fix.workspace import write_patch
from gbbot.model import Report


@dataclass(frozen=True)
class Applied:
    written: tuple[str, ...] = ()  # repository files written
    joint: tuple[Judgement, ...] = ()  # patches that share a file or an entrypoint, verified together
    after: Report | None = None  # the runs behind `joint`
    notes: tuple[str, ...] = ()
    unwritten: tuple[str, ...] = ()  # files with a verified patch that were not written


Chosen = tuple[Planned, Candidate]


def joint_groups(scope: Scope, chosen: Sequence[Chosen]) -> list[list[Chosen]]:
    """Verified patches that share a file or an entrypoint, grouped (connected components).
    Each was verified alone; a group of several must also be verified together."""
    groups: list[tuple[set[str], list[Chosen]]] = []
    for item in chosen:
        keys = {f"file:{item[1].patch.path}", *(f"run:{n}" for n in run_set(scope, item[0]))}
        touching = [g for g in groups if g[0] & keys]
        merged = (keys.union(*(g[0] for g in touching)), [*(m for g in touching for m in g[1]), item])
        groups = [g for g in groups if all(g is not t for t in touching)] + [merged]
    return [members for _, members in groups]


def _joint_trial(scope: Scope, group: Sequence[Chosen], patches: Sequence[FilePatch], left_out: set[str]) -> Trial:
    files = {c.patch.path for _, c in group}
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


def _write(root: Path, patches: Sequence[FilePatch]) -> tuple[list[str], list[str]]:
    """Write each patch: the files written, and a note for each one left alone."""
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
    texts = {candidate.patch.path: candidate.patch.before for _, candidate in chosen}
    return lambda path: texts[path]


def apply_all(
    root: Path, scope: Scope, chosen: Sequence[Chosen], attempt: Attempt, progress: Callable[[str], None]
) -> Applied:
    """Combine the verified patches per file, verify those that share a file or an entrypoint
    together once, and write every patch whose group passed."""
    patches, missed = planning.combine([c for _, c in chosen], _verified_text(chosen))
    left_out = {fingerprint for fingerprint, _ in missed}
    trials = [_joint_trial(scope, g, patches, left_out) for g in joint_groups(scope, chosen) if len(g) > 1]
    if trials:
        count = sum(len(t.goals) for t in trials)
        progress(f"verifying the {count} patches that share files or entrypoints together…")
    joint, after = attempt(trials) if trials else ([], None)
    refused, refusals = _refused(trials, joint)
    written, write_notes = _write(root, [p for p in patches if p.path not in refused])
    notes = [f"{fingerprint}: {why}; not applied" for fingerprint, why in missed] + refusals + write_notes
    unwritten = tuple(p.path for p in patches if p.path not in written)
    return Applied(tuple(written), tuple(joint), after, tuple(notes), unwritten)
