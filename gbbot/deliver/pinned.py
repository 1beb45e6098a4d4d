"""The PR's files as they are at the pinned commit, read from git objects as data: never checked
out, never run. Only regular files are read (a symlink or a submodule is refused), size-capped and
UTF-8, so the recipes see exactly what a commit on top of the pinned one would change."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gbbot.core.limits import PR_SOURCE_MAX_BYTES
from gbbot.deliver.rederive import Unreadable
from gbbot.edges import git

REGULAR = ("100644", "100755")
SYMLINK = "120000"


@dataclass(frozen=True)
class Pinned:
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
