"""`.item()` / `int(tensor)` in a compiled region (GB0124).

When the tensor is a Python int in disguise — `self.n = torch.IntTensor([hidden])` in the same
class, never written again there — the fix keeps the int next to it and reads that instead.
Otherwise `capture_scalar_outputs` is turned on where the repository calls `torch.compile`
(gbbot.recipes.compile_site), which lets Dynamo trace the scalar symbolically.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from gbbot.recipes.base import Recipe

INT_TENSORS = ("IntTensor", "LongTensor", "ShortTensor")
INT_DTYPES = ("int", "int16", "int32", "int64", "long", "short")
TO_INT = ("builtins.int",)


def _self_attribute(node: cst.BaseExpression) -> tuple[str, int | None] | None:
    """`self.name` → (name, None); `self.name[k]` with a literal k → (name, k)."""
    if m.matches(node, m.Attribute(value=m.Name("self"))):
        return node.attr.value, None
    indexed = m.Subscript(value=m.Attribute(value=m.Name("self")), slice=[m.SubscriptElement(m.Index(m.Integer()))])
    if m.matches(node, indexed):
        return node.value.attr.value, int(node.slice[0].slice.value.value)
    return None


def _in_place(method: str) -> bool:
    return method.endswith("_") and not method.startswith("_")


class _Assignments(cst.CSTVisitor):
    """Every `self.<name>` that is written (assigned, augmented, item-assigned, mutated in place)."""

    def __init__(self) -> None:
        self.values: dict[str, list[cst.CSTNode]] = {}
        self.written: dict[str, int] = {}

    def _write(self, target: cst.BaseExpression) -> None:
        found = _self_attribute(target)
        if found:
            self.written[found[0]] = self.written.get(found[0], 0) + 1

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._write(target.target)
            if m.matches(target.target, m.Attribute(value=m.Name("self"))):
                self.values.setdefault(target.target.attr.value, []).append(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._write(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._write(node.target)

    def visit_Call(self, node: cst.Call) -> None:  # self.n.add_(1), self.n.fill_(0), …
        in_place = m.Attribute(value=m.Attribute(value=m.Name("self")), attr=m.Name(m.MatchIfTrue(_in_place)))
        if m.matches(node.func, in_place):
            self._write(node.func.value)


class ItemConstant(Recipe):
    id = "item"
    gb_ids = ("GB0124",)
    variant = "constant"
    title = "read the Python int the tensor was built from"
    description = (
        "The tensor is built in the same class from Python ints (`torch.IntTensor([n])`) and never "
        "written again there, so `.item()` only turns it back into that int. The fix stores the int "
        "next to the tensor (`self.<name>_value = int(n)`) and reads it instead: no tensor-to-Python "
        "round trip, no graph break. Behaviour changes only if code outside the class writes into "
        "that tensor (the verification run would show it)."
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._class_facts: dict[int, _Assignments] = {}

    def _facts(self, cls: cst.ClassDef) -> _Assignments:
        if id(cls) not in self._class_facts:
            facts = _Assignments()
            cls.visit(facts)
            self._class_facts[id(cls)] = facts
        return self._class_facts[id(cls)]

    def _int_elements(self, value: cst.BaseExpression) -> list[cst.BaseExpression] | None:
        """The elements of `torch.IntTensor([a, b])` / `torch.tensor([...], dtype=torch.int64)`."""
        if not isinstance(value, cst.Call) or not value.args or not isinstance(value.args[0].value, cst.List):
            return None
        elements = [e.value for e in value.args[0].value.elements if not isinstance(e, cst.StarredElement)]
        if len(elements) != len(value.args[0].value.elements) or not elements:
            return None
        if self.is_name(value.func, *(f"torch.{name}" for name in INT_TENSORS)) and len(value.args) == 1:
            return elements
        if self.is_name(value.func, "torch.tensor", "torch.as_tensor"):
            dtype = next((a.value for a in value.args[1:] if a.keyword and a.keyword.value == "dtype"), None)
            int_dtype = dtype is not None and self.is_name(dtype, *(f"torch.{d}" for d in INT_DTYPES))
            literal = all(isinstance(e, cst.Integer) for e in elements)
            if int_dtype or (dtype is None and literal and len(value.args) == 1):
                return elements
        return None

    def visit_Call(self, node: cst.Call) -> None:
        if not self.on_site(node):
            return
        if m.matches(node, m.Call(func=m.Attribute(attr=m.Name("item")), args=[])):
            receiver, replace = node.func.value, node
        elif self.is_name(node.func, *TO_INT) and len(node.args) == 1:
            receiver, replace = node.args[0].value, node.args[0].value
        else:
            return
        self._constant(receiver, replace)

    def _constant(self, receiver: cst.BaseExpression, replace: cst.CSTNode) -> None:
        found = _self_attribute(receiver)
        cls = self.enclosing(receiver, cst.ClassDef)
        if found is None or cls is None:
            return
        name, index = found
        facts = self._facts(cls)
        assigns = facts.values.get(name, [])
        if len(assigns) != 1 or facts.written.get(name, 0) != 1:
            return
        elements = self._int_elements(assigns[0].value)
        if elements is None or (index is not None and not -len(elements) <= index < len(elements)):
            return
        if index is None and len(elements) != 1:
            return
        single = len(elements) == 1
        attribute = f"{name}_value" if single else f"{name}_values"
        if attribute in facts.values or self._taken(cls, attribute):
            return
        self._record_constant(assigns[0], replace, attribute, elements, None if single else index)

    def _taken(self, cls: cst.ClassDef, attribute: str) -> bool:
        return bool(m.findall(cls, m.Attribute(attr=m.Name(attribute))))

    def _record_constant(
        self, assign: cst.Assign, replace: cst.CSTNode, attribute: str, elements: list, index: int | None
    ) -> None:
        statement = self.parent(assign)
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return
        ints = [cst.Call(cst.Name("int"), [cst.Arg(e)]) if not isinstance(e, cst.Integer) else e for e in elements]
        value = ints[0] if index is None else cst.Tuple([cst.Element(v) for v in ints])
        store = cst.SimpleStatementLine(
            [cst.Assign([cst.AssignTarget(cst.Attribute(cst.Name("self"), cst.Name(attribute)))], value)]
        )
        self.record(statement, cst.FlattenSentinel([statement, store]))
        read = cst.Attribute(cst.Name("self"), cst.Name(attribute))
        if index is not None:
            read = cst.Subscript(read, [cst.SubscriptElement(cst.Index(cst.Integer(str(index))))])
        self.record(replace, read)
