"""A warm child's record of what it read (written by warm_server.py in the child, a process that
ran PR code), read back within bounds and checked field by field into `model.Reads`. What such a
record implies for a diff is decided in analysis/reads.py."""

from __future__ import annotations

from gbbot.core import untrusted_json
from gbbot.core.model import Reads

MAX_PATHS = Reads.MAX_PATHS
MAX_PATH_CHARS = 4096
MAX_RECORD_BYTES = 8 << 20
BOUNDS = untrusted_json.Bounds(depth=3, values=2 * MAX_PATHS + 16, number_chars=8)


def parse(text: str) -> Reads:
    """A child's record (JSON written by a process that ran PR code): bounded and checked field by
    field; `untrusted_json.Refused` when it is not what a child writes."""
    return from_data(untrusted_json.loads(text, BOUNDS))


def from_data(data: object) -> Reads:
    """One record, already parsed within bounds, checked field by field."""
    if not isinstance(data, dict):
        raise untrusted_json.Refused("not an object")
    spawned, overflow = data.get("spawned"), data.get("overflow")
    if spawned is not None and not (isinstance(spawned, str) and len(spawned) <= 100):
        raise untrusted_json.Refused("`spawned` is not a short string")
    if not isinstance(overflow, bool):
        raise untrusted_json.Refused("`overflow` is not true or false")
    return Reads(
        _paths(data, "files"),
        _paths(data, "directories"),
        spawned=spawned,
        overflow=overflow,
        searched=_searched(data.get("searched")),
        metadata=_paths(data, "metadata"),
        absent=_paths(data, "absent") if "absent" in data else frozenset(),
    )


def to_data(found: Reads) -> dict:
    """A record as `from_data` reads it back (sorted, so that the same record is the same text)."""
    return {
        "files": sorted(found.files),
        "directories": sorted(found.directories),
        "absent": sorted(found.absent),
        "metadata": sorted(found.metadata),
        "searched": {d: sorted(n) for d, n in sorted(found.searched.items())},
        "spawned": found.spawned,
        "overflow": found.overflow,
    }


def _searched(found: object) -> dict[str, frozenset[str]]:
    if not isinstance(found, dict) or len(found) > MAX_PATHS:
        raise untrusted_json.Refused(f"`searched` is not an object of at most {MAX_PATHS} directories")
    for directory, names in found.items():
        if not (directory.startswith("/") and len(directory) <= MAX_PATH_CHARS):
            raise untrusted_json.Refused("`searched` holds something other than absolute paths")
        if not isinstance(names, list) or not all(_module_name(n) for n in names):
            raise untrusted_json.Refused("`searched` holds something other than lists of module names")
    return {directory: frozenset(names) for directory, names in found.items()}


def _module_name(name: object) -> bool:
    return isinstance(name, str) and 0 < len(name) <= 255 and "/" not in name and "." not in name


def _paths(data: dict, key: str) -> frozenset[str]:
    paths = data.get(key)
    if not isinstance(paths, list) or len(paths) > MAX_PATHS:
        raise untrusted_json.Refused(f"`{key}` is not a list of at most {MAX_PATHS} paths")
    if not all(isinstance(p, str) and p.startswith("/") and len(p) <= MAX_PATH_CHARS for p in paths):
        raise untrusted_json.Refused(f"`{key}` holds something other than absolute paths")
    return frozenset(paths)
