"""The verified patch as it crosses from the job that ran the PR's code to the job that may push:
written in one canonical form (`render`), and read back as untrusted bytes (`paths_of`) — size-capped,
text only, only in-place edits of regular files — before anything else is believed. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gbbot.fix.patch import FilePatch

PATCH_MAX_BYTES = 1024 * 1024
PROTECTED_DIRS = (".github/",)  # workflows, actions, CODEOWNERS: never changed by gbbot
DIFF_GIT = re.compile(r"diff --git a/(?P<a>\S+) b/(?P<b>\S+)")
# Extended header lines that would change what a file is rather than what it says.
NOT_AN_EDIT = {
    "old mode": "changes a file's mode",
    "new mode": "changes a file's mode",
    "new file mode": "creates a file",
    "deleted file mode": "deletes a file",
    "similarity index": "renames or copies a file",
    "dissimilarity index": "rewrites a file",
    "rename from": "renames a file",
    "rename to": "renames a file",
    "copy from": "copies a file",
    "copy to": "copies a file",
    "Binary files": "changes a binary file",
    "GIT binary patch": "changes a binary file",
}
HUNK_LINE_STARTS = (" ", "+", "-", "\\", "@@")


@dataclass(frozen=True)
class Dropped:
    """A verified fix that is not delivered: its break's fingerprint, and why."""

    fingerprint: str
    reason: str


@dataclass(frozen=True)
class Refused:
    reason: str
    dropped: tuple[Dropped, ...] = ()  # the verified fixes refused, each with its own reason


def render(patches: Iterable[FilePatch]) -> str:
    """The patch of several files, in path order, in the form both jobs write and compare."""
    return "".join(f"diff --git a/{p.path} b/{p.path}\n{p.diff}" for p in sorted(patches, key=lambda p: p.path))


def render_texts(texts: Iterable[tuple[str, str, str]]) -> str:
    """`render` of (path, text before, text after) for each file."""
    return render(FilePatch(path, before, after) for path, before, after in texts)


def _header_problem(line: str, path: str) -> str | None:
    for start, what in NOT_AN_EDIT.items():
        if line.startswith(start):
            return f"the patch {what} ({path})"
    if line.startswith("--- ") and line != f"--- a/{path}":
        return f"the patch's old file is not {path}"
    if line.startswith("+++ ") and line != f"+++ b/{path}":
        return f"the patch's new file is not {path}"
    if not line.startswith(("--- ", "+++ ", "index ")) or (line.startswith("index ") and len(line.split()) > 2):
        return f"the patch has a header line gbbot does not write ({path})"
    return None


def paths_of(data: bytes, max_bytes: int = PATCH_MAX_BYTES) -> tuple[str, ...] | Refused:
    """The files an untrusted patch edits in place, or why it is refused."""
    if len(data) > max_bytes:
        return Refused(f"the patch has {len(data)} bytes, over the {max_bytes} gbbot accepts")
    if b"\0" in data:
        return Refused("the patch is binary")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Refused("the patch is not UTF-8 text")
    paths: list[str] = []
    in_header = False
    for line in text.split("\n")[: -1 if text.endswith("\n") else None]:
        if line.startswith("diff "):
            match = DIFF_GIT.fullmatch(line)
            if match is None or match["a"] != match["b"]:
                return Refused("the patch renames a file or names one gbbot cannot read")
            paths.append(match["a"])
            in_header = True
        elif not paths:
            return Refused("the patch does not start with a file header")
        elif in_header and not line.startswith("@@"):
            problem = _header_problem(line, paths[-1])
            if problem:
                return Refused(problem)
        elif not line.startswith(HUNK_LINE_STARTS):
            return Refused(f"the patch has a line that is not part of a hunk ({paths[-1]})")
        else:
            in_header = False
    if len(set(paths)) != len(paths):
        return Refused("the patch names a file twice")
    return tuple(paths)


def protected(paths: Sequence[str], config_paths: Sequence[str], named: Iterable[str]) -> str | None:
    """Why a fix commit may not touch one of `paths`, or None: gbbot never changes `.github/`, nor
    its own config but where a verified fix names it (a setting in a `model:` entry's `compile:`
    option, which re-deriving then makes again), nor any file that no verified fix names."""
    allowed = set(named)
    for path in paths:
        if path.startswith("/") or ".." in path.split("/"):
            return f"{path} is not a path inside the repository"
        if path.startswith(PROTECTED_DIRS):
            return f"{path}: gbbot never changes files under .github/"
        if path in config_paths and path not in allowed:
            return f"{path}: gbbot changes its own config only for a verified fix's setting"
        if path not in allowed:
            return f"{path}: no verified fix names this file"
    return None
