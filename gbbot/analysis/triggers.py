"""Which breaks each recipe takes: its trigger, declared once. Pure over the break's GB id and its
statement's source.

A trigger names the GB ids a recipe takes (none: it is chosen by the statement's shape, whatever
break the line reports) and the shape the statement must have. Both sides ask it: the label every
view shows ("fix: item", gbbot/analysis/labels.py) and the recipes `gbbot fix` tries
(gbbot/fix/recipes/, each recipe class names its trigger), so a view never promises a fix the fix
step then refuses, and never hides one it makes. tests/unit/fix/test_triggers.py holds every
recipe's examples and look-alikes to that.

The shapes are the ones the recipes rewrite, read here with `ast` (the recipes read LibCST):
- a statement made only for its side effect (a print, a log record, `tqdm.write`): guarded;
- an `if` that only raises (`if bad: raise E(msg)`, no `else`, not an `elif`, no `from`), or an
  `assert`: becomes `torch._check`;
- a branch that only picks one of two values by a boolean tensor (`y = a if cond else b`, or an
  `if`/`else` assigning one name in both arms, both sides computing only): becomes `torch.where`;
- an `.item()` whose number decides no branch: `capture_scalar_outputs` (one that does would only
  move the break to the `if`; an `if` that only raises is the exception, as above).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from gbbot.analysis.branches import decides_branch, parsed
from gbbot.analysis.side_effects import Imports, only_side_effect, qualified

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
SDP_KERNEL = "torch.backends.cuda.sdp_kernel"
ORDERED_OR_EQUAL = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


@dataclass(frozen=True)
class Statement:
    """What a trigger reads: the file's text, the break's line, the statement's source there and
    the module's imports (name → what it imports)."""

    text: str
    line: int
    code: str
    imports: Imports


Condition = Callable[[Statement], bool]


def any_statement(_statement: Statement) -> bool:
    return True


@dataclass(frozen=True)
class Trigger:
    """`recipe`: the `fix` id (the recipes' `id`). `gb_ids`: the breaks it takes by id; empty: it
    is chosen by the statement's shape for any break. `when`: the shape the statement must have.
    `leads`: its first variant already guards the statement, so it is tried before the shape
    recipes (which otherwise come first: they change the least)."""

    recipe: str
    gb_ids: tuple[str, ...] = ()
    when: Condition = any_statement
    leads: bool = False
    shape: str = ""  # what `when` asks, in words, for a break whose statement it refuses

    @property
    def by_shape(self) -> bool:
        return not self.gb_ids

    def takes(self, gb_id: str | None) -> bool:
        return self.by_shape or gb_id in self.gb_ids

    def accepts(self, statement: Statement) -> bool:
        return self.when(statement)


# --- the shapes --------------------------------------------------------------------------------


def side_effect_only(s: Statement) -> bool:
    return only_side_effect(s.code, s.imports)


def calls_sdp_kernel(s: Statement) -> bool:
    tree = parsed(s.text)
    if tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.With | ast.AsyncWith) and node.lineno <= s.line <= node.body[0].lineno - 1:
            for item in node.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and qualified(call.func, s.imports) == SDP_KERNEL:
                    return _literal_flags(call)
    return False


def _literal_flags(call: ast.Call) -> bool:
    """Every argument a literal True/False: the backends it enables can be listed (at most four,
    by position or by keyword)."""
    values = [*call.args, *(k.value for k in call.keywords)]
    literal = all(isinstance(v, ast.Constant) and isinstance(v.value, bool) for v in values)
    return literal and len(call.args) <= 4 and all(k.arg is not None for k in call.keywords)


def _spans(node: ast.AST, line: int) -> bool:
    return node.lineno <= line <= (node.end_lineno or node.lineno)  # type: ignore[attr-defined]


def _branch_at(tree: ast.Module, line: int) -> tuple[ast.If | ast.Assert | ast.IfExp, bool] | None:
    """The `if`, `assert` or conditional expression whose test holds `line` (the innermost), and
    whether an `if` is an `elif`."""
    elifs = {
        id(node.orelse[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        and len(node.orelse) == 1
        and isinstance(node.orelse[0], ast.If)
        and node.orelse[0].col_offset == node.col_offset
    }
    found = [n for n in ast.walk(tree) if isinstance(n, ast.If | ast.Assert | ast.IfExp) and _spans(n.test, line)]
    if not found:
        return None
    innermost = max(found, key=lambda n: (n.test.lineno, n.test.col_offset))
    return innermost, id(innermost) in elifs


def _either(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return [part for value in test.values for part in _either(value)]
    return [test]


def _reads_item(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "item" and not n.args
        for n in ast.walk(node)
    )


def _is_boolean_tensor(node: ast.expr) -> bool:
    if isinstance(node, ast.Compare):
        return len(node.ops) == 1 and isinstance(node.ops[0], ORDERED_OR_EQUAL)
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        return name in BOOLEAN_CALLS
    return False


def _scalar_condition(test: ast.expr) -> bool:
    """A Python bool read with `.item()`: one comparison or call, nothing lazy inside."""
    simple = (isinstance(test, ast.Compare) and len(test.ops) == 1) or isinstance(test, ast.Call)
    lazy = any(isinstance(n, ast.BoolOp | ast.IfExp) for n in ast.walk(test))
    return simple and _reads_item(test) and not lazy


def _tensor_condition(test: ast.expr) -> bool:
    return _is_boolean_tensor(test) and not _reads_item(test)


def _negatable(test: ast.expr, condition: Callable[[ast.expr], bool]) -> bool:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return condition(test.operand)
    return condition(test)


def _raise_only(node: ast.If) -> bool:
    """One `raise E` / `raise E(message)` and nothing else: no `else`, no `from`, no keywords."""
    if node.orelse or len(node.body) != 1 or not isinstance(node.body[0], ast.Raise):
        return False
    raised = node.body[0]
    if raised.exc is None or raised.cause is not None:
        return False
    exc = raised.exc
    if isinstance(exc, ast.Name | ast.Attribute):
        return True
    if not isinstance(exc, ast.Call) or not isinstance(exc.func, ast.Name | ast.Attribute):
        return False
    return len(exc.args) <= 1 and not exc.keywords and not any(isinstance(a, ast.Starred) for a in exc.args)


def _raises_on(s: Statement, condition: Callable[[ast.expr], bool], asserts: bool) -> bool:
    tree = parsed(s.text)
    found = _branch_at(tree, s.line) if tree is not None else None
    if found is None:
        return False
    branch, is_elif = found
    if isinstance(branch, ast.Assert):
        return asserts and condition(branch.test)
    if not isinstance(branch, ast.If) or is_elif or not _raise_only(branch):
        return False
    return all(_negatable(part, condition) for part in _either(branch.test))


def raises_on_item(s: Statement) -> bool:
    """`if <a value read with .item()> …: raise …` (or an assert on one): a `torch._check`."""
    return _raises_on(s, _scalar_condition, asserts=True)


def raises_on_tensor(s: Statement) -> bool:
    """`if <a boolean tensor>: raise …`: a `torch._check` of its `.item()`."""
    return _raises_on(s, _tensor_condition, asserts=False)


def _single_assign(body: list[ast.stmt]) -> ast.Assign | None:
    if len(body) != 1 or not isinstance(body[0], ast.Assign):
        return None
    assign = body[0]
    return assign if len(assign.targets) == 1 and isinstance(assign.targets[0], ast.Name) else None


def _pure(node: ast.expr, imports: Imports) -> bool:
    """Only names, constants, attributes, subscripts, arithmetic, non-random torch functions and
    computing tensor methods: evaluating it has no effect but its value."""
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.Attribute):
        return _pure(node.value, imports)
    if isinstance(node, ast.Subscript):
        return _pure(node.value, imports) and _pure_slice(node.slice, imports)
    if isinstance(node, ast.BinOp):
        return _pure(node.left, imports) and _pure(node.right, imports)
    if isinstance(node, ast.UnaryOp):
        return not isinstance(node.op, ast.Not) and _pure(node.operand, imports)
    return isinstance(node, ast.Call) and _pure_call(node, imports)


def _pure_slice(part: ast.expr, imports: Imports) -> bool:
    if isinstance(part, ast.Tuple):
        return all(_pure_slice(e, imports) for e in part.elts)
    if isinstance(part, ast.Slice):
        return all(b is None or _pure(b, imports) for b in (part.lower, part.upper, part.step))
    return _pure(part, imports)


def _pure_call(node: ast.Call, imports: Imports) -> bool:
    arguments = [*node.args, *(k.value for k in node.keywords)]
    if any(k.arg is None for k in node.keywords) or not all(
        not isinstance(a, ast.Starred) and _pure(a, imports) for a in arguments
    ):
        return False
    name = qualified(node.func, imports) or ""
    if name.startswith("torch.") and not name.startswith("torch.nn."):
        last = name.rsplit(".", 1)[-1]
        return not last.endswith("_") and not last.startswith(RANDOM)
    if not isinstance(node.func, ast.Attribute):
        return False
    own = isinstance(node.func.value, ast.Name) and node.func.value.id == "self"  # a module's call, hooks
    return node.func.attr in PURE_METHODS and not own and _pure(node.func.value, imports)


def picks_a_value(s: Statement) -> bool:
    """`y = a if cond else b`, or `if cond: y = a` / `else: y = b`, by a boolean tensor, both sides
    computing only: a `torch.where`."""
    tree = parsed(s.text)
    found = _branch_at(tree, s.line) if tree is not None else None
    if found is None:
        return False
    branch, is_elif = found
    if isinstance(branch, ast.IfExp):
        sides = (branch.body, branch.orelse)
    elif isinstance(branch, ast.If) and not is_elif and branch.orelse:
        then, other = _single_assign(branch.body), _single_assign(branch.orelse)
        if then is None or other is None or then.targets[0].id != other.targets[0].id:  # type: ignore[attr-defined]
            return False
        sides = (then.value, other.value)
    else:
        return False
    return _negatable(branch.test, _is_boolean_tensor) and all(_pure(side, s.imports) for side in sides)


def item_without_branch(s: Statement) -> bool:
    """An `.item()` whose number decides no branch, or one an `if` only raises on."""
    return not decides_branch(s.text, s.line) or raises_on_item(s)


def tensor_branch_shapes(s: Statement) -> bool:
    return raises_on_tensor(s) or raises_on_item(s) or picks_a_value(s)


# --- the triggers, in the order the fix step tries them ----------------------------------------

PRINT = Trigger("print", ("GB0059",), leads=True)
LOGGER = Trigger("logger", ("GB0291",), leads=True)
SKIPPED_CALL = Trigger("skipped_call", ("GB0007",), leads=True)
ITEM = Trigger(
    "item",
    ("GB0124",),
    item_without_branch,
    shape="an `.item()` whose number decides no branch, or one an `if` only raises on",
)
TOLIST = Trigger("tolist", ("GB0109",))
DEEPCOPY = Trigger("deepcopy", ("GB4198",))
REQUIRES_GRAD = Trigger("requires_grad", ("GB0206", "GB8985", "GB0125"))
GRAPH_BREAK = Trigger("graph_break", ("GB0025",))
DYNAMIC_SHAPE = Trigger("dynamic_shape", ("GB0036",))
RNN = Trigger("rnn", ("GB0014",))
TENSOR_BRANCH = Trigger(
    "tensor_branch",
    ("GB0170",),
    tensor_branch_shapes,
    shape="an `if` that only raises, or a branch that only picks one of two tensors",
)
SIDE_EFFECT = Trigger("side_effect", when=side_effect_only, shape="a statement made only for its side effect")
SDP_KERNEL_CALL = Trigger("sdp_kernel", when=calls_sdp_kernel, shape="`with torch.backends.cuda.sdp_kernel(…)`")

TRIGGERS: tuple[Trigger, ...] = (
    PRINT,
    LOGGER,
    SKIPPED_CALL,
    ITEM,
    TOLIST,
    DEEPCOPY,
    REQUIRES_GRAD,
    GRAPH_BREAK,
    DYNAMIC_SHAPE,
    RNN,
    TENSOR_BRANCH,
    SIDE_EFFECT,
    SDP_KERNEL_CALL,
)
BY_RECIPE = {t.recipe: t for t in TRIGGERS}
BY_SHAPE = tuple(t for t in TRIGGERS if t.by_shape)


def by_id(gb_id: str | None) -> Trigger | None:
    """The trigger that takes this GB id (at most one does)."""
    return next((t for t in TRIGGERS if not t.by_shape and t.takes(gb_id)), None)


def tried(own: Trigger | None) -> tuple[Trigger, ...]:
    """The triggers asked for a break whose id `own` takes, in the order the fix step tries their
    recipes: the shape recipes first (they change the least), unless `own`'s first variant already
    guards the statement."""
    if own is None:
        return BY_SHAPE
    return (own, *BY_SHAPE) if own.leads else (*BY_SHAPE, own)


def chosen(recipe: str | None, statement: Statement) -> Trigger | None:
    """For a break whose GB id names `recipe`: the first trigger that accepts its statement, the
    recipe `gbbot fix` tries first and the label's."""
    return next((t for t in tried(BY_RECIPE.get(recipe or "")) if t.accepts(statement)), None)
