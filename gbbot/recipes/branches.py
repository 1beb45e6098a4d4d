"""Does the value a line turns into a Python number decide a branch? Pure over source text.

`if loss.item() > 50:` breaks at `.item()` (GB0124). Capturing the scalar
(`capture_scalar_outputs`) does not fix it: Dynamo then traces `.item()` as a symbolic number and
breaks one step later, at the `if` that needs its value (GB0170, data-dependent branching). Such a
break gets the advice for branches, not the setting. Seen here: the test of an `if`, `elif`,
`while`, `assert` or conditional expression that spans the line, and a name the line assigns that
such a test reads later in the same function.
"""

from __future__ import annotations

import ast
import functools

Test = ast.If | ast.While | ast.Assert | ast.IfExp


@functools.lru_cache(maxsize=16)
def parsed(text: str) -> ast.Module | None:
    """One parse per file text: every `.item()` break of a file asks about the same source."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _test(node: ast.AST) -> ast.expr | None:
    return node.test if isinstance(node, Test) else None


def _spans(node: ast.AST, line: int) -> bool:
    return node.lineno <= line <= (node.end_lineno or node.lineno)  # type: ignore[attr-defined]


def _innermost_function(tree: ast.AST, line: int) -> ast.AST:
    functions = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _spans(node, line)
    ]
    return max(functions, key=lambda f: f.lineno, default=tree)


def _assigned_names(scope: ast.AST, line: int) -> set[str]:
    """Names a statement starting on `line` binds: `k = x.item()`, `k: int = …`, `a, k = …`."""
    names: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.lineno == line:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def decides_branch(text: str, line: int) -> bool:
    """Is what `line` computes the condition of a branch (on the line, or through a name it
    assigns and a later test reads)? False when the text does not parse."""
    tree = parsed(text)
    if tree is None:
        return False
    scope = _innermost_function(tree, line)
    assigned = _assigned_names(scope, line)
    for node in ast.walk(scope):
        test = _test(node)
        if test is None:
            continue
        if any(isinstance(n, ast.Call) and _spans(n, line) for n in ast.walk(test)):
            return True  # the conversion is in the test itself (`if flag: k = x.item()` is not)
        reads = assigned and test.lineno > line
        if reads and any(isinstance(n, ast.Name) and n.id in assigned for n in ast.walk(test)):
            return True
    return False
