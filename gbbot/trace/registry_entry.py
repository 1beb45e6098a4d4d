"""`gbbot explain GBNNNN`: what the installed torch's graph-break registry says about an id.

Reads torch/_dynamo/graph_break_registry.json without importing torch (instant, nothing runs).

The registry keeps every wording an id has had, newest first, and its text is extracted from
torch's source: an entry may hold a placeholder (`_gb_type`, `_explanation`), the Python
expression that builds the message (`"Detected …" + trace_info`) or a format field
(`{fn.__name__}`). `lookup` makes one readable entry of them: the newest wording of each part that
reads as text, expressions reduced to their string parts, format fields shown as `<fn>`.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gbbot.core.doc_links import GRAPH_BREAK_DOC
from gbbot.core.errors import GbbotError
from gbbot.trace import registry

DOC_URL = GRAPH_BREAK_DOC
ID_RE = re.compile(r"GB\d{4}", re.IGNORECASE)
IDENTIFIER_RE = re.compile(r"[a-z_]\w*(\.[a-z_]\w*)*")  # `msg`, `self.explanation`: a variable, not words
SIMPLE_FIELD_RE = re.compile(r"[\w.()\[\]]{1,40}")


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


def lookup(gb_id: str, registry: dict) -> Entry:
    """Pure: one readable entry for an id, from the wordings the registry keeps (newest first)."""
    if not ID_RE.fullmatch(gb_id):
        raise GbbotError(f"{gb_id!r} is not a graph-break id (expected GB followed by 4 digits, e.g. GB0059)")
    gb_id = gb_id.upper()
    entries = registry.get(gb_id)
    if not entries:
        raise GbbotError(f"{gb_id} is not in this torch's registry (it may be newer than this torch)")
    gb_type = _first(_readable(e.get("Gb_type", ""), one_word=True) for e in entries)
    explanation = _first(_readable(e.get("Explanation", "")) for e in entries)
    hints = next((h for h in (_readable_hints(e.get("Hints", [])) for e in entries) if h), ())
    context = _first(_readable(e.get("Context", "")) for e in entries)
    return Entry(gb_id, gb_type or "(no name in this torch's registry)", explanation, hints, context)


def _first(texts: Iterable[str | None]) -> str:
    return next((t for t in texts if t), "")


def _readable_hints(parts: Sequence[str]) -> tuple[str, ...]:
    hints = (_readable(h) for h in _hints(parts))
    return tuple(h for h in hints if h)


def _hints(parts: Sequence[str]) -> tuple[str, ...]:
    """The registry splits long hints over several strings; a part ending mid-sentence continues."""
    hints: list[str] = []
    for part in parts:
        if hints and not hints[-1].rstrip().endswith((".", "!", "?", ":")):
            hints[-1] = hints[-1].rstrip() + " " + part.strip()
        else:
            hints.append(part.strip())
    return tuple(hints)


def _readable(text: str, one_word: bool = False) -> str | None:
    """`text` as a reader should see it, or None when it is only a placeholder. `one_word`: a
    single identifier is a real name here (a gb_type such as `str_impl`) unless it starts with `_`."""
    text = " ".join(str(text).split())
    if not text or (text.startswith("_") and IDENTIFIER_RE.fullmatch(text)):
        return None
    if IDENTIFIER_RE.fullmatch(text):
        return text if one_word else None
    spoken = _string_parts(text)
    if spoken is not None:
        text = spoken
    return " ".join(_fields_shown(text).split()) or None


def _string_parts(text: str) -> str | None:
    """A Python expression building a message (`"A " "b" + f"{x}" + trace_info`) → its words;
    None when `text` is not such an expression (plain prose does not parse as one)."""
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError):
        return None
    if not _builds_string(tree):
        return None
    return "".join(_spoken(tree))


def _builds_string(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _builds_string(node.left) or _builds_string(node.right)
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _spoken(node: ast.AST) -> list[str]:
    if isinstance(node, ast.BinOp):
        return [*_spoken(node.left), *_spoken(node.right)]
    if isinstance(node, ast.Constant):
        return [str(node.value)]
    if isinstance(node, ast.JoinedStr):
        return [str(v.value) if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}" for v in node.values]
    return []  # a variable the message appends (trace_info): not known here


def _fields_shown(text: str) -> str:
    """Format fields, a value torch fills in at the break: `{fn.__name__}` → `<fn>`, `{type(x)}` →
    `<type(x)>`, a longer expression (`{",".join(set(k) - {"a"})}`, nested braces) → `<…>`."""
    out: list[str] = []
    depth = 0
    field: list[str] = []
    for char in text:
        if char == "{":
            depth += 1
            if depth == 1:
                continue
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                out.append(_field("".join(field)))
                field = []
                continue
        (field if depth else out).append(char)
    return "".join(out) + ("{" + "".join(field) if depth else "")


def _field(expression: str) -> str:
    expression = re.sub(r"\.__(name|qualname)__$", "", expression.strip())
    return f"<{expression}>" if SIMPLE_FIELD_RE.fullmatch(expression) else "<…>"


def explain(gb_id: str) -> Entry:
    return lookup(gb_id, registry.read(registry_path()))
