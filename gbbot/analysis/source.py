"""What a break's source line sits in: the enclosing function's qualname, and whether it is in a loop.

Qualnames (not line numbers) make fingerprints survive edits above a break; a break in a loop of
the compiled frame matters more than one outside. Pure over source text; `SourceTree` only caches
reads.
"""

from __future__ import annotations

import ast
import functools
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Scope:
    qualname: str
    start: int
    end: int
    loops: tuple[tuple[int, int], ...]  # line spans of for/while bodies directly in this function


def _loops(node: ast.AST) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(child, ast.For | ast.AsyncFor | ast.While):
            spans.append((child.lineno, child.end_lineno or child.lineno))
        spans.extend(_loops(child))
    return spans


def _statement_spans(tree: ast.AST) -> list[tuple[int, int]]:
    """Line spans of the statements: a simple one whole, a compound one (if, for, with, def)
    its header only, up to the line before its body."""
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.AST):
            end = max(node.lineno, body[0].lineno - 1)
        else:
            end = node.end_lineno or node.lineno
        spans.append((node.lineno, end))
    return spans


def _scopes(node: ast.AST, prefix: str = "") -> list[Scope]:
    scopes: list[Scope] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{child.name}"
            start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
            scopes.append(Scope(name, start, child.end_lineno or child.lineno, tuple(_loops(child))))
            scopes.extend(_scopes(child, f"{name}.<locals>."))
        elif isinstance(child, ast.ClassDef):
            scopes.extend(_scopes(child, f"{prefix}{child.name}."))
        else:
            scopes.extend(_scopes(child, prefix))
    return scopes


STATEMENT_LINES_MAX = 12  # a longer statement is shown from its first lines, as far as the break's


@dataclass(frozen=True)
class SourceMap:
    lines: tuple[str, ...]
    scopes: tuple[Scope, ...]
    statements: tuple[tuple[int, int], ...] = ()  # (first, last) line of each statement

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def scope(self, line: int) -> Scope | None:
        """The innermost function containing `line`."""
        found = [s for s in self.scopes if s.start <= line <= s.end]
        return min(found, key=lambda s: s.end - s.start) if found else None

    def qualname(self, line: int, fallback: str) -> str:
        scope = self.scope(line)
        return scope.qualname if scope else fallback

    def in_loop(self, line: int) -> bool:
        scope = self.scope(line)
        return bool(scope) and any(a <= line <= b for a, b in scope.loops)

    def line(self, number: int) -> str:
        return self.lines[number - 1] if 0 < number <= len(self.lines) else ""

    def statement(self, number: int) -> str:
        """The whole statement `number` is part of, its lines dedented together; "" when it is
        that one line (or the file did not parse)."""
        found = [span for span in self.statements if span[0] <= number <= span[1]]
        if not found:
            return ""
        first, last = min(found, key=lambda span: span[1] - span[0])
        last = min(last, max(number, first + STATEMENT_LINES_MAX - 1))
        if first == last:
            return ""
        return textwrap.dedent("\n".join(self.lines[first - 1 : last])).strip()


def source_map(text: str) -> SourceMap:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return SourceMap(tuple(text.splitlines()), ())
    return SourceMap(tuple(text.splitlines()), tuple(_scopes(tree)), tuple(_statement_spans(tree)))


class SourceTree:
    """Reads a repository's files once each; unreadable files map to None."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @functools.lru_cache(maxsize=512)  # noqa: B019 - one tree per run, freed with it
    def get(self, relative: str) -> SourceMap | None:
        try:
            return source_map((self.root / relative).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return None


class SourceFiles:
    """Files held in memory (a commit's, read from git objects), each read as source once; a file
    not held maps to None."""

    def __init__(self, files: Mapping[str, bytes]) -> None:
        self.files = files

    @functools.lru_cache(maxsize=512)  # noqa: B019 - one set per diff, freed with it
    def get(self, relative: str) -> SourceMap | None:
        blob = self.files.get(relative)
        return None if blob is None else source_map(blob.decode("utf-8", "replace"))
