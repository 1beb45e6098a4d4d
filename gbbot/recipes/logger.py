"""A logger call in a compiled region (GB0291, "logging.Logger method not supported …")."""

from __future__ import annotations

import libcst as cst

from gbbot.recipes.base import StatementGuard

LOGGER_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"})


class LoggerGuard(StatementGuard):
    id = "logger"
    gb_ids = ("GB0291",)
    leads = True
    title = "guard the logger call with `torch.compiler.is_compiling()`"
    description = (
        "Wraps the logger call in `if not torch.compiler.is_compiling():` so Dynamo leaves it out "
        "of the graph. Eager runs log exactly as before; compiled runs no longer emit this record. "
        "(Setting `torch._dynamo.config.ignore_logger_methods` drops it too, but for the whole "
        "process; the guard keeps the change where the call is.)"
    )

    def guards(self, call: cst.Call) -> bool:
        return isinstance(call.func, cst.Attribute) and call.func.attr.value in LOGGER_METHODS
