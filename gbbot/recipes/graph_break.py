"""An explicit `torch._dynamo.graph_break()` left in the code (GB0025)."""

from __future__ import annotations

import libcst as cst

from gbbot.recipes.base import Recipe, single_call_statement

GRAPH_BREAK = ("torch._dynamo.graph_break", "torch._dynamo.decorators.graph_break")


class GraphBreakRemove(Recipe):
    id = "graph_break"
    gb_ids = ("GB0025",)
    variant = "remove"
    title = "delete the explicit `torch._dynamo.graph_break()`"
    description = (
        "Deletes the `torch._dynamo.graph_break()` statement (a `pass` takes its place when it was "
        "alone in its block; comment lines above it are kept; a `from torch._dynamo import "
        "graph_break` nothing else uses goes too). The call does nothing in eager mode, "
        "so results cannot change; it was splitting the graph on purpose, usually while debugging. "
        "When it sat in a loop, the whole function ran eagerly: breaks that were hidden there can "
        "show up now, and are reported as revealed."
    )

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        call = single_call_statement(node)
        if call is None or not self.on_site(node) or not self.is_name(call.func, *GRAPH_BREAK):
            return
        self.record_removal(node, released=self.from_import_of(call.func))
