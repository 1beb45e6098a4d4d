"""Statements that only have a side effect — a print, a log record, a warning, `tqdm.write`, a
debugger or profiler hook — as names gbbot knows, and a reading of one statement's source with
Python's own parser. Pure. The fix step's guard recipe (LibCST, imports resolved by LibCST) uses
the same names; the views use `only_side_effect` to say which recipe a break really gets.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Mapping

# Calls made only for what they print, record or stop at. Qualified names, imports resolved.
SIDE_EFFECT_CALLS = frozenset(
    {
        "builtins.print",
        "builtins.breakpoint",
        "pdb.set_trace",
        "ipdb.set_trace",
        "pudb.set_trace",
        "warnings.warn",
        "warnings.warn_explicit",
        "torch.cuda.nvtx.mark",
        "torch.cuda.nvtx.range_push",
        "torch.cuda.nvtx.range_pop",
        # tqdm's progress-bar-safe print, a class method: Dynamo skips tqdm (GB0008)
        "tqdm.tqdm.write",
        "tqdm.std.tqdm.write",
        "tqdm.auto.tqdm.write",
        "tqdm.autonotebook.tqdm.write",
        "tqdm.notebook.tqdm.write",
    }
)
LOG_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log", "trace", "success", "msg"}
)
# Packages whose objects are loggers (stdlib logging, loguru, structlog, absl): any of the
# methods above on something imported from them is a log record.
LOGGING_PACKAGES = ("logging", "loguru", "structlog", "absl.logging")
# A receiver spelled like a logger: `log`, `logger`, `_LOGGER`, `self.logger`, `train_log`.
LOGGER_NAME = re.compile(r"(^|_)(log|logger)$", re.IGNORECASE)

Imports = Mapping[str, str]  # a module's local name → what it imports ("np" → "numpy")


def module_imports(tree: ast.Module) -> dict[str, str]:
    """The names a module's top-level imports bind, each to its qualified name (a function or
    class of its own shadows a builtin: its own `print` is not the builtin)."""
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = f"<module>.{node.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                names[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def qualified(node: ast.expr, imports: Imports) -> str | None:
    """`np.sum` → "numpy.sum", `print` → "builtins.print"; None for what is not a dotted name."""
    dotted = _dotted(node)
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    if head in imports:
        base = imports[head]
    elif hasattr(builtins, head):
        base = f"builtins.{head}"
    else:
        base = head
    return f"{base}.{rest}" if rest else base


def _mutates(call: ast.Call) -> bool:
    """Does an argument change something (`x.add_(1)`, `n := …`)? Then the statement is not
    side-effect-only: skipping it when compiling would change the results."""
    for node in ast.walk(call):
        if isinstance(node, ast.NamedExpr):
            return True
        in_place = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        if in_place and node.func.attr.endswith("_") and not node.func.attr.startswith("_"):
            return True
    return False


def _is_logger(receiver: ast.expr, imports: Imports) -> bool:
    name = qualified(receiver, imports) or ""
    if name in LOGGING_PACKAGES or name.startswith(tuple(f"{p}." for p in LOGGING_PACKAGES)):
        return True
    last = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", None)
    return isinstance(last, str) and bool(LOGGER_NAME.search(last))


def only_side_effect(statement: str, imports: Imports) -> bool:
    """Is `statement` (one statement's source) a call made only for its side effect, whose
    result nobody reads and whose arguments change nothing?"""
    try:
        body = ast.parse(statement.strip()).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    if len(body) != 1 or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Call):
        return False
    call = body[0].value
    if _mutates(call):
        return False
    if qualified(call.func, imports) in SIDE_EFFECT_CALLS:
        return True
    method = isinstance(call.func, ast.Attribute) and call.func.attr in LOG_METHODS
    return method and _is_logger(call.func.value, imports)  # type: ignore[union-attr]
