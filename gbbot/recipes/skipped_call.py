"""A call to a function Dynamo skips (GB0007): `warnings.warn`, `time.time()` and friends."""

from __future__ import annotations

import libcst as cst

from gbbot.recipes.base import StatementGuard

# Side effects that have no meaning inside a graph: guard the statement.
STATEMENTS = ("warnings.warn", "warnings.warn_explicit", "time.sleep")
# Clocks read inside a compiled region measure tracing, not running: the value becomes 0 there.
CLOCKS = {
    "time.time": "0.0",
    "time.perf_counter": "0.0",
    "time.monotonic": "0.0",
    "time.process_time": "0.0",
    "time.time_ns": "0",
    "time.perf_counter_ns": "0",
    "time.monotonic_ns": "0",
    "time.process_time_ns": "0",
}


class SkippedCallGuard(StatementGuard):
    id = "skipped_call"
    gb_ids = ("GB0007",)
    leads = True
    title = "keep the skipped call out of the graph with `torch.compiler.is_compiling()`"
    description = (
        "A `warnings.warn(...)` (or `time.sleep`) statement is wrapped in "
        "`if not torch.compiler.is_compiling():`; a clock read such as `time.time()` becomes "
        "`(time.time() if not torch.compiler.is_compiling() else 0.0)`. Eager runs are unchanged. "
        "Compiled runs no longer warn, and read 0 from the clock: a clock read while Dynamo traces "
        "measures tracing, not the compiled code, so move timing outside the compiled function."
    )

    def guards(self, call: cst.Call) -> bool:
        return self.is_name(call.func, *STATEMENTS)

    def visit_Call(self, node: cst.Call) -> None:
        if not self.starts_on_site(node) or isinstance(self.parent(node), cst.Expr):
            return
        clock = next((name for name in CLOCKS if self.is_name(node.func, name)), None)
        if clock is None:
            return
        replacement = cst.IfExp(
            test=self.not_compiling(),
            body=node,
            orelse=cst.parse_expression(CLOCKS[clock]),
            lpar=[cst.LeftParen()],
            rpar=[cst.RightParen()],
        )
        self.record(node, replacement, ("torch",))
