"""The verified patches of one round put together: combined per file, put in place for good in
the scratch copy (the next round starts there), those that share a file or an entrypoint verified
together once more (each was verified alone); and, on `--apply`, the final patches written into
the repository."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gbbot.core.model import Report
from gbbot.fix import plan as planning
from gbbot.fix.batch import Attempt, Scope, Trial, leaves_the_break, run_set
from gbbot.fix.patch import FilePatch
from gbbot.fix.plan import Candidate, FileReader, Planned
from gbbot.fix.verify import Judgement
from gbbot.fix.workspace import write_patch


@dataclass(frozen=True)
class InPlace:
    """A round's verified patches once in place: what stands in the scratch copy now."""

    patches: tuple[FilePatch, ...]  # in place, one per file (`before`: the round's text)
    kept: frozenset[str]  # fingerprints of the fixes in those patches
    joint: tuple[Judgement, ...]  # patches that share a file or an entrypoint, verified together
    report: Report  # the runs after the patches were put in place
    notes: tuple[str, ...] = ()
    # fingerprint → why: verified alone, left out of a group whose patches fail together
    dropped: dict[str, str] = field(default_factory=dict)


Chosen = tuple[Planned, Candidate]
# Put trials' patches in place for good, judge those marked: (judgements, report).
Keep = Callable[[Sequence[Trial], Sequence[bool]], "tuple[list[Judgement | None], Report]"]


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
    goals = tuple(
        (p.brk, p.entrypoints) for p, c in group if p.brk.fingerprint not in left_out and not leaves_the_break(c)
    )
    return Trial(mine, goals, names)


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


def _trial_of(scope: Scope, members: Sequence[Chosen]) -> Trial | None:
    """The members' patches combined per file, as one trial (None: they do not all combine)."""
    patches, missed = planning.combine([c for _, c in members], _verified_text(members))
    return None if missed or not patches else _joint_trial(scope, members, patches, set())


def _salvaged(scope: Scope, group: Sequence[Chosen], probe: Attempt | None) -> list[Chosen]:
    """The members of a group that failed together which do hold together: the first (verified
    alone), then each next one kept when a run of it with those kept so far passes. The whole
    group is never probed again (it just failed)."""
    kept = [group[0]]
    for member in group[1:]:
        trying = [*kept, member]
        if len(trying) == len(group) or probe is None:
            continue
        trial = _trial_of(scope, trying)
        if trial is None:
            continue
        (judgement,), _ = probe([trial])
        if judgement.ok:
            kept = trying
    return kept


def _named(group: Sequence[Chosen]) -> str:
    return ", ".join(f"{p.brk.gb_id or p.brk.gb_type} at {p.brk.file}:{p.brk.line}" for p, _ in group)


def put_in_place(
    scope: Scope,
    chosen: Sequence[Chosen],
    keep: Keep,
    progress: Callable[[str], None],
    probe: Attempt | None = None,
) -> InPlace:
    """Combine the round's verified patches per file and put them in place; groups that share a
    file or an entrypoint are verified together. From a group that fails together, the members
    that hold together are kept (each verified alone, then added one at a time, each addition
    re-run with `probe`; the rest dropped, named) and verified together once more."""
    patches, missed = planning.combine([c for _, c in chosen], _verified_text(chosen))
    left_out = {fingerprint for fingerprint, _ in missed}
    groups = joint_groups(scope, chosen)
    trials = [_joint_trial(scope, g, patches, left_out) for g in groups]
    judged = [len(g) > 1 for g in groups]
    if any(judged):
        count = sum(len(t.goals) for t, j in zip(trials, judged, strict=True) if j)
        progress(f"verifying the {count} patches that share files or entrypoints together…")
    verdicts, report = keep(trials, judged)
    placed = {p.path: p for p in patches}
    notes = [f"{fingerprint}: {why}; not applied" for fingerprint, why in missed]
    joint: list[Judgement] = []
    failed: list[tuple[list[Chosen], Judgement, list[Chosen]]] = []  # (members, verdict, to keep)
    for group, trial, verdict in zip(groups, trials, verdicts, strict=True):
        if verdict is None:
            continue
        joint.append(verdict)
        if verdict.ok:
            continue
        for patch in trial.patches:
            placed.pop(patch.path, None)
        members = [m for m in group if m[0].brk.fingerprint not in left_out]
        if not members:
            continue
        progress(f"the patches of {_named(members)} fail together; keeping those that hold together…")
        failed.append((members, verdict, _salvaged(scope, members, probe)))
    held = _keep_salvaged(scope, [k for _, _, k in failed], keep, placed, joint)
    dropped: dict[str, str] = {}
    for members, verdict, _ in failed:
        out = [m for m in members if m[0].brk.fingerprint not in held]
        kept = [m for m in members if m[0].brk.fingerprint in held]
        why = f"verified alone, but not together with {_named(members)} ({verdict.reason})"
        dropped.update((m[0].brk.fingerprint, why) for m in out)
        files = ", ".join(dict.fromkeys(path for m in out for path in m[1].paths))
        also = f"; kept {_named(kept)}, which hold together" if kept else ""
        notes.append(f"not written: {_named(out)} ({files}): together the patches fail ({verdict.reason}){also}")
    kept_fingerprints = frozenset(planned.brk.fingerprint for planned, _ in chosen) - left_out - dropped.keys()
    return InPlace(tuple(placed.values()), kept_fingerprints, tuple(joint), report, tuple(notes), dropped)


def _keep_salvaged(
    scope: Scope,
    salvaged: Sequence[Sequence[Chosen]],
    keep: Keep,
    placed: dict[str, FilePatch],
    joint: list[Judgement],
) -> set[str]:
    """Put the members salvaged from failed groups in place, verified together once more (against
    the unpatched runs, as every group): the fingerprints kept. `placed` and `joint` get what
    stands after it."""
    ready = [(members, trial) for members in salvaged if members for trial in [_trial_of(scope, members)] if trial]
    if not ready:
        return set()
    verdicts, _ = keep([t for _, t in ready], [True] * len(ready))
    held: set[str] = set()
    for (members, trial), verdict in zip(ready, verdicts, strict=True):
        if verdict is None or not verdict.ok:
            continue
        joint.append(verdict)
        placed.update((p.path, p) for p in trial.patches)
        held.update(m[0].brk.fingerprint for m in members)
    return held
