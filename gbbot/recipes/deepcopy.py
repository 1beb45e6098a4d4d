"""`copy.deepcopy(tensor)` in a compiled region (GB4198)."""

from __future__ import annotations

import libcst as cst

from gbbot.recipes.base import Recipe


class DeepcopyClone(Recipe):
    id = "deepcopy"
    gb_ids = ("GB4198",)
    variant = "clone"
    title = "copy the tensor with `.detach().clone()`"
    description = (
        "`copy.deepcopy(t)` of a tensor becomes `t.detach().clone()`: the same values in new "
        "memory, which Dynamo traces. Like deepcopy, no gradient flows back to `t`; unlike deepcopy, "
        "the copy does not require grad even when `t` does (call `.requires_grad_()` on it outside "
        "the compiled region if it must). A plain `.clone()` would instead connect the copy to "
        "`t`'s gradients — a silent change in training, so it is not offered."
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not self.on_site(node) or not self.is_name(node.func, "copy.deepcopy"):
            return
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            return
        value = node.args[0].value
        detached = cst.Call(cst.Attribute(value, cst.Name("detach")))
        self.record(node, cst.Call(cst.Attribute(detached, cst.Name("clone"))))
