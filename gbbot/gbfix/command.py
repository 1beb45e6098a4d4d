"""The `/gb-fix` command, read from the first line of a comment only. Pure, no shell: the text is
split on whitespace and each word is matched against a closed set of shapes, so nothing in a
comment can become an argument gbbot did not mean to pass."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

COMMAND = "/gb-fix"
FIRST_LINE_MAX = 200  # characters; a longer first line is not a command
WORDS_MAX = 2  # `dry-run` and one selector (`all` is one)
WIDEN = "all"
GB_ID = re.compile(r"GB\d{4}", re.IGNORECASE)
FINGERPRINT = re.compile(r"[0-9a-f]{16}")
PY_PATH = re.compile(r"(?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_.-]+\.py")

USAGE = (
    "`/gb-fix` as the first line of a comment: verify fixes for the graph breaks this PR added, on the "
    "lines it changed, and push them as one commit. `/gb-fix GB0059` (one kind of break), "
    "`/gb-fix path/to/file.py` (one file), `/gb-fix 0123456789abcdef` (one break, by fingerprint), "
    "`/gb-fix all` (every break in the files this PR changed, older ones too), "
    "`/gb-fix dry-run` (post the patch instead), `/gb-fix help`."
)


class Kind(Enum):
    FIX = "fix"
    HELP = "help"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Command:
    kind: Kind
    dry_run: bool = False
    gb_id: str = ""
    fingerprint: str = ""
    path: str = ""
    word: str = ""  # the word that was not understood (UNKNOWN)
    widen: bool = False  # `all`: every break in the files the PR changed, not only the PR's own

    @property
    def selects(self) -> bool:
        """Whether the command names breaks (a kind, a file, a fingerprint) beyond its scope."""
        return bool(self.gb_id or self.fingerprint or self.path)

    @property
    def args(self) -> str:
        """The command's words, normalised: what the step outputs as `args`."""
        if self.kind is not Kind.FIX:
            return self.kind.value
        words = ["dry-run"] if self.dry_run else []
        words += [WIDEN] if self.widen else []
        return " ".join([*words, *(w for w in (self.gb_id, self.fingerprint, self.path) if w)])


def first_line(body: str) -> str:
    return body[: FIRST_LINE_MAX + 2].lstrip("\ufeff").splitlines()[0].strip() if body.strip() else ""


def _selector(word: str) -> dict[str, object] | None:
    if word == WIDEN:
        return {"widen": True}
    if GB_ID.fullmatch(word):
        return {"gb_id": word.upper()}
    if FINGERPRINT.fullmatch(word):
        return {"fingerprint": word}
    if PY_PATH.fullmatch(word) and ".." not in word.split("/") and not word.startswith("/"):
        return {"path": word}
    return None


def parse(body: str) -> Command | None:
    """The command on the comment's first line, or None when that line is not one. Words that are
    not understood make an UNKNOWN command, answered with the usage."""
    line = first_line(body)
    if len(line) > FIRST_LINE_MAX:
        return None
    words = line.split()
    if not words or words[0] != COMMAND:
        return None
    words = words[1:]
    if words == ["help"]:
        return Command(Kind.HELP)
    dry_run = bool(words) and words[0] == "dry-run"
    words = words[1:] if dry_run else words
    if len(words) > WORDS_MAX - 1:
        return Command(Kind.UNKNOWN, word=words[1])
    selected = _selector(words[0]) if words else {}
    if selected is None:
        return Command(Kind.UNKNOWN, word=words[0])
    return Command(Kind.FIX, dry_run=dry_run, **selected)
