"""A file's text before and after a fix: the unified diff and the replaced line ranges. Pure."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import cached_property

from gbbot.core.fixes import Hunk


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


def _kept_lines(original: list[str], current: list[str]) -> dict[int, int]:
    """Line index in `current` → its index in `original`, for lines that earlier edits left alone."""
    where: dict[int, int] = {}
    for block in difflib.SequenceMatcher(a=current, b=original, autojunk=False).get_matching_blocks():
        where.update((block.a + k, block.b + k) for k in range(block.size))
    return where


def _original_span(where: dict[int, int], i1: int, i2: int, count: int, total: int) -> tuple[int, int] | None:
    """The original lines that `current[i1:i2]` stands for (for an insertion, i1 == i2: the
    place between two original neighbours), or None when earlier edits wrote any of them."""
    if i1 == i2:
        below = where[i1 - 1] + 1 if i1 > 0 and i1 - 1 in where else (0 if i1 == 0 else None)
        above = where.get(i1) if i1 < count else total
        return (below, below) if below is not None and below == above else None
    mapped = [where.get(i) for i in range(i1, i2)]
    if None in mapped or mapped != list(range(mapped[0], mapped[0] + i2 - i1)):  # type: ignore[operator]
        return None
    return mapped[0], mapped[0] + i2 - i1  # type: ignore[operator]


def rebased(patch: FilePatch, original: str) -> FilePatch | None:
    """`patch`, made on a text that earlier edits changed from `original`, as a patch of
    `original` making only this patch's changes: its diff and hunks name the original's lines
    (what a review suggestion on the unpatched file needs). None when it rewrites or sits next
    to lines that the earlier edits wrote."""
    if patch.before == original:
        return patch
    old, mid, new = (text.splitlines(keepends=True) for text in (original, patch.before, patch.after))
    where = _kept_lines(old, mid)
    out: list[str] = []
    taken = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=mid, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        span = _original_span(where, i1, i2, len(mid), len(old))
        if span is None or span[0] < taken:
            return None
        out += [*old[taken : span[0]], *new[j1:j2]]
        taken = span[1]
    return FilePatch(patch.path, original, "".join([*out, *old[taken:]]))


def original_line(original: str, current: str, line: int) -> int | None:
    """Line `line` (1-based) of `current` as a line of `original`, which earlier edits turned into
    `current`; None for a line the edits wrote."""
    where = _kept_lines(original.splitlines(keepends=True), current.splitlines(keepends=True))
    index = where.get(line - 1)
    return None if index is None else index + 1
