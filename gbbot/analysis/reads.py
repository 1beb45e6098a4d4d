"""Whether the other side of a diff would read what one side's run read: when it would, its run
would do what this one did, so `diff` takes this result for the other side instead of running it.
The side whose record decides is the base (checks/plan.py): it ran first, before any code of the
change, so the change's code wrote nothing of the record.

A warm child records every file it opens for reading and every directory it lists (see
backends/warm_server.py), and for the import system's searches, the module names it looked for in
each directory. An entrypoint is skipped only when that record is whole (it started no other
program, it did not overflow) and nothing the change touches is in it: no file it read was
modified, added or removed (matched as the file read: a `.pyc` the change adds is that `.pyc`);
no file it tried to open and did not find is one the change adds; no directory it listed gained
or lost an entry (for a directory the import system searched, an entry named like a module it
looked for there; for one searched for installed packages, a `*.dist-info` or `*.egg-info`); and
no file it read is missing from the base commit (an ignored or untracked file), but a bytecode
cache the run wrote itself, which stands for its source. What is outside the repository (the
interpreter, site-packages, /tmp) is the same for both runs, since both run with the same
interpreter and environment.

What such a record cannot see: a file read by C code that opens it itself (not through Python's
`open`), and a file whose mere existence (`os.path.exists`) changes what the program does without
it being opened or its directory listed. `--no-warm` runs both sides every time.

Pure: paths and sets in, a reason or None out.
"""

from __future__ import annotations

import importlib.machinery
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from gbbot.core.model import Reads

EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)
# A record kept beyond its run (the cache) names paths below the repository's top level as if the
# top level were `/`: `/pkg/m.py`. Read with these tops, `relative` gives `pkg/m.py` back.
ROOTED = ("",)
NOT_RECORDED = "what it read was not recorded (it did not run in the warm server)"
DISTRIBUTIONS = (".dist-info", ".egg-info")  # what a reader of installed packages' metadata looks for


def _parents(path: str) -> Iterable[str]:
    """Each entry on the way down to a path, top first: `a/b/c.py` → `a`, `a/b`, `a/b/c.py`."""
    parts = path.split("/")
    return ("/".join(parts[: i + 1]) for i in range(len(parts)))


def _entries(files: Iterable[str]) -> set[str]:
    return {entry for f in files for entry in _parents(f)}


def _moved(paths: Iterable[str], there: set[str]) -> dict[str, set[str]]:
    """Directory → the entries it gains or loses when each of `paths` appears (or goes): the
    first entry on the way down that `there` (the other side) lacks."""
    found: dict[str, set[str]] = {}
    for path in paths:
        first = next((entry for entry in _parents(path) if entry not in there), None)
        if first is not None:
            directory, _, name = first.rpartition("/")
            found.setdefault(directory, set()).add(name)
    return found


@dataclass(frozen=True)
class Changes:
    """The working tree against the base commit, paths relative to the repository's top level."""

    base_files: frozenset[str]  # every file of the base commit
    touched: frozenset[str]  # modified, added, removed or retyped, and untracked files
    moved: Mapping[str, frozenset[str]]  # directory ("" for the top level) → entries it gains or loses

    @classmethod
    def of(cls, base_files: Iterable[str], name_status: Sequence[tuple[str, str]], untracked: Iterable[str]) -> Changes:
        """From the base commit's files, `git diff --no-renames --name-status BASE` (status, path)
        and the untracked files that are not ignored."""
        base = frozenset(base_files)
        added = {p for status, p in name_status if status.startswith("A")} | set(untracked)
        removed = {p for status, p in name_status if status.startswith("D")}
        moved: dict[str, set[str]] = {}
        for side in (_moved(added, _entries(base)), _moved(removed, _entries((base - removed) | added))):
            for directory, names in side.items():
                moved.setdefault(directory, set()).update(names)
        touched = {p for _, p in name_status} | added
        return cls(base, frozenset(touched), {d: frozenset(n) for d, n in moved.items()})


# --- the decision ------------------------------------------------------------------------------


def relative(path: str, tops: Sequence[str]) -> str | None:
    """`path` below one of `tops` (the top level as given and as resolved), or None outside."""
    for top in tops:
        if path == top:
            return ""
        if path.startswith(top.rstrip("/") + "/"):
            return path[len(top.rstrip("/")) + 1 :]
    return None


def rooted(found: Reads, tops: Sequence[str]) -> Reads:
    """The record as it can outlive its checkout: only what lies below one of `tops` (the
    checkout's top level), each path as if the top level were `/` (see ROOTED). What lies outside
    (the interpreter, site-packages) is the same on both sides of a diff, so nothing is lost."""

    def below(paths: Iterable[str]) -> frozenset[str]:
        return frozenset("/" + rel for path in paths if (rel := relative(path, tops)) is not None)

    searched: dict[str, set[str]] = {}
    for path, names in found.searched.items():
        if (rel := relative(path, tops)) is not None:
            searched.setdefault("/" + rel, set()).update(names)
    return Reads(
        below(found.files),
        below(found.directories),
        spawned=found.spawned,
        absent=below(found.absent),
        overflow=found.overflow,
        searched={d: frozenset(n) for d, n in searched.items()},
        metadata=below(found.metadata),
    )


def compiled_from(path: str) -> str | None:
    """The source a bytecode cache the run wrote itself was compiled from:
    `pkg/__pycache__/m.cpython-311.pyc` → `pkg/m.py`; None for any other path."""
    pure = PurePosixPath(path)
    if pure.suffix != ".pyc" or pure.parent.name != "__pycache__":
        return None
    return str(pure.parent.parent / (pure.name.split(".", 1)[0] + ".py")).removeprefix("./")


def why_rerun(reads: Reads | None, changes: Changes, tops: Sequence[str]) -> str | None:
    """Why this entrypoint must run again on the other side, in words; None when its result there
    would be this one: everything it read is in the base commit, unchanged. A file is matched as
    the file that was read (a committed `.pyc` the change adds is that `.pyc`, never the source
    beside it); only a bytecode cache the commit lacks, which the run wrote itself, stands for the
    source it was compiled from."""
    if reads is None:
        return NOT_RECORDED
    if reads.spawned:
        return f"it started another program ({reads.spawned}), whose reads are not recorded"
    if reads.overflow:
        return f"it read more than {Reads.MAX_PATHS} files or directories"
    for path in sorted(reads.files):
        rel = relative(path, tops)
        if not rel:
            continue
        if rel in changes.touched:
            return f"it read `{rel}`, which the change touches"
        if rel not in changes.base_files:
            source = compiled_from(rel)
            if source is None or source not in changes.base_files:
                return f"it read `{rel}`, which is not in the base commit"
            if source in changes.touched:
                return f"it read `{rel}`, compiled from `{source}`, which the change touches"
    for path in sorted(reads.absent):  # not where it ran: the other side may have it
        rel = relative(path, tops)
        if rel and (rel in changes.base_files or rel in changes.touched):
            return f"it tried to read `{rel}`, which the change adds or removes"
    return _why_listing(reads, changes, tops)


def _stem(name: str) -> str:
    """The module name an entry would be imported as: `m.py`, `m.cpython-311-x86_64-linux-gnu.so`,
    the package directory `m` → `m` (anything else with that stem counts too: cautious)."""
    return name.split(".", 1)[0]


def _under(paths: Iterable[str], tops: Sequence[str]) -> set[str]:
    return {rel for path in paths if (rel := relative(path, tops)) is not None}


def _why_listing(reads: Reads, changes: Changes, tops: Sequence[str]) -> str | None:
    """An entry the change adds or removes where the run looked, that its search could find."""
    relisted = sorted(_under(reads.directories, tops) & changes.moved.keys())
    if relisted:
        directory = relisted[0]
        return f"it listed `{directory or '.'}/`, where the change adds or removes `{min(changes.moved[directory])}`"
    for directory in sorted(_under(reads.metadata, tops) & changes.moved.keys()):
        found = sorted(n for n in changes.moved[directory] if n.endswith(DISTRIBUTIONS))
        if found:
            where = f"`{directory or '.'}/`"
            return f"it looked for installed packages in {where}, where the change adds or removes `{found[0]}`"
    looked: dict[str, set[str]] = {}  # a directory seen by its given and its resolved path is one
    for path, names in reads.searched.items():
        if (rel := relative(path, tops)) is not None:
            looked.setdefault(rel, set()).update(names)
    for directory in sorted(looked.keys() & changes.moved.keys()):
        found = sorted(n for n in changes.moved[directory] if _stem(n) in looked[directory])
        if found:
            where = f"`{directory or '.'}/`"
            return f"it looked for module `{_stem(found[0])}` in {where}, where the change adds or removes `{found[0]}`"
    listed = _under(reads.directories, tops)
    for path in sorted(changes.touched):  # an extension module is loaded without an `open`
        directory, _, name = path.rpartition("/")
        if name.endswith(EXTENSION_SUFFIXES) and (directory in listed or _stem(name) in looked.get(directory, ())):
            return f"it may load `{path}`, which the change touches"
    return None
