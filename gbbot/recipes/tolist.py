"""`.tolist()` on a floating-point tensor in a compiled region (GB0109), when the list only goes
back into tensor code: keep it a tensor."""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from gbbot.recipes.base import Recipe

TENSOR_FROM_LIST = ("torch.tensor", "torch.as_tensor")
KEPT_KEYWORDS = ("dtype", "device")


def _tolist_receiver(node: cst.BaseExpression) -> cst.BaseExpression | None:
    if m.matches(node, m.Call(func=m.Attribute(attr=m.Name("tolist")), args=[])):
        return node.func.value
    return None


def _detached(value: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(value, cst.Name("detach")))


def _copied(value: cst.BaseExpression, keywords: list[cst.Arg], detach: bool = True) -> cst.BaseExpression:
    """`value.detach().clone()`, then `.to(dtype=…, device=…)` when the call asked for them."""
    source = _detached(value) if detach else value
    copy: cst.BaseExpression = cst.Call(cst.Attribute(source, cst.Name("clone")))
    if keywords:
        kept = [k.with_changes(comma=cst.MaybeSentinel.DEFAULT) for k in keywords]
        copy = cst.Call(cst.Attribute(copy, cst.Name("to")), kept)
    return copy


class _Uses(cst.CSTVisitor):
    """Every `Name` node spelling `name` inside a function body, with its assignments."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.names: list[cst.Name] = []
        self.assigned = 0

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # `x.values` is not a use of `values`
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.names.append(node)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if m.findall(node, m.Name(self.name)):
            self.assigned += 1

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if m.findall(node.target, m.Name(self.name)):
            self.assigned += 2  # never patch: the list is changed


class TolistTensor(Recipe):
    id = "tolist"
    gb_ids = ("GB0109",)
    variant = "tensor"
    title = "keep the values a tensor instead of a Python list"
    description = (
        "The list from `.tolist()` only goes back into tensor code (`torch.tensor(values)`, "
        "`len(values)`), so the round trip through Python floats is dropped: "
        "`torch.tensor(x.tolist())` becomes `x.detach().clone()`, and a `values = x.tolist()` whose "
        "every use is `len(values)` or `torch.tensor(values)` keeps `x.detach()`. The copy keeps the "
        "source's dtype and device, where `torch.tensor(list)` would use the defaults (float32, "
        "CPU) — the verification run compares the results."
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not self.on_site(node) or not self.is_name(node.func, *TENSOR_FROM_LIST) or not node.args:
            return
        receiver = _tolist_receiver(node.args[0].value)
        keywords = self._keywords(node)
        if receiver is not None and keywords is not None:
            self.record(node, _copied(receiver, keywords))

    def _keywords(self, node: cst.Call) -> list[cst.Arg] | None:
        """The dtype/device keywords of `torch.tensor(list, …)`; None when it has others."""
        rest = node.args[1:]
        if any(a.keyword is None or a.keyword.value not in KEPT_KEYWORDS for a in rest):
            return None
        return list(rest)

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self.on_site(node) or len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        receiver = _tolist_receiver(node.value)
        function = self.enclosing(node, cst.FunctionDef)
        if receiver is None or function is None:
            return
        name = node.targets[0].target.value
        uses = _Uses(name)
        function.body.visit(uses)
        replacements = self._use_replacements(uses, node.targets[0].target)
        if uses.assigned == 1 and replacements is not None:
            self.record(node.value, _detached(receiver))
            for old, new in replacements:
                self.record(old, new)

    def _use_replacements(self, uses: _Uses, target: cst.Name) -> list[tuple[cst.CSTNode, cst.CSTNode]] | None:
        """For each use: nothing to change (`len(values)`) or `torch.tensor(values)` → a copy."""
        out: list[tuple[cst.CSTNode, cst.CSTNode]] = []
        reads = [n for n in uses.names if n is not target]
        for name in reads:
            arg = self.parent(name)
            call = self.parent(arg) if isinstance(arg, cst.Arg) else None
            if not isinstance(call, cst.Call) or call.args[0] is not arg:
                return None
            if self.is_name(call.func, "builtins.len") and len(call.args) == 1:
                continue
            keywords = self._keywords(call) if self.is_name(call.func, *TENSOR_FROM_LIST) else None
            if keywords is None:
                return None
            out.append((call, _copied(name, keywords, detach=False)))
        return out if reads else None
