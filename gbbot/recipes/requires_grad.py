"""Changing `requires_grad` inside a compiled region (GB0206, GB8985, GB0125): move it out."""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from gbbot.recipes.base import Recipe


def changed_tensor(statement: cst.BaseStatement) -> cst.BaseExpression | None:
    """What `x.requires_grad_(…)` / `x.requires_grad = …` changes, else None."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if m.matches(small, m.Expr(m.Call(func=m.Attribute(attr=m.Name("requires_grad_"))))):
        return small.value.func.value
    if m.matches(small, m.Assign(targets=[m.AssignTarget(m.Attribute(attr=m.Name("requires_grad")))])):
        return small.targets[0].target.value
    return None


def _docstring(statement: cst.BaseStatement) -> bool:
    return m.matches(statement, m.SimpleStatementLine(body=[m.Expr(m.SimpleString() | m.ConcatenatedString())]))


def _forwarded(params: cst.Parameters, skip_first: bool) -> list[cst.Arg]:
    """The arguments that pass a function's own parameters on, unchanged."""
    positional = [*params.posonly_params, *params.params][1 if skip_first else 0 :]
    args = [cst.Arg(p.name) for p in positional]
    if isinstance(params.star_arg, cst.Param):
        args.append(cst.Arg(params.star_arg.name, star="*"))
    tight = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
    args.extend(cst.Arg(p.name, keyword=p.name, equal=tight) for p in params.kwonly_params)
    if params.star_kwarg is not None:
        args.append(cst.Arg(params.star_kwarg.name, star="**"))
    return args


class RequiresGradSplit(Recipe):
    id = "requires_grad"
    gb_ids = ("GB0206", "GB8985", "GB0125")
    variant = "split"
    title = "set requires_grad before entering the compiled function"
    description = (
        "The function is compiled with `@torch.compile` and starts by changing `requires_grad` on "
        "its own arguments. The fix splits it: the original name becomes a plain function that "
        "makes those changes eagerly and calls `_<name>_compiled`, which carries the decorator "
        "and the rest of the body. Callers and results are the same; attributes of the compiled "
        "wrapper (such as `_orig_mod`) move to `_<name>_compiled`."
    )

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        tensor = changed_tensor(node)
        function = self.parent(self.parent(node))
        if tensor is None or not self.on_site(node) or not isinstance(function, cst.FunctionDef):
            return
        if self._splittable(function, node):
            self._record_split(function)

    def _leading(self, function: cst.FunctionDef) -> tuple[list[cst.BaseStatement], list[cst.BaseStatement]]:
        """(docstring and the requires_grad changes on parameters at the top, the rest)."""
        signature = function.params
        params = {p.name.value for p in (*signature.posonly_params, *signature.params, *signature.kwonly_params)}
        body = list(function.body.body)
        cut = 1 if body and _docstring(body[0]) else 0
        while cut < len(body):
            tensor = changed_tensor(body[cut])
            if not (isinstance(tensor, cst.Name) and tensor.value in params):
                break
            cut += 1
        return body[:cut], body[cut:]

    def _splittable(self, function: cst.FunctionDef, statement: cst.SimpleStatementLine) -> bool:
        head, rest = self._leading(function)
        method = isinstance(self.parent(self.parent(function)), cst.ClassDef)
        return (
            (not method or bool([*function.params.posonly_params, *function.params.params]))
            and len(function.decorators) == 1
            and self.is_compile(function.decorators[0].decorator)
            and function.asynchronous is None
            and any(s is statement for s in head)
            and bool(rest)
            and not m.findall(function.body, m.Yield())
            and f"_{function.name.value}_compiled" not in self._module_code
        )

    def visit_Module(self, node: cst.Module) -> None:
        self._module_code = node.code

    def _record_split(self, function: cst.FunctionDef) -> None:
        head, rest = self._leading(function)
        inner_name = f"_{function.name.value}_compiled"
        method = isinstance(self.parent(self.parent(function)), cst.ClassDef)
        callee: cst.BaseExpression = cst.Name(inner_name)
        if method:
            owner = [*function.params.posonly_params, *function.params.params][0].name.value
            callee = cst.Attribute(cst.Name(owner), cst.Name(inner_name))
        call = cst.Call(callee, _forwarded(function.params, skip_first=method))
        outer = function.with_changes(
            decorators=(),
            body=function.body.with_changes(body=[*head, cst.SimpleStatementLine([cst.Return(call)])]),
        )
        blank = (cst.EmptyLine(indent=False),) * (1 if method else 2)
        inner = function.with_changes(
            name=cst.Name(inner_name),
            leading_lines=blank,
            body=function.body.with_changes(body=rest),
        )
        self.record(function, cst.FlattenSentinel([outer, inner]))


class RequiresGradInit(Recipe):
    id = "requires_grad"
    gb_ids = ("GB0206", "GB8985", "GB0125")
    variant = "init"
    title = "set the module attribute's requires_grad once, in `__init__`"
    description = (
        "`forward` sets `requires_grad` on one of the module's own tensors to a constant. The "
        "statement moves to the end of `__init__`, outside the compiled region, so it runs once "
        "when the module is built instead of on every call. Behaviour differs only if other code "
        "changes that flag between calls and relies on `forward` to set it back."
    )

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        tensor = changed_tensor(node)
        if tensor is None or not self.on_site(node) or not m.matches(tensor, m.Attribute(value=m.Name("self"))):
            return
        if not self._constant_flag(node.body[0]):
            return
        forward = self.parent(self.parent(node))
        if not isinstance(forward, cst.FunctionDef) or forward.name.value != "forward":
            return
        cls = self.parent(self.parent(forward))
        init = self._init(cls)
        if init is None or not isinstance(init.body, cst.IndentedBlock):
            return
        last = init.body.body[-1]
        moved = node.with_changes(leading_lines=())
        self.record(last, cst.FlattenSentinel([last, moved]))
        self.record_removal(node)

    def _constant_flag(self, small: cst.BaseSmallStatement) -> bool:
        if isinstance(small, cst.Assign):
            return m.matches(small.value, m.Name("True") | m.Name("False"))
        args = small.value.args
        return not args or (len(args) == 1 and m.matches(args[0].value, m.Name("True") | m.Name("False")))

    def _init(self, cls: cst.CSTNode | None) -> cst.FunctionDef | None:
        if not isinstance(cls, cst.ClassDef):
            return None
        return next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
