"""The repository as `gbbot fix` sees it: files read for planning, verified patches written
back, installed libraries looked up for scaffolds. Only files inside the repository are read
as patchable or written; nothing in site-packages ever is."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

from gbbot.analysis.classify import SITE_RE
from gbbot.core.config import Config
from gbbot.edges import git
from gbbot.fix.patch import FilePatch
from gbbot.fix.plan import FileReader, Unpatchable


def _inside(root: Path, relative: str) -> Path:
    if SITE_RE.search("/" + relative):
        raise Unpatchable(f"{relative} is in an installed package; gbbot never patches site-packages")
    path = root / relative
    if not path.resolve().is_relative_to(root.resolve()):
        raise Unpatchable(f"{relative} resolves outside the repository; gbbot only patches files inside it")
    return path


def repo_reader(root: Path) -> FileReader:
    def read(relative: str) -> str:
        path = _inside(root, relative)
        try:
            with path.open(encoding="utf-8", newline="") as handle:
                return handle.read()
        except FileNotFoundError:
            raise Unpatchable(f"{relative}: no such file in the repository") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise Unpatchable(f"{relative}: cannot read it ({exc})") from None

    return read


def copy_reader(root: Path, copy: Path) -> FileReader:
    """Files as the scratch copy `copy` of `root` holds them (with the patches of earlier rounds),
    under the repository's rules of what may be patched."""
    check, read = repo_reader(root), repo_reader(copy)

    def read_copy(relative: str) -> str:
        check(relative)
        try:
            return read(relative)
        except Unpatchable:  # an ignored directory, linked into the copy: the same file
            return check(relative)

    return read_copy


def python_files(root: Path) -> tuple[str, ...]:
    """The repository's Python files (tracked, and untracked ones git does not ignore)."""
    listed = git.listed_files(root)
    if listed is None:
        listed = tuple(p.relative_to(root).as_posix() for p in root.rglob("*.py") if ".git" not in p.parts)
    return tuple(p for p in listed if p.endswith(".py"))


def source_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def write_patch(root: Path, patch: FilePatch) -> str | None:
    """Write one verified patch into the repository, only onto the very text it was verified on;
    a note instead when the file moved on or cannot be written."""
    try:
        if source_hash(repo_reader(root)(patch.path)) != source_hash(patch.before):
            return f"{patch.path} changed after its patch was verified; not written"
        with _inside(root, patch.path).open("w", encoding="utf-8", newline="") as handle:
            handle.write(patch.after)
    except Unpatchable as exc:
        return f"{exc}; not written"
    except OSError as exc:
        return f"{patch.path}: cannot write it ({exc.strerror or exc}); not written"
    return None


def _library_entries(root: Path, config: Config) -> list[str]:
    entries = [p for p in sys.path if p and SITE_RE.search(p + "/")]
    configured = [v for e in config.entrypoints for k, v in e.env if k == "PYTHONPATH"]
    for value in [os.environ.get("PYTHONPATH", ""), *configured]:
        entries += [str(root / p) for p in value.split(os.pathsep) if p]
    return entries


def library_lookup(root: Path, config: Config) -> Callable[[str], str | None]:
    """Find an installed library's file by its display path (`pkg/mod.py`): in site-packages
    directories and in the PYTHONPATH the entrypoints run with. Read only."""
    entries = _library_entries(root, config)

    def lookup(display: str) -> str | None:
        for entry in dict.fromkeys(entries):
            candidate = Path(entry) / display
            if candidate.is_file():
                try:
                    return candidate.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    return None
        return None

    return lookup


def config_path(root: Path, config: Config) -> str | None:
    """The configuration file's path in the repository (None: it is outside, or not a file)."""
    path = Path(config.path)
    path = path if path.is_absolute() else root / path
    try:
        relative = path.resolve().relative_to(root.resolve()).as_posix()
    except (OSError, ValueError):
        return None
    return relative if (root / relative).is_file() else None
