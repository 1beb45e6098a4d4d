"""Prove a candidate patch before anyone sees it: apply it in a scratch copy of the repository,
re-run the affected entrypoints, and keep it only if the targeted break is gone, nothing new broke
(breaks revealed because a frame no longer falls back to eager are reported, not held against
it), and the results are unchanged.

`Scratch` and `observe` touch the disk and run entrypoints; `judge` is pure (result files are
compared through a function passed in).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gbbot.analysis import break_diff, dependence
from gbbot.analysis.classify import normalise_code
from gbbot.backends.choose import backend_for
from gbbot.backends.contract import Backend
from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import Config, Entrypoint
from gbbot.core.fixes import Counts
from gbbot.core.model import Change, ChangeState, EntrypointReport, GraphBreak, Mode, Report, RunOutcome
from gbbot.edges import git, runas
from gbbot.fix.patch import FilePatch

NEVER_COPIED = (".git", "__pycache__")
DIFF_DETAIL_CHARS = 300


# --- the scratch copy ----------------------------------------------------------------------------


def _copy_listed(root: Path, dest: Path, listed: Iterable[str]) -> None:
    for relative in listed:
        source = root / relative
        if not source.is_file() and not source.is_symlink():
            continue  # tracked but deleted in the working tree
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)


def _link_ignored(root: Path, dest: Path, entries: Iterable[str]) -> None:
    """What git ignores (data, weights, virtualenvs) is linked, not copied: runs may read it, and
    gbbot never patches it."""
    for entry in entries:
        relative = entry.rstrip("/")
        if any(part in NEVER_COPIED for part in Path(relative).parts) or relative.endswith(".pyc"):
            continue
        target = dest / relative
        if target.exists() or target.is_symlink():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(root / relative, target_is_directory=(root / relative).is_dir())


def copy_tree(root: Path, dest: Path) -> None:
    """Copy the repository's files (tracked and untracked-not-ignored) into `dest`."""
    listed = git.listed_files(root)
    if listed is None:
        shutil.copytree(root, dest, symlinks=True, ignore=shutil.ignore_patterns(*NEVER_COPIED), dirs_exist_ok=True)
        return
    dest.mkdir(parents=True, exist_ok=True)
    _copy_listed(root, dest, listed)
    _link_ignored(root, dest, git.ignored_entries(root))


class Scratch:
    """A private copy of the repository in a temporary directory; patches are written there and
    taken back, and the user's working tree is never written."""

    def __init__(self, root: Path, parent: Path | None = None) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="gbbot-fix-", dir=parent))
        self.root = self.base / "tree"
        copy_tree(root, self.root)
        runas.reach(self.root)  # the entrypoints run there as the run-as user
        self._runs = 0
        self.written: dict[str, bytes] = {}  # every file a patch was ever written to → its text before

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def work_dir(self) -> Path:
        """A fresh directory for one round of runs (traces, outputs, results)."""
        self._runs += 1
        return self.base / "runs" / str(self._runs)

    def write(self, patches: Sequence[FilePatch], after: bool = True) -> None:
        for patch in patches:
            path = own_file(self.root, patch.path)
            if patch.path not in self.written:
                self.written[patch.path] = path.read_bytes() if path.exists() else b""
            path.write_text(patch.after if after else patch.before, encoding="utf-8", newline="")
            for stale in path.parent.glob(f"__pycache__/{path.stem}.*.pyc"):
                stale.unlink(missing_ok=True)  # same size and second as before: never trust it


def _unfold(link: Path) -> None:
    """Replace a link to a directory (an ignored one, linked into the copy) by a real directory
    of links to its entries: one level deeper, the copy is its own."""
    source = link.resolve()
    link.unlink()
    link.mkdir()
    for entry in source.iterdir():
        if entry.name not in NEVER_COPIED:
            (link / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())


def own_file(tree: Path, relative: str) -> Path:
    """`tree / relative` as a file of the copy, never a link into the working tree: linked
    directories along the path are unfolded, a linked file is replaced by a copy of itself."""
    path = tree
    for part in Path(relative).parts[:-1]:
        path = path / part
        if path.is_symlink():
            _unfold(path)
    path = path / Path(relative).name
    if path.is_symlink():
        text = path.read_bytes()
        path.unlink()
        path.write_bytes(text)
    if not path.resolve().is_relative_to(tree.resolve()):
        raise ValueError(f"{relative} leads outside the scratch copy")  # never write through a link
    if path.exists() and not os.access(path, os.W_OK):
        path.chmod(path.stat().st_mode | stat.S_IWUSR)  # a read-only file in the repository
    return path


# --- running ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Observation:
    """One entrypoint's run: what check reported, and how the process ended."""

    entrypoint: Entrypoint
    report: EntrypointReport
    outcome: RunOutcome


def default_backend(config: Config, inductor_cache: Path | None = None) -> Backend:
    """The backend the config's `runner:` names, as `gbbot check` uses it: a fix is verified
    where the breaks were found. Rewritten files must never meet a stale .pyc from an earlier run.
    `inductor_cache`: one Inductor cache for every run of one `gbbot fix` (its own, in its scratch
    directory): the faithful runs of the same code compile once."""
    pinned = {"PYTHONDONTWRITEBYTECODE": "1"}
    if inductor_cache is not None:
        pinned["TORCHINDUCTOR_CACHE_DIR"] = str(inductor_cache)
    return backend_for(config.runner, pinned=pinned)


def observe(
    scratch: Scratch,
    config: Config,
    names: Iterable[str],
    mode: Mode | None,
    jobs: int,
    backend: Backend,
    time_calls: bool = False,
) -> tuple[Report, dict[str, Observation]]:
    """Run the named entrypoints in the scratch copy, results saved for comparison (and, with
    `time_calls`, the compiled calls timed: see fix/measure.py)."""
    wanted = tuple(sorted(set(names)))
    outcomes: dict[str, RunOutcome] = {}
    options = CheckOptions(
        mode=mode,
        jobs=jobs,
        only=wanted,
        save_results=True,
        keep_traces=scratch.work_dir(),
        backend=backend,
        time_calls=time_calls,
    )
    report = check(scratch.root, config, options, on_done=lambda o: outcomes.__setitem__(o.name, o))
    return report, {
        e.name: Observation(config.entrypoint(e.name), e, outcomes[e.name])  # type: ignore[arg-type]
        for e in report.entrypoints
        if e.name in outcomes
    }


# --- comparing ---------------------------------------------------------------------------------

# (entrypoint, before file, after file) → why the saved results differ, or None when equal. The
# files are pickles: the real one (compare.ChildComparer) never loads them in gbbot's process.
ResultComparer = Callable[[Entrypoint, str, str], "str | None"]
Goal = tuple[GraphBreak, Sequence[str]]  # a break a patch must remove, and the entrypoints it appeared in


@dataclass(frozen=True)
class Judgement:
    """What the re-runs say about a patch (or patches verified together): `ok`, and if not, why."""

    ok: bool
    reason: str  # why not, when not ok
    summary: str  # "removes 1 break; graphs 4 → 3; outputs equal"
    before: Counts
    after: Counts
    revealed: tuple[str, ...] = ()
    instead: tuple[GraphBreak, ...] = ()  # breaks that took the targeted one's place: its advice
    # an entrypoint's result differs between two unpatched runs: no variant of the patch can be judged
    unjudgeable: bool = False


# A break a later round would try to fix (it has recipes, and a round is left): a patch that only
# lets Dynamo reach it is kept for that round to build on.
FixableLater = Callable[[GraphBreak], bool]


def never(_brk: GraphBreak) -> bool:
    return False


def totals(reports: Iterable[EntrypointReport]) -> Counts:
    """Breaks, graphs and eager frames of the entrypoints' runs, added up."""
    reports = list(reports)
    return Counts(
        breaks=sum(r.break_count for r in reports),
        graphs=sum(r.graph_count for r in reports),
        frames_skipped=sum(r.frames_skipped for r in reports),
    )


def _same_site(a: GraphBreak, b: GraphBreak) -> bool:
    return a.key == b.key and a.file == b.file and a.function == b.function


# A line of a file as the patched run saw it → the same line before the patch (None: the patch
# wrote it). The identity for runs of the same text.
LineMap = break_diff.LineMap


def same_line(_path: str, line: int) -> int | None:
    return line


def _short(brk: GraphBreak, to_base: LineMap | None = None) -> str:
    """A break in a few words. `to_base`: the break was seen in the patched copy, and its line is
    said as a line of the file as the user has it (or as one the patch wrote)."""
    line = to_base(brk.file, brk.line) if to_base else brk.line
    where = f"{brk.file}:{line}" if line is not None else f"{brk.file}, on a line the patch wrote"
    return f"{brk.gb_id or brk.gb_type} at {where} ({brk.code.strip()[:80]})"


def still_there(target: GraphBreak, entrypoints: Iterable[str], before: Mapping, after: Mapping) -> str | None:
    """Why the targeted break is not gone, or None. Compared by kind, file and function (the
    fingerprint holds the source line, which the patch may have changed)."""
    entrypoints = list(entrypoints)
    rerun = [n for n in entrypoints if n in before and n in after]
    if not rerun:
        return f"none of the entrypoints it appeared in ({', '.join(entrypoints)}) could be re-run here"
    for name in rerun:
        was = [b for b in before[name].report.breaks if _same_site(b, target)]
        now = [b for b in after[name].report.breaks if _same_site(b, target)]
        if not was:
            return f"the break did not show up in the baseline run of {name}"
        if len(now) >= len(was):
            return f"the break is still reported in {name}"
    return None


def renamed(
    target: GraphBreak, entrypoints: Iterable[str], before: Mapping, after: Mapping
) -> tuple[GraphBreak, str] | None:
    """The break the patch only renamed the targeted one into, and the entrypoint, or None: the same code breaks
    again, as another kind of break (`.item()` traced, then its value feeds an `if`: GB0124
    becomes GB0170 at the same line). That is not a fix."""
    for name in (n for n in entrypoints if n in before and n in after):
        known = {b.fingerprint for b in before[name].report.breaks}
        for brk in after[name].report.breaks:
            if brk.fingerprint not in known and place(brk) == place(target) and brk.key != target.key:
                return brk, name
    return None


def place(brk: GraphBreak) -> tuple[str, int | None, str]:
    """Where a break's code is: its line inside the library for a break raised in one (all of a
    model's library breaks share the user's line that calls the model; a patch never moves a
    library's lines), else its own line's code (a patch may move it)."""
    site = brk.library_site
    if site is not None and site.code:
        return site.path, site.line, normalise_code(site.code)
    return brk.file, None, normalise_code(brk.code)


def changed_kind(found: Sequence[GraphBreak], before: Observation, after: Observation) -> list[GraphBreak]:
    """Of the breaks a patched run shows new, those that are another kind of break where one the
    run no longer has was: a setting meant for another break can change how Dynamo fails on a line
    it does not fix (`np.random.uniform` in a library: GB0033, then, with `capture_scalar_outputs`,
    a guard on a data-dependent float) — no break more, no break fewer there. A targeted break
    that does this is not fixed (`renamed`)."""
    now = {b.fingerprint for b in after.report.breaks}
    gone = {place(b) for b in before.report.breaks if b.fingerprint not in now}
    return [b for b in found if place(b) in gone]


def no_better(
    old: Counts, new: Counts, revealed: Sequence[GraphBreak], later: FixableLater, to_base: LineMap = same_line
) -> str | None:
    """Why a patch that makes Dynamo meet other breaks leaves the code no better, or None. Gone
    from the report is not enough: when no frame stops running eagerly and no graph split goes
    away, the breaks it "reveals" are the same trouble one step further (`.item()` captured, then
    its number decides an `if` on the next line). Kept when a later round would fix every one of
    them: a guard that lets Dynamo reach an `.item()` it then captures is half of one fix."""
    if not revealed or new.frames_skipped < old.frames_skipped or new.graphs < old.graphs:
        return None
    first = next((b for b in revealed if not later(b)), None)
    if first is None:
        return None
    return (
        f"not a fix: Dynamo now stops at {_short(first, to_base)} instead, frames running eagerly "
        f"{old.frames_skipped} → {new.frames_skipped}, graphs {old.graphs} → {new.graphs}"
    )


def only_hidden(
    target: GraphBreak, entrypoints: Iterable[str], before: Mapping, after: Mapping, to_base: LineMap = same_line
) -> str | None:
    """Why the targeted break is gone only from sight, or None: the patch made a frame it lies in
    run eagerly, so Dynamo no longer looks at it (by the diff's rule, with the patch's lines
    known: a guarded print before an `.item()` in the same loop is fixed, and the `.item()` it
    lets Dynamo reach is revealed)."""
    for name in (n for n in entrypoints if n in before and n in after):
        for change in settled(before[name], after[name], to_base):
            brk, hider = change.brk, change.hidden_by
            if change.state is not ChangeState.HIDDEN or not _same_site(brk, target):
                continue
            if hider is not None and _stops_as_before(hider, before[name], after[name]):
                continue
            why = f"{_short(hider, to_base)} makes its frame run eagerly" if hider else "its frame now runs eagerly"
            return f"the break is only hidden in {name}: {why}"
    return None


def _stops_as_before(hider: GraphBreak, before: Observation, after: Observation) -> bool:
    """Whether `hider` is another kind of break where a break of the baseline, now gone, stopped
    Dynamo, making no frame run eagerly that that one did not: the baseline stopped there too, and
    still showed the targeted break, so `hider` does not hide it."""
    now = {b.fingerprint for b in after.report.breaks}
    return any(
        b.fingerprint not in now and place(b) == place(hider) and set(hider.makes_eager) <= set(b.makes_eager)
        for b in before.report.breaks
    )


def settled(before: Observation, after: Observation, to_base: LineMap = same_line) -> tuple[Change, ...]:
    """The patched run against the baseline run, by the rule a PR's diff uses
    (gbbot/analysis/break_diff.py), the patch's lines known: what went away fixed or only hidden,
    what showed up new or revealed (a frame that ran eagerly before is traced now)."""
    was = {b.fingerprint: b for b in before.report.breaks}
    now = {b.fingerprint: b for b in after.report.breaks}
    kept = dependence.lines_kept(to_base)  # a break on a way the patch wrote is the patch's: new
    return break_diff.settle(after.report, before.report, now, was, in_base=kept, to_base=to_base)


def appeared_breaks(
    before: Observation, after: Observation, to_base: LineMap = same_line
) -> tuple[list[GraphBreak], list[GraphBreak]]:
    """Breaks in `after` that `before` did not have, as (new, revealed)."""
    result = settled(before, after, to_base)
    new, revealed = ([c.brk for c in result if c.state is state] for state in (ChangeState.NEW, ChangeState.REVEALED))
    return new, revealed


ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception)\b.*")


def _error_line(stderr: str, otherwise: str) -> str:
    """The exception a failed run ended with: the last line that names one (torch adds advice
    lines after it, "Set TORCHDYNAMO_VERBOSE=1 …"), else the last line."""
    lines = stderr.strip().splitlines()
    named = [line for line in lines if ERROR_LINE.match(line)]
    return (named or lines or [otherwise])[-1]


def changed_behaviour(before: Observation, after: Observation, compare: ResultComparer) -> str | None:
    """Why the patched run's result differs from the baseline's, or None."""
    name, old, new = before.entrypoint.name, before.outcome, after.outcome
    if (new.status, new.exit_code) != (old.status, old.exit_code):
        last = _error_line(new.stderr_tail, new.reason or "")[:DIFF_DETAIL_CHARS]
        was = f"{old.status.value} (exit {old.exit_code})"
        return f"{name} ended {new.status.value} (exit {new.exit_code}), before {was}: {last}"
    if before.entrypoint.returns_result:
        if (old.result_path is None) != (new.result_path is None):
            return f"{name} returned a result in only one of the runs"
        difference = (
            compare(before.entrypoint, old.result_path, new.result_path)
            if old.result_path and new.result_path
            else None
        )
        return f"the result of {name} changed: {difference}" if difference else None
    if before.entrypoint.verify_output and old.stdout_tail != new.stdout_tail:
        return f"the output of {name} changed (verify_output is on)"
    return None


def _equal_phrase(observations: Iterable[Observation]) -> str:
    """What was compared: results or output ("outputs"), or only how the process ended."""
    kinds = {o.entrypoint.returns_result or o.entrypoint.verify_output for o in observations}
    if kinds == {True}:
        return "outputs equal"
    return "exit status equal" if kinds == {False} else "outputs and exit status equal"


def summary(
    before: Counts, after: Counts, revealed: int, observations: Iterable[Observation], changed: bool = False
) -> str:
    observations = list(observations)
    removed = before.breaks - (after.breaks - revealed)
    across = f" across {len(observations)} entrypoints" if len(observations) > 1 else ""
    verb = "removes" if removed >= 0 else "adds"
    parts = [f"{verb} {abs(removed)} break{'s' * (abs(removed) != 1)}{across}"]
    if revealed:
        parts.append(f"reveals {revealed} that an eager frame hid")
    parts.append(f"graphs {before.graphs} → {after.graphs}")
    if before.frames_skipped != after.frames_skipped:
        parts.append(f"frames running eagerly {before.frames_skipped} → {after.frames_skipped}")
    parts.append("outputs differ" if changed else _equal_phrase(observations))
    return "; ".join(parts)


def _new_breaks(
    name: str, found: Sequence[GraphBreak], before: Observation, after: Observation, to_base: LineMap
) -> str | None:
    """The breaks a patched run of `name` shows new, in a few words: the first, and how many more."""
    other_kind = changed_kind(found, before, after)
    shown = list(dict.fromkeys(_short(b, to_base) for b in found if b not in other_kind))
    more = f" and {len(shown) - 1} more" if len(shown) > 1 else ""
    return f"new break{'s' * bool(more)} in {name}: {shown[0]}{more}" if shown else None


def judge(
    goals: Sequence[Goal],
    before: Mapping[str, Observation],
    after: Mapping[str, Observation],
    compare: ResultComparer,
    later: FixableLater = never,
    to_base: LineMap = same_line,
) -> Judgement:
    """Did the patch do what it promised on every entrypoint re-run, and leave the code better?
    Pure but for `compare`."""
    names = sorted(n for n in after if n in before)
    old, new = totals(before[n].report for n in names), totals(after[n].report for n in names)
    revealed: list[GraphBreak] = []
    problems: list[str] = []
    changed = False
    for name in names:
        problem = changed_behaviour(before[name], after[name], compare)
        found, shown = appeared_breaks(before[name], after[name], to_base)
        revealed.extend(shown)
        changed = changed or problem is not None
        problems += [p for p in (problem, _new_breaks(name, found, before[name], after[name], to_base)) if p]
    instead: list[GraphBreak] = []
    for target, entrypoints in goals:
        problem = still_there(target, entrypoints, before, after)
        successor = None if problem else renamed(target, entrypoints, before, after)
        if successor is not None:
            instead.append(successor[0])
            problem = (
                f"the break comes back as {_short(successor[0], to_base)} in {successor[1]}: "
                "the patch renames it, it does not fix it"
            )
        problems += [p for p in [problem or only_hidden(target, entrypoints, before, after, to_base)] if p]
    if goals and not problems:
        worse = no_better(old, new, revealed, later, to_base)
        problems += [worse] if worse else []
        instead += [next(b for b in revealed if not later(b))] if worse else []
    count = sum(b.count for b in revealed)
    text = summary(old, new, count, (after[n] for n in names), changed)
    fingerprints = tuple(dict.fromkeys(b.fingerprint for b in revealed))
    return Judgement(not problems, "; ".join(dict.fromkeys(problems)), text, old, new, fingerprints, tuple(instead))
