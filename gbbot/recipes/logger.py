"""A logger call in a compiled region (GB0291, "logging.Logger method not supported …")."""

from __future__ import annotations

import libcst as cst

from gbbot.recipes.base import Recipe, guarded, single_call_statement

LOGGER_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"})


class LoggerGuard(Recipe):
    id = "logger"
    gb_ids = ("GB0291",)
    leads = True
    variant = "guard"
    title = "guard the logger call with `torch.compiler.is_compiling()`"
    description = (
        "Wraps the logger call in `if not torch.compiler.is_compiling():` so Dynamo leaves it out "
        "of the graph. Eager runs log exactly as before; compiled runs no longer emit this record. "
        "(Setting `torch._dynamo.config.ignore_logger_methods` drops it too, but for the whole "
        "process; the guard keeps the change where the call is.)"
    )

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        call = single_call_statement(node)
        if call is None or not self.on_site(node) or not isinstance(call.func, cst.Attribute):
            return
        if call.func.attr.value in LOGGER_METHODS:
            self.record(node, guarded(node, self), ("torch",))
