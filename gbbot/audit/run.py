"""One audit, composed: run the entrypoints (`repeat` times), make the record, and turn the
history that results into the tracking issue's body and a verdict. Shared by `gbbot audit`
and the action's schedule handler, which differ only in where the record goes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from gbbot.analysis import break_diff, dependence
from gbbot.analysis.policy import Policy
from gbbot.audit import issue
from gbbot.audit.changes import Changes, compare
from gbbot.audit.record import Record, from_reports
from gbbot.checks.head_and_base import commit_source
from gbbot.checks.tree import CheckOptions, check
from gbbot.core import words
from gbbot.core.config import Config
from gbbot.core.errors import ExitCode, GitError
from gbbot.core.model import ChangeState, Report
from gbbot.edges import git

Check = Callable[[int], Report]  # the run's index (0-based) → its report


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def reports(config: Config, check: Check) -> list[Report]:
    return [check(i) for i in range(config.audit.repeat)]


def check_with(root: Path, config: Config, options: CheckOptions) -> Check:
    return lambda index: check(root, config, options)


def record(runs: Sequence[Report], run_url: str | None = None, date: str | None = None) -> Record:
    return from_reports(runs, date or now(), run_url)


@dataclass(frozen=True)
class Outcome:
    records: tuple[Record, ...]  # the charted history, ending with this audit's record
    changes: Changes
    body: str


Renames = Callable[[str, str], Mapping[str, str]]  # (earlier commit, later commit) → old path → new path


def no_renames(_before: str, _after: str) -> Mapping[str, str]:
    return {}


def renames_in(root: Path, log: Callable[[str], None] = lambda _line: None) -> Renames:
    """The files git sees renamed between two audited commits, as report paths (relative to the
    config root `root`). A commit the clone does not have (a shallow checkout) gives none, said."""
    top = git.toplevel(root) or root
    prefix = root.resolve().relative_to(top.resolve()).as_posix()

    def between(before: str, after: str) -> Mapping[str, str]:
        if before == after:
            return {}
        try:
            found = git.renames(top, before, after)
        except GitError as exc:
            log(f"warning: renames between {before[:7]} and {after[:7]} not followed: {exc}")
            return {}
        return break_diff.relative_renames(found, "" if prefix == "." else prefix)

    return between


# (earlier commit, later commit, renames between them) → whether what a break that shows up
# depends on is the earlier commit's (gbbot/analysis/dependence.py)
Sources = Callable[[str, str, Mapping[str, str]], break_diff.CodeCheck]


def no_sources(_before: str, _after: str, _renames: Mapping[str, str]) -> break_diff.CodeCheck:
    return break_diff.unknown


def sources_in(root: Path, log: Callable[[str], None] = lambda _line: None) -> Sources:
    """The two audited commits' source, read from git objects, and the files that differ. A
    commit the clone does not have gives nothing to show, said: what shows up is then new."""
    top = git.toplevel(root) or root
    prefix = root.resolve().relative_to(top.resolve()).as_posix()
    prefix = "" if prefix == "." else prefix

    def between(before: str, after: str, renames: Mapping[str, str]) -> break_diff.CodeCheck:
        try:
            differ = [path for _, path in git.name_status(top, before, after)]
        except GitError as exc:
            log(f"warning: the change between {before[:7]} and {after[:7]} not read: {exc}")
            return break_diff.unknown
        head, base = commit_source(top, prefix, after, {}), commit_source(top, prefix, before, renames)
        return dependence.unchanged(dependence.Change(head, base, dependence.touched_paths(differ, prefix)))

    return between


def outcome(
    history: Sequence[Record],
    mine: Record,
    keep: int,
    where: issue.Where,
    fixes: Sequence[str] = (),
    renames: Renames = no_renames,
    sources: Sources = no_sources,
) -> Outcome:
    """`history` as read back from the data branch (this audit's record in it, unless it was
    not written there) → the records to show, what changed since the one before ours, the body.
    Without `sources`, a break that shows up in a frame that ran eagerly before is new."""
    # By date, ours last among its second: a record's date has whole seconds, and two audits in one
    # second sort by commit id on the branch, which says nothing of which came first. Ours as read
    # back is known by its commit and date, not by equality: a copy that read back otherwise must
    # never become the previous audit (ours compared with itself would say "no regression").
    earlier = (r for r in history if r.date <= mine.date and (r.commit, r.date) != (mine.commit, mine.date))
    upto = [*sorted(earlier, key=lambda r: r.date), mine]
    previous = upto[-2] if len(upto) > 1 else None
    moved = renames(previous.commit, mine.commit) if previous else {}
    in_base = sources(previous.commit, mine.commit, moved) if previous else break_diff.unknown
    changes = compare(previous, mine, moved, in_base)
    shown = tuple(upto[-keep:])
    return Outcome(shown, changes, issue.render(shown, changes, where, fixes))


def exit_code(result: Outcome, policy: Policy) -> int:
    """By the breaks' policy: new → a regression fails; any → any counted break (or an entrypoint
    not running) fails; none → never."""
    current = result.changes.current
    if policy.breaks == "none":
        return ExitCode.OK
    if policy.breaks == "any":
        failed = bool(current.breaks()) or bool(result.changes.failing)
        return ExitCode.POLICY if failed else ExitCode.OK
    return ExitCode.POLICY if result.changes.regression else ExitCode.OK


def verdict(result: Outcome) -> str | None:
    changes = result.changes
    if not changes.regression:
        return None
    found = words.regression(len(changes.of(ChangeState.NEW)), [s.name for s in changes.stopped], markdown=False)
    return f"audit regression ({changes.cause}): {found}"
