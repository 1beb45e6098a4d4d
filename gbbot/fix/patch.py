"""A file's text before and after a fix: the unified diff and the replaced line ranges. Pure."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Hunk:
    """Original lines `start_line`..`end_line` (1-based, inclusive) become `replacement`.

    Always covers at least one original line, so it can be a GitHub suggestion (whose range is
    the commented lines): a pure insertion is widened to the line before it."""

    path: str
    start_line: int
    end_line: int
    replacement: tuple[str, ...]  # lines without their newline


@dataclass(frozen=True)
class FilePatch:
    path: str  # repo-relative, POSIX
    before: str
    after: str

    @cached_property
    def diff(self) -> str:
        return unified_diff(self.path, self.before, self.after)

    @cached_property
    def hunks(self) -> tuple[Hunk, ...]:
        return replaced_ranges(self.path, self.before, self.after)

    @property
    def changed(self) -> bool:
        return self.before != self.after


def _with_newlines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def unified_diff(path: str, before: str, after: str, context: int = 3) -> str:
    lines = difflib.unified_diff(_with_newlines(before), _with_newlines(after), f"a/{path}", f"b/{path}", n=context)
    return "".join(lines)


def replaced_ranges(path: str, before: str, after: str) -> tuple[Hunk, ...]:
    """Each changed region as (original line range, new lines); neighbouring regions merged."""
    old, new = before.splitlines(), after.splitlines()
    regions: list[list[int]] = []  # [i1, i2, j1, j2], 0-based half-open
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i1 == i2:  # an insertion: take the line above along (or below, at the top)
            i1, j1 = (i1 - 1, j1 - 1) if i1 > 0 else (i1, j1)
            i2, j2 = (i2, j2) if i1 < i2 else (i2 + 1, j2 + 1)
        if regions and regions[-1][1] >= i1:
            regions[-1][1], regions[-1][3] = max(regions[-1][1], i2), max(regions[-1][3], j2)
        else:
            regions.append([i1, i2, j1, j2])
    return tuple(Hunk(path, i1 + 1, i2, tuple(new[j1:j2])) for i1, i2, j1, j2 in regions)
