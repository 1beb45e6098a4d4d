"""Torch's graph-break registry (torch/_dynamo/graph_break_registry.json) as an identity index.

A registry id (GB0039) is permanent; its gb_type wording may change between releases, and the
registry keeps every wording an id has had (newest first). So the id is a break's identity, and a
message that carries no id (an older torch, a message printed without its doc link) is mapped to
it through that history. The JSON is found without importing torch (nothing of torch runs) and
read at most once per process.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

REGISTRY_NAME = "graph_break_registry.json"


def registry_path() -> Path | None:
    """The installed torch's registry file, or None when there is no torch or no registry."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    path = Path(spec.origin).parent / "_dynamo" / REGISTRY_NAME
    return path if path.is_file() else None


@dataclass(frozen=True)
class IdIndex:
    """gb_type (any wording an id has had) → id, and the id's current wording."""

    by_type: Mapping[str, str]
    current: Mapping[str, str]

    def id_for(self, gb_type: str) -> str | None:
        return self.by_type.get(" ".join(gb_type.split()))


EMPTY = IdIndex({}, {})


def index(registry: Mapping[str, list[dict]]) -> IdIndex:
    """Pure: registry JSON → IdIndex. A wording two ids have had names neither (ambiguous)."""
    owners: dict[str, set[str]] = {}
    current: dict[str, str] = {}
    for gb_id, entries in registry.items():
        for n, entry in enumerate(entries):
            gb_type = " ".join(str(entry.get("Gb_type", "")).split())
            if not gb_type:
                continue
            owners.setdefault(gb_type, set()).add(gb_id.upper())
            if n == 0:
                current[gb_id.upper()] = gb_type
    by_type = {t: next(iter(ids)) for t, ids in owners.items() if len(ids) == 1}
    return IdIndex(by_type, current)


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@functools.cache
def installed() -> IdIndex:
    """The installed torch's index; empty when torch or its registry is missing or unreadable."""
    path = registry_path()
    if path is None:
        return EMPTY
    try:
        return index(read(path))
    except (OSError, ValueError, AttributeError):
        return EMPTY
