"""Which breaks a fix pushed to a pull request's branch may be for: the ones the PR added. A break
the diff calls new, or one it calls revealed (a break before the PR hid it) on a line the PR
changed, and only on a line the PR changed, because a fix commit on someone's branch edits only
what they edited (as review suggestions do). Breaks that predate the PR are left alone, each with
why and where to fix it instead. `widen` (`/gb-fix all`) takes in every break in a file the PR
touched.

The same rule decides twice: in the job that runs the PR's code, which breaks are worth verifying,
and in the job that pushes, which verified fixes may go into the commit (`pushable`) — there from
the lines the API says the PR changed, never from the fix job's word. Pure, but for `changed_lines`,
which reads them from git where no API is at hand."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path

from gbbot.core.fixes import FixResult
from gbbot.core.model import ChangeState, Diff, GraphBreak, Report
from gbbot.edges import git
from gbbot.publish.review import added_lines

Changed = Mapping[str, AbstractSet[int]]  # path → the lines the PR added or changed

ELSEWHERE = "fix it with `gbbot fix` locally, or take it from the audit's fix PR"
PREDATES = f"it predates this pull request, so /gb-fix leaves it alone; {ELSEWHERE}"
OFF_CHANGE = "not on a line this pull request changed, so /gb-fix leaves it alone"
NOT_TOUCHED = "in a file this pull request does not touch"


@dataclass(frozen=True)
class Left:
    """A break /gb-fix does not attempt, and why."""

    brk: GraphBreak
    reason: str


@dataclass(frozen=True)
class Scope:
    breaks: tuple[GraphBreak, ...]  # the breaks to fix, once each, in report order
    left: tuple[Left, ...]  # the others, once each, with why

    @property
    def fingerprints(self) -> tuple[str, ...]:
        return tuple(b.fingerprint for b in self.breaks)


def added_by_pr(diff: Diff | None, brk: GraphBreak) -> ChangeState | None:
    """NEW or REVEALED when the diff says the PR added `brk`, else None: the one place delivery
    reads the diff's states. No diff: no break is known to be the PR's."""
    state = diff.state(brk) if diff is not None else None
    return state if state in (ChangeState.NEW, ChangeState.REVEALED) else None


def on_change(file: str, line: int, changed: Changed) -> bool:
    return line in changed.get(file, ())


def _why_left(brk: GraphBreak, added: ChangeState | None, widen: bool) -> str:
    if widen:
        return f"{NOT_TOUCHED}; {ELSEWHERE}"
    if added is ChangeState.NEW:
        return f"this pull request added it, but it is {OFF_CHANGE} (a change elsewhere reaches it); {ELSEWHERE}"
    if added is ChangeState.REVEALED:
        why = "this pull request revealed it (a break hid it before), but it is"
        return f"{why} {OFF_CHANGE}; {ELSEWHERE}"
    return PREDATES


def _in_scope(brk: GraphBreak, added: ChangeState | None, changed: Changed, widen: bool) -> bool:
    if widen:
        return brk.file in changed
    return added is not None and on_change(brk.file, brk.line, changed)


def scope(report: Report, changed: Changed, widen: bool = False) -> Scope:
    """The report's counted breaks split into those a fix for this PR is for and those left alone."""
    seen: dict[str, GraphBreak] = {}
    for brk in report.breaks:
        if not brk.ignored:
            seen.setdefault(brk.fingerprint, brk)
    added = {f: added_by_pr(report.diff, b) for f, b in seen.items()}
    inside = [b for f, b in seen.items() if _in_scope(b, added[f], changed, widen)]
    left = [Left(b, _why_left(b, added[b.fingerprint], widen)) for b in seen.values() if b not in inside]
    return Scope(tuple(inside), tuple(left))


def not_pushable(result: FixResult, changed: Changed, widen: bool = False) -> str | None:
    """Why a verified fix may not go into a commit on the PR's branch, or None: its break must be
    on a line the PR changed (`widen`: in a file the PR touched)."""
    if widen:
        return None if result.file in changed else f"the fix at {result.file}:{result.line} is {NOT_TOUCHED}"
    if on_change(result.file, result.line, changed):
        return None
    return f"the fix at {result.file}:{result.line} is not on a line the pull request changed"


# --- the changed lines, from git -----------------------------------------------------------------


def changed_lines(root: Path, base: str, head: str) -> dict[str, AbstractSet[int]]:
    """path → the head's lines that `base..head` adds or changes, with renames followed as GitHub's
    pull-request files show them (a renamed file's unchanged lines are not changed)."""
    _, out, _ = git.run(root, "diff", "-M", "-U0", "--no-color", base, head)
    return parse_unified(out.decode("utf-8", "replace"))


def parse_unified(text: str) -> dict[str, AbstractSet[int]]:
    """path → added lines, from `git diff` output: a renamed file is there even when no line of it
    changed, a deleted file is not (a path git quotes is missed: it cannot match a break's file)."""
    patches: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("diff --git "):
            current = None
        elif line.startswith("rename to ") and current is None:
            patches.setdefault(line[len("rename to ") :], [])
        elif line.startswith("+++ ") and current is None:
            path = line[4:]
            current = patches.setdefault(path[2:], []) if path.startswith("b/") else []
        elif current is not None:
            current.append(line)
    return {path: added_lines("\n".join(lines)) for path, lines in patches.items()}
