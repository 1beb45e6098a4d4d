"""Text fitted to a terminal's columns without breaking what a reader copies: a `file:line` is
never split (a long path loses its leading directories instead), code is cut after a whole token,
and prose wraps at spaces with its indent kept. Pure; the width comes from edges/console."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable

ELLIPSIS = "…"
# a comment line of `gbbot fix`'s output: "#", its indent, the text
COMMENT_RE = re.compile(r"^(#\s*(?:- )?)(.*)$")


def shorten(code: str, limit: int) -> str:
    """At most `limit` characters, cut after a whole token (at a space or before punctuation),
    with "…" saying that something was cut."""
    if len(code) <= limit:
        return code
    head = code[: max(limit - 1, 1)]
    cut = max(head.rfind(" "), *(head.rfind(c) for c in "([{,.=:"))
    return (head[:cut] if cut > limit // 2 else head).rstrip() + ELLIPSIS


def place(path: str, line: int, limit: int) -> str:
    """`path:line` in at most `limit` characters: leading directories give way to "…/", then the
    start of the file name; the line number always stays whole."""
    whole = f"{path}:{line}"
    if len(whole) <= limit:
        return whole
    parts = path.split("/")
    for start in range(1, len(parts)):
        shorter = f"{ELLIPSIS}/{'/'.join(parts[start:])}:{line}"
        if len(shorter) <= limit:
            return shorter
    tail = f":{line}"
    return ELLIPSIS + whole[len(whole) - max(limit - 1, len(tail)) :]


def wrapped(line: str, columns: int, indent: str = "  ") -> list[str]:
    """One line of prose as lines of at most `columns` (a word longer than that stays whole);
    a `# ` or `#   - ` comment keeps its marker on every line."""
    if len(line) <= columns:
        return [line]
    found = COMMENT_RE.match(line)
    lead = found.group(1) if found else ""
    follow = ("#" + " " * (len(lead) - 1)) if found else indent
    return textwrap.wrap(
        line, columns, initial_indent="", subsequent_indent=follow, break_long_words=False, break_on_hyphens=False
    ) or [line]


def fitted_comments(text: str, columns: int) -> str:
    """`gbbot fix`'s block: its `#` comment lines wrapped to `columns`; the diff under them as it
    is (a wrapped diff would no longer apply)."""
    out: list[str] = []
    for line in text.splitlines():
        out += wrapped(line, columns) if line.startswith("#") else [line]
    return "\n".join(out)


def fitted_lines(lines: Iterable[str], columns: int) -> list[str]:
    return [part for line in lines for part in wrapped(line, columns)]
