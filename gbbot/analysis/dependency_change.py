"""A pull request that changes its dependencies: which of the breaks that came or went the new
versions brought, and which the code change did.

Pure. A break that came (new, revealed) is the code's when one of its repository frames (its site
or a line of its user stack) is a line the head added or changed; one that went (fixed, hidden)
when one of the base's frames is a line the change removed or replaced; the dependencies' when
the pull request changes no code, or none of its frames is a changed line. A break raised inside a
library under a changed line of the repository is both's: the call and the library both changed,
and the frames cannot tell which brought it. Recompilation problems the same, by the frame that
recompiled (its repository line, and the lines its guards point at): a new one by the head's
lines, a fixed one by the base's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set

from gbbot.core.model import (
    Cause,
    Change,
    ChangeState,
    DependencyChange,
    Diff,
    GraphBreak,
    PackageChange,
    Recompilation,
)

# path (below the config root) → the lines changed there; None: the whole file (added or removed)
Lines = Mapping[str, Set[int] | None]
HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
CAME = (ChangeState.NEW, ChangeState.REVEALED)
WENT = (ChangeState.FIXED, ChangeState.HIDDEN)


def changed_lines(unified: str, prefix: str = "") -> tuple[dict[str, set[int] | None], dict[str, set[int] | None]]:
    """(head's changed lines, base's changed lines) by path below `prefix`, from `git diff -U0`
    output (a file only one side has is whole on that side)."""
    head: dict[str, set[int] | None] = {}
    base: dict[str, set[int] | None] = {}
    old = new = None
    inside = f"{prefix}/" if prefix else ""
    for line in unified.splitlines():
        if line.startswith("--- "):
            old = _path(line[4:], "a/", inside)
        elif line.startswith("+++ "):
            new = _path(line[4:], "b/", inside)
            if old is None and new is not None:
                head[new] = None
            if new is None and old is not None:
                base[old] = None
        elif (found := HUNK_RE.match(line)) and old is not None and new is not None:
            _add(base, old, int(found.group(1)), int(found.group(2) or 1))
            _add(head, new, int(found.group(3)), int(found.group(4) or 1))
    return head, base


def _path(text: str, side: str, inside: str) -> str | None:
    if not text.startswith(side):
        return None  # /dev/null
    path = text[len(side) :]
    return path.removeprefix(inside) if path.startswith(inside) else None


def _add(lines: dict[str, set[int] | None], path: str, start: int, count: int) -> None:
    if path in lines and lines[path] is None:
        return
    lines.setdefault(path, set()).update(range(start, start + count))  # type: ignore[union-attr]


def _cause(found: GraphBreak | Recompilation, frames: list[tuple[str, int]], lines: Lines, code_changed: bool) -> Cause:
    """The code's when one of `frames` (a break's site and user stack, a recompiled frame's line
    and those its guards point at) lies on a changed line, else the dependencies'."""
    crossed = any((changed := lines.get(path, set())) is None or line in changed for path, line in frames)
    if not code_changed or not crossed:
        return Cause.DEPENDENCIES
    # a changed line of the repository calls into a library: the call and the library both changed
    return Cause.BOTH if found.library_site is not None else Cause.CODE


def recompile_cause(rc: Recompilation, lines: Lines, code_changed: bool) -> Cause:
    """A recompilation problem that came (by the head's lines) or went (by the base's)."""
    frames = [(rc.file, rc.line), *((rc.file, r.line) for r in rc.reasons if r.line is not None)]
    return _cause(rc, frames, lines, code_changed)


def cause(change: Change, head: Lines, base: Lines, code_changed: bool) -> Cause:
    frames = [(change.brk.file, change.brk.line), *((f.file, f.line) for f in change.brk.user_stack)]
    return _cause(change.brk, frames, head if change.state in CAME else base, code_changed)


def attribute(
    diff: Diff,
    packages: tuple[PackageChange, ...],
    head: Lines,
    base: Lines,
    code_changed: bool,
    head_problems: Mapping[str, Recompilation] | None = None,
    base_problems: Mapping[str, Recompilation] | None = None,
) -> DependencyChange:
    """What each break and each recompilation problem that came or went is put down to, with the
    versions that differ. `head_problems`/`base_problems`: each side's problem fingerprint → the
    frame that recompiled."""
    causes = [(c.fingerprint, cause(c, head, base, code_changed)) for c in diff.changes if c.state in (*CAME, *WENT)]
    if diff.recompiles is not None:
        for fingerprints, lines, problems in (
            (diff.recompiled(ChangeState.NEW, ChangeState.NEW_LIMIT), head, head_problems or {}),
            (diff.recompiled(ChangeState.FIXED), base, base_problems or {}),
        ):
            for f in fingerprints:  # a problem whose frame is not known: the code's, when there is code
                found = recompile_cause(problems[f], lines, code_changed) if f in problems else None
                causes.append((f, found or (Cause.CODE if code_changed else Cause.DEPENDENCIES)))
    return DependencyChange(packages, tuple(causes), code_changed)
