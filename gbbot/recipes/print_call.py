"""`print(...)` in a compiled region (GB0059, "Failed to trace builtin operator")."""

from __future__ import annotations

import libcst as cst

from gbbot.recipes.base import Recipe, StatementGuard, single_call_statement


class PrintGuard(StatementGuard):
    id = "print"
    gb_ids = ("GB0059",)
    leads = True
    title = "guard the print with `torch.compiler.is_compiling()`"
    description = (
        "Wraps the print in `if not torch.compiler.is_compiling():`. Dynamo reads the condition as "
        "a constant and leaves the print out of the graph, so the frame compiles in one piece. Eager "
        "runs print exactly as before; compiled runs no longer print this line (if the message "
        "matters there, the `torch._higher_order_ops.print` variant keeps it)."
    )

    def guards(self, call: cst.Call) -> bool:
        return self.is_name(call.func, "builtins.print")


class PrintHop(Recipe):
    id = "print"
    gb_ids = ("GB0059",)
    leads = True
    variant = "hop"
    title = "print through `torch._higher_order_ops.print`"
    description = (
        'Replaces `print(a, b)` with `torch._higher_order_ops.print("{} {}", a, b)`, which Dynamo '
        "records as a graph operation: the message is printed when the compiled code runs, tensors "
        "show their runtime values. Only plain positional prints qualify (no `sep=`, `end=`, "
        "`file=`, `*args`); values can print differently (a tensor's shape prints as a tuple, a "
        "0-d tensor as its number), which the output comparison of a `run:` entrypoint catches."
    )

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        call = single_call_statement(node)
        if call is None or not self.on_site(node) or not self.is_name(call.func, "builtins.print"):
            return
        if any(arg.keyword is not None or arg.star for arg in call.args):
            return
        template = cst.SimpleString('"' + " ".join("{}" for _ in call.args) + '"')
        args = [cst.Arg(template), *(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT) for arg in call.args)]
        hop = call.with_changes(func=self.torch_expr("_higher_order_ops.print"), args=args)
        self.record(call, hop, ("torch",))
