"""`gbbot fix` end to end: baseline run → plan → verify each candidate → (apply). The I/O edge of
gbbot/fix: it reads the repository, runs entrypoints in a scratch copy and, with `apply`, writes
verified patches into the repository — only into files inside it."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
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
from gbbot.model import GraphBreak, Mode, Report, Status
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
    combined: Verdict | None = None  # every verified patch together (apply)
    notes: tuple[str, ...] = ()  # what the user should know: collisions, files left alone


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

    def attempt(self, patches: Sequence[FilePatch], targets: Sequence[Target], names: Sequence[str]) -> Verdict:
        """Run `names` with the patches in place and judge the runs against the baseline."""
        self.ensure_baseline(names)
        self.scratch.write(patches)
        try:
            after = self.observe(names)[1]
        finally:
            self.scratch.write(patches, after=False)
        before = {n: self.baseline[n] for n in after if n in self.baseline}
        verdict = judge(targets, before, after, self.options.compare)
        unusable = [n for n in before if before[n].outcome.status is not Status.OK]
        if not unusable:
            return verdict
        why = f"the baseline run of {', '.join(unusable)} did not succeed, so nothing can be verified there"
        return replace(verdict, ok=False, reason="; ".join(filter(None, [why, verdict.reason])))


Target = tuple[GraphBreak, Sequence[str]]  # a break a patch must remove, and where it appeared


def _verified(candidate: Candidate, verdict: Verdict, names: Sequence[str], tried: Sequence[str]) -> FixResult:
    recipe, patch, brk = candidate.recipe, candidate.patch, candidate.brk
    return FixResult(
        brk.fingerprint, FixStatus.VERIFIED, brk.file, brk.line,
        recipe=recipe.id, variant=recipe.variant, title=recipe.title, description=recipe.description,
        summary=verdict.summary, diff=patch.diff, hunks=patch.hunks, entrypoints=tuple(names),
        before=verdict.before, after=verdict.after, revealed=verdict.revealed, tried=tuple(tried),
    )


def _dropped(planned: Planned, verdict: Verdict, names: Sequence[str], tried: Sequence[str]) -> FixResult:
    recipe, brk = planned.candidates[-1].recipe, planned.brk
    return FixResult(
        brk.fingerprint, FixStatus.DROPPED, brk.file, brk.line,
        recipe=recipe.id, variant=recipe.variant, title=recipe.title, description=recipe.description,
        reason=verdict.reason, summary=verdict.summary, entrypoints=tuple(names),
        before=verdict.before, after=verdict.after, tried=tuple(tried[:-1]),
    )


def verify_planned(session: _Session, planned: Planned) -> tuple[FixResult, Candidate | None]:
    """Try the candidates in order; the first that passes verification is the fix."""
    tried: list[str] = []
    names = session.run_set(planned)
    for candidate in planned.candidates:
        recipe = candidate.recipe
        where = f"{planned.brk.file}:{planned.brk.line}"
        session.options.progress(f"verifying {recipe.id} ({recipe.variant}) at {where} on {', '.join(names)}…")
        verdict = session.attempt([candidate.patch], [(planned.brk, planned.entrypoints)], names)
        if verdict.ok:
            return _verified(candidate, verdict, names, tried), candidate
        tried.append(f"{recipe.variant}: {verdict.reason}")
    return _dropped(planned, verdict, names, tried), None


Applied = tuple[tuple[str, ...], Verdict | None, list[str]]  # files written, joint verdict, notes


def apply_all(session: _Session, chosen: Sequence[tuple[Planned, Candidate]]) -> Applied:
    """Combine the verified patches per file, verify them together once, write them."""
    patches, missed = planning.combine([c for _, c in chosen], repo_reader(session.root))
    notes = [f"{fingerprint}: {why}; not applied" for fingerprint, why in missed]
    combined = None
    if len(chosen) > 1 and patches:
        paths = [p.path for p in patches]
        names = tuple(dict.fromkeys(n for planned, _ in chosen for n in session.run_set(planned, paths)))
        left_out = {fingerprint for fingerprint, _ in missed}
        targets = [(p.brk, p.entrypoints) for p, _ in chosen if p.brk.fingerprint not in left_out]
        session.options.progress(f"verifying all {len(targets)} patches together on {', '.join(names)}…")
        combined = session.attempt(patches, targets, names)
        if not combined.ok:
            return (), combined, [*notes, f"nothing written: together the patches fail ({combined.reason})"]
    written = []
    for patch in patches:
        note = write_patch(session.root, patch)
        notes += [note] if note else []
        written += [] if note else [patch.path]
    return tuple(written), combined, notes


def with_fixes(report: Report, results: Iterable[FixResult]) -> Report:
    return replace(report, extra={**report.extra, **fix_result.extra_json(results)})


def fix(root: Path, config: Config, options: FixOptions = FixOptions(), report: Report | None = None) -> FixRun:
    """Find (or take) the breaks, verify a patch for each fixable one, and apply on request."""
    with Scratch(root) as scratch:
        session = _Session(root, config, options, scratch)
        session.start(report)
        found = session.selected_breaks()
        planned, others = planning.plan(found, repo_reader(root), library_lookup(root, config))
        verified = [verify_planned(session, item) for item in planned]
        by_fingerprint = {r.fingerprint: r for r in [*others, *(result for result, _ in verified)]}
        results = tuple(by_fingerprint[b.fingerprint] for b, _ in found if b.fingerprint in by_fingerprint)
        chosen = [(item, candidate) for item, (_, candidate) in zip(planned, verified, strict=True) if candidate]
        written, combined, notes = apply_all(session, chosen) if options.apply and chosen else ((), None, [])
    assert session.report is not None
    return FixRun(with_fixes(session.report, results), results, written, combined, tuple(notes))
