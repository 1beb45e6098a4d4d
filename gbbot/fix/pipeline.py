"""`gbbot fix` end to end: baseline run → plan → verify each candidate → (apply). The I/O edge of
gbbot/fix: it reads the repository, runs entrypoints in a scratch copy and, with `apply`, writes
verified patches into the repository — only into files inside it."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from gbbot import git
from gbbot.check import CheckOptions, select
from gbbot.classify import SITE_RE
from gbbot.config import Config
from gbbot.fix import plan as planning
from gbbot.fix import result as fix_result
from gbbot.fix.patch import FilePatch
from gbbot.fix.plan import Candidate, Planned, Unpatchable
from gbbot.fix.result import FixResult, FixStatus
from gbbot.fix.verify import (
    Observation,
    ResultComparer,
    Scratch,
    Verdict,
    compare_results,
    default_runner,
    judge,
    observe,
)
from gbbot.model import GraphBreak, Mode, Report, Status, Tool
from gbbot.run import Runner


@dataclass(frozen=True)
class FixOptions:
    apply: bool = False
    only: tuple[str, ...] = ()  # gb ids or recipe ids
    fingerprints: tuple[str, ...] = ()
    entrypoints: tuple[str, ...] = ()  # run only these (no report given)
    mode: Mode | None = None
    jobs: int = 2
    runner: Runner | None = None
    compare: ResultComparer = compare_results
    progress: Callable[[str], None] = field(default=lambda _message: None)


@dataclass(frozen=True)
class FixRun:
    report: Report  # the baseline, with extra["fixes"]
    results: tuple[FixResult, ...]
    written: tuple[str, ...] = ()  # repository files written (apply)
    joint: tuple[Verdict, ...] = ()  # patches sharing a file or entrypoint, verified together (apply)
    notes: tuple[str, ...] = ()  # what the user should know: collisions, files left alone
    after: Report | None = None  # the runs behind `joint`


# --- the repository edge ------------------------------------------------------------------------


def _inside(root: Path, relative: str) -> Path:
    if SITE_RE.search("/" + relative):
        raise Unpatchable(f"{relative} is in an installed package; gbbot never patches site-packages")
    path = root / relative
    if not path.resolve().is_relative_to(root.resolve()):
        raise Unpatchable(f"{relative} resolves outside the repository; gbbot only patches files inside it")
    return path


def repo_reader(root: Path) -> planning.FileReader:
    def read(relative: str) -> str:
        path = _inside(root, relative)
        try:
            with path.open(encoding="utf-8", newline="") as handle:
                return handle.read()
        except FileNotFoundError:
            raise Unpatchable(f"{relative}: no such file in the repository") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise Unpatchable(f"{relative}: cannot read it ({exc})") from None

    return read


def write_patch(root: Path, patch: FilePatch) -> str | None:
    """Write one verified patch into the repository; a note instead when the file moved on."""
    read = repo_reader(root)
    try:
        if read(patch.path) != patch.before:
            return f"{patch.path} changed while gbbot was verifying; not written"
    except Unpatchable as exc:
        return str(exc)
    with _inside(root, patch.path).open("w", encoding="utf-8", newline="") as handle:
        handle.write(patch.after)
    return None


def library_lookup(root: Path, config: Config) -> Callable[[str], str | None]:
    """Find an installed library's file by its display path (`pkg/mod.py`): in site-packages
    directories and in the PYTHONPATH the entrypoints run with. Read only."""
    entries = [p for p in sys.path if p and SITE_RE.search(p + "/")]
    configured = [v for e in config.entrypoints for k, v in e.env if k == "PYTHONPATH"]
    for value in [os.environ.get("PYTHONPATH", ""), *configured]:
        entries += [str(root / p) for p in value.split(os.pathsep) if p]

    def lookup(display: str) -> str | None:
        for entry in dict.fromkeys(entries):
            candidate = Path(entry) / display
            if candidate.is_file():
                try:
                    return candidate.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    return None
        return None

    return lookup


# --- the flow ---------------------------------------------------------------------------------------


@dataclass
class _Session:
    root: Path
    config: Config
    options: FixOptions
    scratch: Scratch
    report: Report | None = None
    baseline: dict[str, Observation] = field(default_factory=dict)

    @property
    def runner(self) -> Runner:
        return self.options.runner or default_runner()

    def observe(self, names: Iterable[str]) -> tuple[Report, dict[str, Observation]]:
        known = {e.name for e in self.config.entrypoints}
        wanted = [n for n in names if n in known]
        if not wanted:  # (check() would take "no names" for "all of them")
            return Report(Tool(), None, self.options.mode or self.config.mode, None, ()), {}
        return observe(self.scratch, self.config, wanted, self.options.mode, self.options.jobs, self.runner)

    def start(self, report: Report | None) -> None:
        """Take the given report, or run the selected entrypoints (in the scratch copy, so that the
        baseline and the patched runs see the same paths) and make it the baseline too."""
        if report is not None:
            self.report = report
            return
        names = [e.name for e in select(self.config, CheckOptions(only=self.options.entrypoints))]
        self.options.progress(f"running {len(names)} entrypoint{'s' * (len(names) != 1)} in a scratch copy…")
        baseline_report, self.baseline = self.observe(names)
        self.report = replace(baseline_report, commit=git.head_sha(self.root))

    def selected_breaks(self) -> list[tuple[GraphBreak, tuple[str, ...]]]:
        assert self.report is not None
        found = planning.found_breaks(self.report)
        return [f for f in found if planning.selected(f[0], self.options.only, self.options.fingerprints)]

    def ensure_baseline(self, names: Iterable[str]) -> None:
        missing = [n for n in names if n not in self.baseline]
        if missing:
            self.options.progress(f"baseline run of {', '.join(missing)}…")
            self.baseline.update(self.observe(missing)[1])

    def run_set(self, planned: Planned, paths: Iterable[str] = ()) -> tuple[str, ...]:
        """The entrypoints a patch can affect: where the break appeared, and every entrypoint
        that reported a break in a patched file (it imports that file)."""
        assert self.report is not None
        files = {planned.brk.file, *paths}
        touching = [e.name for e in self.report.entrypoints if any(b.file in files for b in e.breaks)]
        known = {e.name for e in self.config.entrypoints}
        return tuple(n for n in dict.fromkeys([*planned.entrypoints, *touching]) if n in known)

    def attempt(self, trials: Sequence[Trial]) -> tuple[list[Verdict], Report]:
        """Put every trial's patches in place at once (they touch different files), run the
        union of their entrypoints, and judge each trial on its own entrypoints."""
        names = tuple(dict.fromkeys(n for trial in trials for n in trial.names))
        self.ensure_baseline(names)
        patches = [p for trial in trials for p in trial.patches]
        self.scratch.write(patches)
        try:
            after_report, after = self.observe(names)
        finally:
            self.scratch.write(patches, after=False)
        return [self._judge(trial, after) for trial in trials], after_report

    def _judge(self, trial: Trial, after: Mapping[str, Observation]) -> Verdict:
        seen = {n: after[n] for n in trial.names if n in after and n in self.baseline}
        before = {n: self.baseline[n] for n in seen}
        verdict = judge(trial.targets, before, seen, self.options.compare)
        unusable = [n for n in before if before[n].outcome.status is not Status.OK]
        if not unusable:
            return verdict
        why = f"the baseline run of {', '.join(unusable)} did not succeed, so nothing can be verified there"
        return replace(verdict, ok=False, reason="; ".join(filter(None, [why, verdict.reason])))


Target = tuple[GraphBreak, Sequence[str]]  # a break a patch must remove, and where it appeared


@dataclass(frozen=True)
class Trial:
    """Patches to verify together, the breaks they must remove, the entrypoints to re-run."""

    patches: tuple[FilePatch, ...]
    targets: tuple[Target, ...]
    names: tuple[str, ...]


def _verified(candidate: Candidate, verdict: Verdict, names: Sequence[str], tried: Sequence[str]) -> FixResult:
    recipe, patch, brk = candidate.recipe, candidate.patch, candidate.brk
    return FixResult(
        brk.fingerprint,
        FixStatus.VERIFIED,
        brk.file,
        brk.line,
        recipe=recipe.id,
        variant=recipe.variant,
        title=recipe.title,
        description=recipe.description,
        summary=verdict.summary,
        diff=patch.diff,
        hunks=patch.hunks,
        entrypoints=tuple(names),
        before=verdict.before,
        after=verdict.after,
        revealed=verdict.revealed,
        tried=tuple(tried),
    )


def _dropped(planned: Planned, verdict: Verdict, names: Sequence[str], tried: Sequence[str]) -> FixResult:
    recipe, brk = planned.candidates[-1].recipe, planned.brk
    return FixResult(
        brk.fingerprint,
        FixStatus.DROPPED,
        brk.file,
        brk.line,
        recipe=recipe.id,
        variant=recipe.variant,
        title=recipe.title,
        description=recipe.description,
        reason=verdict.reason,
        summary=verdict.summary,
        entrypoints=tuple(names),
        before=verdict.before,
        after=verdict.after,
        tried=tuple(tried[:-1]),
    )


@dataclass
class _Work:
    """One fixable break on its way through verification: which variant is next, whether it must
    run alone (it failed next to others, which must not be held against it), what failed."""

    planned: Planned
    names: tuple[str, ...]
    index: int = 0
    alone: bool = False
    tried: list[str] = field(default_factory=list)

    @property
    def candidate(self) -> Candidate:
        return self.planned.candidates[self.index]

    def trial(self) -> Trial:
        return Trial((self.candidate.patch,), ((self.planned.brk, self.planned.entrypoints),), self.names)


def pack(waiting: Sequence[_Work]) -> list[_Work]:
    """The next round: candidates in different files with different entrypoints run together
    (one run per entrypoint for all of them); one that must run alone, alone."""
    batch: list[_Work] = []
    files: set[str] = set()
    names: set[str] = set()
    for work in waiting:
        if work.alone and batch:
            continue
        if work.candidate.patch.path in files or names & set(work.names):
            continue
        batch.append(work)
        files.add(work.candidate.patch.path)
        names.update(work.names)
        if work.alone:
            break
    return batch


def _settle(work: _Work, verdict: Verdict, together: bool) -> FixResult | None:
    """The result once a candidate is verified or the last variant failed alone; else None."""
    if verdict.ok:
        return _verified(work.candidate, verdict, work.names, work.tried)
    if together:
        work.alone = True
        return None
    work.tried.append(f"{work.candidate.recipe.variant}: {verdict.reason}")
    work.index, work.alone = work.index + 1, False
    if work.index < len(work.planned.candidates):
        return None
    return _dropped(work.planned, verdict, work.names, work.tried)


def _described(work: _Work) -> str:
    recipe, brk = work.candidate.recipe, work.planned.brk
    return f"{recipe.id} ({recipe.variant}) at {brk.file}:{brk.line}"


def verify_all(session: _Session, planned: Sequence[Planned]) -> list[tuple[FixResult, Candidate | None]]:
    """Verify every fixable break's candidates, variants in order, as few runs as attribution
    allows: independent candidates share one run per entrypoint; a failure is re-checked alone."""
    works = [_Work(p, session.run_set(p)) for p in planned]
    settled: dict[int, tuple[FixResult, Candidate | None]] = {}
    while len(settled) < len(works):
        batch = pack([w for i, w in enumerate(works) if i not in settled])
        session.options.progress(f"verifying {', '.join(_described(w) for w in batch)}…")
        verdicts, _ = session.attempt([w.trial() for w in batch])
        for work, verdict in zip(batch, verdicts, strict=True):
            candidate = work.candidate
            result = _settle(work, verdict, together=len(batch) > 1)
            if result is not None:
                settled[works.index(work)] = (result, candidate if result.status is FixStatus.VERIFIED else None)
    return [settled[i] for i in range(len(works))]


@dataclass(frozen=True)
class Applied:
    written: tuple[str, ...] = ()  # repository files written
    joint: tuple[Verdict, ...] = ()  # patches that share a file or an entrypoint, verified together
    after: Report | None = None  # the runs behind `joint`
    notes: tuple[str, ...] = ()


Chosen = tuple[Planned, Candidate]


def joint_groups(session: _Session, chosen: Sequence[Chosen]) -> list[list[Chosen]]:
    """Verified patches that share a file or an entrypoint, grouped (connected components).
    Each was verified alone; a group of several must also be verified together."""
    groups: list[tuple[set[str], list[Chosen]]] = []
    for item in chosen:
        keys = {f"file:{item[1].patch.path}", *(f"run:{n}" for n in session.run_set(item[0]))}
        touching = [g for g in groups if g[0] & keys]
        merged = (keys.union(*(g[0] for g in touching)), [*(m for g in touching for m in g[1]), item])
        groups = [g for g in groups if all(g is not t for t in touching)] + [merged]
    return [members for _, members in groups]


def _joint_trial(session: _Session, group: Sequence[Chosen], patches: Sequence[FilePatch], left_out: set[str]) -> Trial:
    files = {c.patch.path for _, c in group}
    mine = tuple(p for p in patches if p.path in files)
    names = tuple(dict.fromkeys(n for planned, _ in group for n in session.run_set(planned, files)))
    targets = tuple((p.brk, p.entrypoints) for p, _ in group if p.brk.fingerprint not in left_out)
    return Trial(mine, targets, names)


def apply_all(session: _Session, chosen: Sequence[Chosen]) -> Applied:
    """Combine the verified patches per file, verify those that share a file or an entrypoint
    together once, and write every patch whose group passed."""
    patches, missed = planning.combine([c for _, c in chosen], repo_reader(session.root))
    notes = [f"{fingerprint}: {why}; not applied" for fingerprint, why in missed]
    left_out = {fingerprint for fingerprint, _ in missed}
    trials = [_joint_trial(session, g, patches, left_out) for g in joint_groups(session, chosen) if len(g) > 1]
    if trials:
        count = sum(len(t.targets) for t in trials)
        session.options.progress(f"verifying the {count} patches that share files or entrypoints together…")
    joint, after = session.attempt(trials) if trials else ([], None)
    refused: set[str] = set()
    for trial, verdict in zip(trials, joint, strict=True):
        if not verdict.ok:
            files = ", ".join(p.path for p in trial.patches)
            refused.update(p.path for p in trial.patches)
            notes.append(f"not written: {files}: together the patches fail ({verdict.reason})")
    written = []
    for patch in (p for p in patches if p.path not in refused):
        note = write_patch(session.root, patch)
        notes += [note] if note else []
        written += [] if note else [patch.path]
    return Applied(tuple(written), tuple(joint), after, tuple(notes))


def with_fixes(report: Report, results: Iterable[FixResult]) -> Report:
    return replace(report, extra={**report.extra, **fix_result.extra_json(results)})


def fix(root: Path, config: Config, options: FixOptions = FixOptions(), report: Report | None = None) -> FixRun:
    """Find (or take) the breaks, verify a patch for each fixable one, and apply on request."""
    with Scratch(root) as scratch:
        session = _Session(root, config, options, scratch)
        session.start(report)
        found = session.selected_breaks()
        planned, others = planning.plan(found, repo_reader(root), library_lookup(root, config))
        verified = verify_all(session, planned)
        by_fingerprint = {r.fingerprint: r for r in [*others, *(result for result, _ in verified)]}
        results = tuple(by_fingerprint[b.fingerprint] for b, _ in found if b.fingerprint in by_fingerprint)
        chosen = [(item, candidate) for item, (_, candidate) in zip(planned, verified, strict=True) if candidate]
        applied = apply_all(session, chosen) if options.apply and chosen else Applied()
    assert session.report is not None
    final = with_fixes(session.report, results)
    return FixRun(final, results, applied.written, applied.joint, applied.notes, applied.after)
