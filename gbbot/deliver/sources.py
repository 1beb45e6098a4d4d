"""The PR's files, read as data (never checked out, never run): what gbbot re-derives fixes on.
Two readers of the same shape: `Pinned`, the files at the pinned commit read from git objects (the
job that commits), and `pr_files`, the files at the PR's head read through the API (the publisher,
which has no checkout of the PR). Each file is size-capped and must be UTF-8, else it is not used.
No LibCST here: a reader is plain I/O."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from github import GithubException

from gbbot.core.limits import PR_SOURCE_MAX_BYTES
from gbbot.edges import git
from gbbot.publish import retry

# repo-relative path → the file's text at the PR's head, or why it cannot be had (`Unreadable`)
SourceReader = Callable[[str], str]
READ_ERRORS = (GithubException, retry.PublishError, requests.exceptions.RequestException)
REGULAR = ("100644", "100755")
SYMLINK = "120000"


class Unreadable(Exception):
    """The PR's version of a file cannot be used: missing, too large, not UTF-8."""


# --- the pinned commit, from git objects -----------------------------------------------------------


@dataclass(frozen=True)
class Pinned:
    """The PR's files as they are at the pinned commit. Only regular files are read (a symlink or a
    submodule is refused), so the recipes see exactly what a commit on top of the pinned one would
    change."""

    root: Path
    commit: str
    max_bytes: int = PR_SOURCE_MAX_BYTES

    def mode(self, path: str) -> str:
        entry = git.tree_entries(self.root, self.commit, [path]).get(path)
        if entry is None:
            raise Unreadable(f"{path} is not in the pinned commit {self.commit[:7]}")
        if entry[0] == SYMLINK:
            raise Unreadable(f"{path} is a symlink at the pinned commit")
        if entry[0] not in REGULAR:
            raise Unreadable(f"{path} is not a regular file at the pinned commit")
        return entry[0]

    def python_files(self) -> tuple[str, ...]:
        """The commit's Python files: where the `torch.compile` calls a fix may edit are searched."""
        return tuple(p for p in git.tree_files(self.root, self.commit) if p.endswith(".py"))

    def read(self, path: str) -> str:
        self.mode(path)
        _, sha, size = git.tree_entries(self.root, self.commit, [path])[path]
        if size > self.max_bytes:
            raise Unreadable(f"{path} has {size} bytes at the pinned commit, over the {self.max_bytes} gbbot reads")
        (blob,) = git.read_blobs(self.root, [sha])
        try:
            return blob.decode("utf-8")
        except UnicodeDecodeError:
            raise Unreadable(f"{path} is not UTF-8 text at the pinned commit") from None


# --- the PR's head, through the API ------------------------------------------------------------------


def _text(found: Any, path: str, max_bytes: int) -> str:
    if isinstance(found, list) or getattr(found, "type", "file") != "file":
        raise Unreadable(f"{path} is not a file at the PR's head")
    if found.size > max_bytes:
        raise Unreadable(f"{path} has {found.size} bytes at the PR's head, over the {max_bytes} gbbot reads")
    if found.encoding != "base64":  # GitHub sends no content for large blobs ("none")
        raise Unreadable(f"{path}: GitHub sent no content for it")
    try:
        return found.decoded_content.decode("utf-8")
    except (UnicodeDecodeError, ValueError):
        raise Unreadable(f"{path} is not UTF-8 text at the PR's head") from None


def pr_files(repo: Any, sha: str, max_bytes: int, retries: retry.Retries, log: retry.Log) -> SourceReader:
    """A reader of the files at commit `sha`; each path is fetched once."""
    seen: dict[str, str | Unreadable] = {}

    def fetch(path: str) -> str | Unreadable:
        try:
            found = retry.call(lambda: repo.get_contents(path, ref=sha), f"{path} at the PR's head", retries, log)
            return _text(found, path, max_bytes)
        except Unreadable as exc:
            return exc
        except READ_ERRORS as exc:
            return Unreadable(f"{path} cannot be read at the PR's head ({retry.describe(exc)})")

    def read(path: str) -> str:
        if path not in seen:
            seen[path] = fetch(path)
        got = seen[path]
        if isinstance(got, Unreadable):
            raise got
        return got

    return read
