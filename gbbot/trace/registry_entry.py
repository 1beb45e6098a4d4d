"""`gbbot explain GBNNNN`: what the installed torch's graph-break registry says about an id.

Reads torch/_dynamo/graph_break_registry.json without importing torch (instant, nothing runs).
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from gbbot.core.doc_links import GRAPH_BREAK_DOC
from gbbot.core.errors import GbbotError
from gbbot.trace import registry

DOC_URL = GRAPH_BREAK_DOC
ID_RE = re.compile(r"GB\d{4}", re.IGNORECASE)


@dataclass(frozen=True)
class Entry:
    gb_id: str
    gb_type: str
    explanation: str
    hints: tuple[str, ...]
    context: str

    @property
    def doc_url(self) -> str:
        return DOC_URL.format(id=self.gb_id.lower())


def registry_path() -> Path:
    path = registry.registry_path()
    if path is None:
        if importlib.util.find_spec("torch") is None:
            raise GbbotError("torch is not installed here; `explain` reads its graph-break registry")
        raise GbbotError(f"this torch has no graph-break registry (no _dynamo/{registry.REGISTRY_NAME})")
    return path


def lookup(gb_id: str, registry: dict) -> list[Entry]:
    """Pure: the registry's entries for an id (newest first, as the registry lists them)."""
    if not ID_RE.fullmatch(gb_id):
        raise GbbotError(f"{gb_id!r} is not a graph-break id (expected GB followed by 4 digits, e.g. GB0059)")
    gb_id = gb_id.upper()
    entries = registry.get(gb_id)
    if not entries:
        raise GbbotError(f"{gb_id} is not in this torch's registry (it may be newer than this torch)")
    return [
        Entry(gb_id, e.get("Gb_type", ""), e.get("Explanation", ""), _hints(e.get("Hints", [])), e.get("Context", ""))
        for e in entries
    ]


def _hints(parts: list[str]) -> tuple[str, ...]:
    """The registry splits long hints over several strings; a part ending mid-sentence continues."""
    hints: list[str] = []
    for part in parts:
        if hints and not hints[-1].rstrip().endswith((".", "!", "?", ":")):
            hints[-1] = hints[-1].rstrip() + " " + part.strip()
        else:
            hints.append(part.strip())
    return tuple(hints)


def explain(gb_id: str) -> list[Entry]:
    return lookup(gb_id, registry.read(registry_path()))


def format_entry(entry: Entry) -> str:
    lines = [f"{entry.gb_id}: {entry.gb_type}", "", f"Explanation: {entry.explanation}"]
    lines += [f"Hint: {h}" for h in entry.hints]
    lines += ["", f"Docs: {entry.doc_url}"]
    return "\n".join(lines)
