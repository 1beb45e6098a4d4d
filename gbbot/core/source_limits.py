"""What Python source gbbot hands to LibCST: only what CPython's own parser accepts, nested no
deeper and no larger than real code is.

LibCST's native parser dies with SIGSEGV on 2,000 nested parentheses (1,500 brackets in 3 KB),
where CPython stops at 200 with a SyntaxError; its Python side recurses per level of nesting
(RecursionError, or seconds and hundreds of MB before it), and spends about a minute and 1.5 GB on
a 1 MB file. A file from a PR is hostile input: it is refused here, cheaply, before LibCST sees it.
"""

from __future__ import annotations

import ast
import warnings

MAX_SOURCE_CHARS = 1_000_000
MAX_NODES = 60_000  # Python syntax nodes: a few seconds and ~100 MB of LibCST at most
MAX_DEPTH = 100  # nesting of syntax nodes; real code stays under 40


def refusal(source: str) -> str | None:
    """Why `source` must not be parsed by LibCST, or None when it may."""
    if len(source) > MAX_SOURCE_CHARS:
        return f"it is {len(source):,} characters, over the {MAX_SOURCE_CHARS:,} gbbot parses"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like: not our business here
            tree = ast.parse(source)
    except SyntaxError as exc:  # also CPython's limits: nested brackets (200), indentation (100)
        return f"line {exc.lineno}: {exc.msg}"
    except (RecursionError, MemoryError, ValueError):
        return "it nests deeper than Python's own parser allows"
    nodes, deepest = _size(tree)
    if nodes > MAX_NODES:
        return f"it has {nodes:,} syntax nodes, over the {MAX_NODES:,} gbbot parses"
    if deepest > MAX_DEPTH:
        return f"it nests {deepest} levels deep, over the {MAX_DEPTH} gbbot parses"
    return None


def _size(tree: ast.AST) -> tuple[int, int]:
    """(node count, deepest nesting), without recursion."""
    nodes, deepest = 0, 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return nodes, deepest
