"""A statement that only has a side effect — a print, a log record, a warning, `tqdm.write`, a
debugger or profiler hook — guarded with `torch.compiler.is_compiling()`, whatever break its arguments cause.

`print("step", float(v.mean()))` breaks as GB0124 (`float()` of a tensor), not as a print, yet
the whole statement can stay out of the graph: it returns nothing anyone reads. The recipe is chosen
by the statement's shape, so it is tried for every break on such a line.
"""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m
from libcst.metadata import QualifiedNameProvider

from gbbot.recipes.base import StatementGuard

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


def _mutates(node: cst.CSTNode) -> bool:
    """Does an argument change something (`x.add_(1)`, `n := …`)? Then skipping it when compiling
    would change the results, and the statement is not side-effect-only."""
    in_place = m.Call(func=m.Attribute(attr=m.Name(m.MatchIfTrue(lambda n: n.endswith("_") and not n.startswith("_")))))
    return bool(m.findall(node, in_place | m.NamedExpr()))


class SideEffectGuard(StatementGuard):
    id = "side_effect"
    title = "guard the side-effect-only statement with `torch.compiler.is_compiling()`"
    description = (
        "The statement only prints, logs, warns or calls a debugger/profiler hook, and nothing reads "
        "its result, so it is wrapped in `if not torch.compiler.is_compiling():`. Dynamo reads the "
        "condition as a constant and leaves the statement — and whatever in its arguments broke the "
        "graph — out of the compiled region. Eager runs do exactly what they did; compiled runs no "
        "longer print, log or stop at this line."
    )

    def guards(self, call: cst.Call) -> bool:
        return not _mutates(call) and self.side_effect_only(call.func)

    def side_effect_only(self, func: cst.BaseExpression) -> bool:
        if self.is_name(func, *SIDE_EFFECT_CALLS):
            return True
        if not isinstance(func, cst.Attribute) or func.attr.value not in LOG_METHODS:
            return False
        return self.is_logger(func.value)

    def is_logger(self, receiver: cst.BaseExpression) -> bool:
        if self.is_name(receiver, *LOGGING_PACKAGES):  # logging.info(...), absl.logging.info(...)
            return True
        qualified = {q.name for q in self.get_metadata(QualifiedNameProvider, receiver, set())}
        if any(name.startswith(tuple(f"{p}." for p in LOGGING_PACKAGES)) for name in qualified):
            return True  # from loguru import logger; structlog.get_logger().bind(...)
        last = receiver.attr.value if isinstance(receiver, cst.Attribute) else getattr(receiver, "value", None)
        return isinstance(last, str) and bool(LOGGER_NAME.search(last))
