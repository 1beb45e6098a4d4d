"""Python control flow on a tensor's value (GB0170), or on a `.item()` of one (GB0124), rewritten
for the two shapes that have an in-graph equivalent; every other branch keeps the advice.

- A branch that only raises on bad input, `if x.max().item() >= n: raise ValueError("…")`,
  becomes `torch._check(<the condition negated>, lambda: "…")`. `torch._check` wants a Python
  bool, so a tensor condition is read with `.item()`, and Dynamo traces that only with
  `capture_scalar_outputs`: these recipes name `ItemCaptureScalars` as the setting their patch
  needs at the `torch.compile` that compiles the break's frame (gbbot.fix.plan puts both in one
  candidate). The negation is exact: `not c` → `c`, `==` ↔ `!=`, and `torch.sym_not(c)` for the
  ordered comparisons — `x < n` is not `not (x >= n)` when `x` is NaN.
- A branch that only picks between two values, `y = a if cond else b` (or the same as an
  `if`/`else` assigning one name), becomes `y = torch.where(cond, a, b)`. Shapes cannot be known
  from the source: re-running decides (same outputs, break gone).

Measured with torch 2.13: `assert tensor_cond, "msg"` is no break at all (Dynamo turns it into
an in-graph assert), and `torch._check` on a tensor is refused ("cond must be a bool").
"""

from __future__ import annotations

from typing import ClassVar

import libcst as cst
import libcst.matchers as m
from libcst.metadata import QualifiedNameProvider

from gbbot.recipes.base import Recipe
from gbbot.recipes.compile_site import ItemCaptureScalars

# calls whose result is a boolean tensor: a condition torch.where and `.item()` take as it is
BOOLEAN_CALLS = frozenset(
    {"any", "all", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isclose", "logical_not", "logical_and"}
    | {"logical_or", "logical_xor", "eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "signbit"}
)
# tensor methods that only compute: a side of torch.where may call them (both sides always run)
PURE_METHODS = frozenset(
    {"abs", "add", "bool", "clamp", "clip", "clone", "contiguous", "cumsum", "detach", "div", "double"}
    | {"exp", "expand", "expand_as", "flatten", "flip", "float", "half", "int", "log", "long", "masked_fill"}
    | {"matmul", "max", "mean", "min", "mul", "neg", "norm", "permute", "pow", "relu", "reshape", "roll"}
    | {"sigmoid", "sign", "softmax", "sqrt", "squeeze", "sub", "sum", "t", "tanh", "to", "transpose"}
    | {"type_as", "unsqueeze", "view", "view_as", "where"}
)
RANDOM = ("rand", "randn", "randint", "randperm", "bernoulli", "multinomial", "normal", "dropout")
ORDERED = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)
SWAPPED: dict[type, type] = {cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal}


def _parenthesized(node: cst.BaseExpression) -> cst.BaseExpression:
    """`node` safe as the receiver of `.item()`."""
    if isinstance(node, cst.Name | cst.Attribute | cst.Call | cst.Subscript) or node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _single_comparison(node: cst.BaseExpression) -> cst.Comparison | None:
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        return node
    return None


def _is_boolean_tensor(node: cst.BaseExpression) -> bool:
    """Does `node` evidently compute a boolean tensor (a comparison, `.any()`, `torch.isnan(…)`)?"""
    found = _single_comparison(node)
    if found is not None:
        return isinstance(found.comparisons[0].operator, (*ORDERED, *SWAPPED))
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute | cst.Name):
        name = node.func.attr.value if isinstance(node.func, cst.Attribute) else node.func.value
        return name in BOOLEAN_CALLS
    return False


def _message_args(exc: cst.BaseExpression) -> list[cst.Arg] | None:
    """`raise E` / `raise E(message)` → the message (none or one plain argument); None for any
    other raise (keywords, several arguments, a starred one)."""
    if isinstance(exc, cst.Name | cst.Attribute):
        return []
    if not isinstance(exc, cst.Call) or not isinstance(exc.func, cst.Name | cst.Attribute):
        return None
    if len(exc.args) > 1 or any(a.keyword is not None or a.star for a in exc.args):
        return None
    return list(exc.args)


def _either(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`a or b or c` → [a, b, c] (raising when any holds is one check per operand, in order: the
    later ones run only when the earlier ones pass, as `or` evaluates them); anything else → [test]."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return [*_either(test.left), *_either(test.right)]
    return [test]


def _only_raise(node: cst.If) -> cst.Raise | None:
    """The `raise` an `if` consists of: no `elif`/`else`, one statement, which raises an exception
    built from at most a message (no `from`, no bare re-raise)."""
    if node.orelse is not None or not isinstance(node.body, cst.IndentedBlock) or len(node.body.body) != 1:
        return None
    line = node.body.body[0]
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or not isinstance(line.body[0], cst.Raise):
        return None
    raised = line.body[0]
    if raised.exc is None or raised.cause is not None or _message_args(raised.exc) is None:
        return None
    return raised


class CheckInsteadOfRaise(Recipe):
    """Base: `if cond: raise E(msg)` → `torch._check(<not cond>, lambda: msg)`. Subclasses say how
    `cond` becomes a Python bool (`as_bool`); `None` leaves the line alone."""

    variant = "check"
    title = "torch._check instead of a raise (or an assert) on a tensor's value"
    with_setting: ClassVar[type[Recipe] | None] = ItemCaptureScalars
    checks_asserts: ClassVar[bool] = False  # an assert on a tensor is no break: Dynamo traces it

    def visit_If(self, node: cst.If) -> None:
        if self.edits or not self.on_site(node.test) or isinstance(self.parent(node), cst.If):  # an elif
            return
        raised = _only_raise(node)
        if raised is None:
            return
        holds = [self._negated(operand) for operand in _either(node.test)]
        if any(held is None for held in holds):
            return
        message = _message_args(raised.exc)
        lines = []
        for held in holds:
            args = [cst.Arg(held)]
            if message:
                args.append(cst.Arg(cst.Lambda(cst.Parameters(), message[0].value)))
            check = cst.Expr(cst.Call(self.torch_expr("_check"), args))
            lines.append(_statement(check, node) if not lines else cst.SimpleStatementLine([check]))
        self.record(node, lines[0] if len(lines) == 1 else cst.FlattenSentinel(lines), ("torch",))

    def visit_Assert(self, node: cst.Assert) -> None:
        """`assert cond, msg` on an `.item()` → `torch._check(cond, lambda: msg)`: traced with
        `capture_scalar_outputs`, Dynamo (torch 2.13) drops such an assert from the graph, so the
        setting alone would silently stop checking; the check keeps it."""
        if self.edits or not self.checks_asserts or not self.on_site(node.test):
            return
        held = self.as_bool(node.test)
        if held is None:
            return
        args = [cst.Arg(held)]
        if node.msg is not None:
            args.append(cst.Arg(cst.Lambda(cst.Parameters(), node.msg)))
        self.record(node, cst.Expr(cst.Call(self.torch_expr("_check"), args)), ("torch",))

    def _negated(self, test: cst.BaseExpression) -> cst.BaseExpression | None:
        """The Python bool that is True exactly when `test` is not."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self.as_bool(test.expression)
        compared = _single_comparison(test)
        if compared is not None and type(compared.comparisons[0].operator) in SWAPPED:
            target = compared.comparisons[0]
            swapped = target.with_changes(operator=SWAPPED[type(target.operator)]())
            return self.as_bool(compared.with_changes(comparisons=[swapped]))
        held = self.as_bool(test)
        return None if held is None else cst.Call(self.torch_expr("sym_not"), [cst.Arg(held)])

    def as_bool(self, test: cst.BaseExpression) -> cst.BaseExpression | None:
        raise NotImplementedError


def _reads_item(node: cst.BaseExpression) -> bool:
    return bool(m.findall(node, m.Call(func=m.Attribute(attr=m.Name("item")), args=[])))


class CheckItemRaise(CheckInsteadOfRaise):
    id = "item"
    gb_ids = ("GB0124",)
    checks_asserts = True
    description = (
        "The `if` only raises when a value read with `.item()` is bad. It becomes "
        "`torch._check(<the condition negated>, lambda: <the message>)` (one check per operand of an "
        "`or`, in the same order), and `capture_scalar_outputs` "
        "is turned on at the `torch.compile` that compiles the break's frame, so Dynamo traces the "
        "`.item()` and the check stays in the graph. Behaviour changes on bad input: the exception is a "
        "RuntimeError, not the original type (an `except ValueError` no longer catches it); eagerly it "
        "carries the original message; compiled it is still raised at the call, but Inductor's assert "
        "names only the failed condition (`zuf0 < 10.0`), not the message; a NaN passes eagerly as "
        "before but raises when compiled (torch simplifies `not v >= n` to `v < n`). An `assert` on an "
        "`.item()` becomes `torch._check(<the condition>, lambda: <the message>)` the same way (with the "
        "setting alone Dynamo drops such an assert from the graph); unlike an assert it also runs under "
        "`python -O`."
    )

    def as_bool(self, test: cst.BaseExpression) -> cst.BaseExpression | None:
        """`test` itself, when it compares a value read with `.item()` (one operator, no `and`/`or`,
        whose second operand Python may never evaluate) or is such a read."""
        simple = _single_comparison(test) is not None or isinstance(test, cst.Call)
        lazy = m.findall(test, m.BooleanOperation() | m.IfExp())
        return test if simple and _reads_item(test) and not lazy else None


class CheckTensorRaise(CheckInsteadOfRaise):
    id = "tensor_branch"
    gb_ids = ("GB0170",)
    description = (
        "The `if` only raises when a boolean tensor (a comparison, `.any()`, `.all()`) is True. It "
        "becomes `torch._check(<the condition negated>, lambda: <the message>)`, the tensor read with "
        "`.item()` (`torch._check` takes no tensor), and `capture_scalar_outputs` is turned on at the "
        "`torch.compile` that compiles the break's frame, so the check stays in the graph. Behaviour "
        "changes on bad input: the exception is a RuntimeError, not the original type (an `except "
        "ValueError` no longer catches it); eagerly it carries the original message; compiled it is "
        "still raised at the call, but Inductor's assert names only the failed condition, not the message."
    )

    def as_bool(self, test: cst.BaseExpression) -> cst.BaseExpression | None:
        if not _is_boolean_tensor(test) or _reads_item(test):  # a Python value: CheckScalarRaise
            return None
        return cst.Call(cst.Attribute(_parenthesized(test), cst.Name("item")))


class CheckScalarRaise(CheckItemRaise):
    """The data-dependent branch on an `.item()` that `capture_scalar_outputs`, already on, lets
    Dynamo trace: the check alone, no setting to add."""

    id = "tensor_branch"
    gb_ids = ("GB0170",)
    variant = "check_scalar"
    with_setting = None
    description = (
        "`capture_scalar_outputs` is already on where this frame is compiled, so the `.item()` is traced "
        "and the `if` that only raises on its value is a data-dependent branch. It becomes "
        "`torch._check(<the condition negated>, lambda: <the message>)` (one check per operand of an "
        "`or`), which stays in the graph. Behaviour changes on bad input: the exception is a "
        "RuntimeError, not the original type; eagerly it carries the original message, compiled "
        "Inductor's assert names only the failed condition; a NaN passes eagerly as before but raises "
        "when compiled."
    )


class WhereInsteadOfBranch(Recipe):
    id = "tensor_branch"
    gb_ids = ("GB0170",)
    variant = "where"
    title = "torch.where instead of a branch that picks one of two tensors"
    description = (
        "The branch only picks between two values by a boolean tensor: `y = a if cond else b`, or an "
        "`if`/`else` that assigns `y` in both arms. It becomes `y = torch.where(cond, a, b)`: one graph, "
        "no Python branch. `torch.where` computes both sides on every call, so the side not taken costs "
        "its work and must not raise (both are plain expressions of names, arithmetic, torch functions "
        "and tensor methods); it broadcasts, so the two sides must have the result's shape and dtype — "
        "the verification run compares outputs, and a patch that changes them is dropped."
    )

    def visit_If(self, node: cst.If) -> None:
        if self.edits or not self.on_site(node.test) or not isinstance(node.orelse, cst.Else):
            return
        if isinstance(self.parent(node), cst.If):  # an elif: it cannot become a statement
            return
        then, other = _single_assign(node.body), _single_assign(node.orelse.body)
        if then is None or other is None or not then.targets[0].target.deep_equals(other.targets[0].target):
            return
        picked = self._where(node.test, then.value, other.value)
        if picked is None:
            return
        assign = then.with_changes(value=picked)
        self.record(node, _statement(assign, node), ("torch",))

    def visit_IfExp(self, node: cst.IfExp) -> None:
        if self.edits or not self.on_site(node.test):
            return
        picked = self._where(node.test, node.body, node.orelse)
        if picked is not None:
            self.record(node, picked.with_changes(lpar=node.lpar, rpar=node.rpar), ("torch",))

    def _where(self, test: cst.BaseExpression, a: cst.BaseExpression, b: cst.BaseExpression) -> cst.Call | None:
        condition = self._condition(test)
        if condition is None or not (self._pure(a) and self._pure(b)):
            return None
        return cst.Call(self.torch_expr("where"), [cst.Arg(condition), cst.Arg(a), cst.Arg(b)])

    def _condition(self, test: cst.BaseExpression) -> cst.BaseExpression | None:
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = test.expression
            bare = inner.with_changes(lpar=[], rpar=[]) if isinstance(inner, cst.Comparison) else inner
            if _is_boolean_tensor(inner):
                return cst.Call(self.torch_expr("logical_not"), [cst.Arg(bare)])
            return None
        return test if _is_boolean_tensor(test) else None

    def _pure(self, node: cst.BaseExpression) -> bool:
        """Only names, constants, attributes, subscripts, arithmetic, non-random torch functions and
        computing tensor methods: evaluating it has no effect but its value."""
        if isinstance(node, cst.Name | cst.Integer | cst.Float):
            return True
        if isinstance(node, cst.Attribute):
            return self._pure(node.value)
        if isinstance(node, cst.Subscript):
            return self._pure(node.value) and all(self._pure_slice(e.slice) for e in node.slice)
        if isinstance(node, cst.BinaryOperation):
            return self._pure(node.left) and self._pure(node.right)
        if isinstance(node, cst.UnaryOperation):
            return self._pure(node.expression)
        if isinstance(node, cst.Call):
            return self._pure_call(node)
        return False

    def _pure_slice(self, part: cst.BaseSlice) -> bool:
        if isinstance(part, cst.Index):
            return self._pure(part.value)
        bounds = (part.lower, part.upper, part.step) if isinstance(part, cst.Slice) else ()
        return all(b is None or self._pure(b) for b in bounds)

    def _pure_call(self, node: cst.Call) -> bool:
        if not all(a.star == "" and self._pure(a.value) for a in node.args):
            return False
        names = {q.name for q in self.get_metadata(QualifiedNameProvider, node.func, set())}
        torch_function = any(n.startswith("torch.") and not n.startswith("torch.nn.") for n in names)
        if torch_function:
            last = next(iter(names)).rsplit(".", 1)[-1]
            return not last.endswith("_") and not last.startswith(RANDOM)
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
        own = m.matches(receiver, m.Name("self"))  # self.norm(x): a module's call, with hooks and buffers
        return method in PURE_METHODS and not own and self._pure(receiver)


def _statement(small: cst.BaseSmallStatement, replaced: cst.If) -> cst.SimpleStatementLine:
    """`small` as the statement that replaces the `if`: its comment lines above and the comment
    after its `:` kept."""
    header = replaced.body.header if isinstance(replaced.body, cst.IndentedBlock) else cst.TrailingWhitespace()
    return cst.SimpleStatementLine([small], leading_lines=replaced.leading_lines, trailing_whitespace=header)


def _single_assign(block: cst.BaseSuite) -> cst.Assign | None:
    """The one `name = value` a block consists of, else None."""
    if not isinstance(block, cst.IndentedBlock) or len(block.body) != 1:
        return None
    line = block.body[0]
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or not isinstance(line.body[0], cst.Assign):
        return None
    assign = line.body[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    return assign
