"""Dynamo settings that remove a break, turned on where the repository calls `torch.compile` and
only for that compile — never as a process-wide assignment in the module that happens to hold the
break (often a library module of the repository).

`torch._dynamo.config.patch(flag=True)` is a decorator: the setting holds while the wrapped call
runs, which is when Dynamo traces. So `torch.compile(net)(x)` becomes
`torch._dynamo.config.patch(flag=True)(torch.compile(net))(x)`, and a function decorated with
`@torch.compile` gets `@torch._dynamo.config.patch(flag=True)` above that decorator.

For these recipes the site is the compile call, which `compile_sites` finds; in the examples the
line marked `# BREAK` is that compile call.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

import libcst as cst
import libcst.matchers as m
import yaml
from libcst.metadata import QualifiedNameProvider, QualifiedNameSource

from gbbot.recipes.base import Example, Recipe
from gbbot.recipes.branches import decides_branch

COMPILE = "torch.compile"


def _compiled(call: cst.Call) -> cst.BaseExpression | None:
    """What `torch.compile(what, ...)` compiles; None for `torch.compile(fullgraph=True)`, the
    decorator form."""
    first = call.args[0] if call.args else None
    return first.value if first is not None and first.keyword is None and not first.star else None


class CompileSiteConfig(Recipe):
    """Base: `flag` is the `torch._dynamo.config` setting the subclass turns on. Where the compile
    already has a `config.patch(...)` (an earlier fix's), the setting joins it: one call, two
    settings. A compiled object that is kept (`model = torch.compile(model)`, `model.compile()`)
    cannot be wrapped (the wrapper is a plain function: `model.eval()` would fail), so the setting
    is turned on in the statement before the compile, for the rest of the process."""

    flag: ClassVar[str]
    at_compile_site = True
    imports: ClassVar[tuple[str, ...]] = ("torch",)  # what the setting's text names

    @classmethod
    def matches(cls, source: str, line: int, code: str) -> bool:
        """A setting takes every break of its kind: it is written where the frame is compiled."""
        return True

    def value(self) -> str:
        """The setting's value, as code."""
        return "True"

    def visit_Call(self, node: cst.Call) -> None:
        if self.edits or not self.on_site(node):
            return
        if self._module_compiles_itself(node):
            self._before_statement(node)
            return
        if not isinstance(node.func, cst.Name | cst.Attribute) or not self.is_name(node.func, COMPILE):
            return  # (`torch.compile(f)(x)`: the inner call is the compile)
        if _compiled(node) is None:  # the decorator form: see visit_FunctionDef
            return
        wrapper = self._patch_wrapping(node)
        if wrapper is not None:
            self._join(wrapper)
        elif self._result_is_only_called(node):
            self.record(node, self._patch(node), self.imports)
        else:
            self._before_statement(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.edits:
            return
        decorators = list(node.decorators)
        at = next((i for i, d in enumerate(decorators) if self.is_compile(d.decorator)), None)
        if at is None or not (self.on_site(decorators[at]) or self.starts_on_site(node.name)):
            return
        existing = next((d.decorator for d in decorators[:at] if _is_patch_call(d.decorator)), None)
        if existing is not None:
            self._join(existing)
            return
        patch = cst.Decorator(self._patch_call(), leading_lines=decorators[at].leading_lines)
        moved = decorators[at].with_changes(leading_lines=())
        self.record(decorators[at], cst.FlattenSentinel([patch, moved]), self.imports)

    def _module_compiles_itself(self, node: cst.Call) -> bool:
        """`model.compile()` / `model.compile(mode=...)` (nn.Module.compile): keywords only, and
        not an imported module's function (`re.compile(p)`)."""
        if not m.matches(node.func, m.Attribute(attr=m.Name("compile"))) or self.is_name(node.func, COMPILE):
            return False
        names = self.get_metadata(QualifiedNameProvider, node.func, set())
        imported = any(q.source is QualifiedNameSource.IMPORT for q in names)
        return all(a.keyword is not None or a.star == "**" for a in node.args) and not imported

    def _patch_call(self) -> cst.BaseExpression:
        return self.torch_expr(f"_dynamo.config.patch({self.flag}={self.value()})")

    def _patch(self, compiled: cst.Call) -> cst.Call:
        return cst.Call(self._patch_call(), [cst.Arg(compiled)])

    def _patch_wrapping(self, node: cst.Call) -> cst.Call | None:
        """The `torch._dynamo.config.patch(...)` call whose result wraps `node`, if one does."""
        parent = self.parent(node)
        wrapper = self.parent(parent) if isinstance(parent, cst.Arg) else None
        if isinstance(wrapper, cst.Call) and _is_patch_call(wrapper.func):
            return wrapper.func  # type: ignore[return-value]
        return None

    def _join(self, patch: cst.Call) -> None:
        """Add the setting to an existing `config.patch(...)`; nothing when it is there already
        (on, and still breaking: not this recipe's case)."""
        if any(a.keyword is not None and a.keyword.value == self.flag for a in patch.args):
            return
        args = list(patch.args)
        if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        setting = cst.Arg(cst.parse_expression(self.value()), keyword=cst.Name(self.flag), equal=_EQUAL)
        self.record(patch, patch.with_changes(args=[*args, setting]), self.imports)

    def _setting(self) -> cst.SimpleStatementLine:
        return cst.SimpleStatementLine(
            [cst.Assign([cst.AssignTarget(self.torch_expr(f"_dynamo.config.{self.flag}"))], cst.Name(self.value()))]
        )

    def _before_statement(self, node: cst.CSTNode) -> None:
        """`torch._dynamo.config.<flag> = True` as the statement before the one compiling."""
        statement = self.enclosing(node, cst.SimpleStatementLine)
        block = self.parent(statement) if statement is not None else None
        if statement is None or block is None:
            return
        siblings = list(getattr(block, "body", ()))
        index = next((i for i, s in enumerate(siblings) if s is statement), 0)
        setting = self._setting()
        if index and cst.Module([]).code_for_node(siblings[index - 1]).strip().endswith(
            cst.Module([]).code_for_node(setting).strip()
        ):
            return  # already on before this compile
        first = setting.with_changes(leading_lines=statement.leading_lines)
        self.record(statement, cst.FlattenSentinel([first, statement.with_changes(leading_lines=())]), self.imports)

    def _result_is_only_called(self, node: cst.Call) -> bool:
        """Wrapping turns the compiled object into a plain function: fine when it is called right
        away (`torch.compile(net)(x)`) or compiles a module-level function of this file, not when a
        compiled module is kept (`model = torch.compile(model)`; `model.eval()` would fail)."""
        parent = self.parent(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            return True
        if not isinstance(parent, cst.Assign):
            return False
        target = _compiled(node)
        module = self.enclosing(node, cst.Module)
        return isinstance(target, cst.Name) and module is not None and _defines_function(module, target.value)


CALLED_METHOD = re.compile(r"\.([A-Za-z_]\w*)\s*\(")
_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def _is_patch_call(node: cst.CSTNode) -> bool:
    """`torch._dynamo.config.patch(...)` (however torch is spelled)."""
    return m.matches(node, m.Call(func=m.Attribute(attr=m.Name("patch"), value=m.Attribute(attr=m.Name("config")))))


def _defines_function(module: cst.Module, name: str) -> bool:
    return any(isinstance(s, cst.FunctionDef) and s.name.value == name for s in module.body)


EXAMPLES = Path(__file__).parent.parent / "data" / "compile_site_examples.yaml"


def _examples(flag: str, expr: str, before_line: str, other: str) -> tuple[Example, ...]:
    """The shapes every compile-site recipe handles (gbbot/data/compile_site_examples.yaml), for
    the setting `flag`; `other` is the setting an earlier fix turned on."""
    fields = {"flag": flag, "expr": expr, "before_line": before_line, "other": other}
    found = yaml.safe_load(EXAMPLES.read_text(encoding="utf-8"))["examples"]
    return tuple(Example(e["before"].format(**fields), e["after"].format(**fields)) for e in found)


class ItemCaptureScalars(CompileSiteConfig):
    id = "item"
    gb_ids = ("GB0124",)
    variant = "capture_scalar_outputs"
    flag = "capture_scalar_outputs"
    title = "turn on `capture_scalar_outputs` for the compile that traces it"
    description = (
        "Wraps the `torch.compile` call (or decorates the `@torch.compile` function) with "
        "`torch._dynamo.config.patch(capture_scalar_outputs=True)`, so Dynamo traces `.item()` — "
        "also the implicit one of `int(t)`, `float(t)` or a tensor used as a slice bound — as a "
        "symbolic scalar instead of breaking the graph. The setting holds only while that compiled "
        "function runs. Results are unchanged, but code that branches on the scalar can then hit a "
        "data-dependent error instead of a graph break."
    )

    @classmethod
    def matches(cls, source: str, line: int, code: str) -> bool:
        """An `.item()` whose number decides no branch: capturing one that does would only move
        the break to the `if` (data-dependent branching)."""
        return not decides_branch(source, line)

    examples = _examples(
        "capture_scalar_outputs", "return x / x.sum().item()", "n = x.sum().item()", "capture_dynamic_output_shape_ops"
    )


class DynamicShapeCaptureOps(CompileSiteConfig):
    id = "dynamic_shape"
    gb_ids = ("GB0036",)
    variant = "capture_dynamic_output_shape_ops"
    flag = "capture_dynamic_output_shape_ops"
    title = "turn on `capture_dynamic_output_shape_ops` for the compile that traces it"
    description = (
        "Wraps the `torch.compile` call (or decorates the `@torch.compile` function) with "
        "`torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)`, so Dynamo traces "
        "operators whose output size depends on the data (`nonzero`, `x[mask]`, `repeat_interleave`) "
        "with a symbolic size instead of breaking the graph. The setting holds only while that "
        "compiled function runs; results are unchanged."
    )
    examples = _examples(
        "capture_dynamic_output_shape_ops", "return x[x > 0].sum()", "x = x[x > 0]", "capture_scalar_outputs"
    )


class RnnAllowed(CompileSiteConfig):
    """An `nn.LSTM`, `nn.GRU` or `nn.RNN` module, which Dynamo does not trace unless told to (most
    often inside a library model: an audio codec's LSTM). torch's own hint for the break names the
    setting and calls the support experimental, so the fix is confirmed with the backend the code
    names before it is kept (fix/trials.py)."""

    id = "rnn"
    gb_ids = ("GB0014",)
    variant = "allow_rnn"
    flag = "allow_rnn"
    title = "turn on `allow_rnn` for the compile that traces it"
    description = (
        "Wraps the `torch.compile` call (or decorates the `@torch.compile` function) with "
        "`torch._dynamo.config.patch(allow_rnn=True)`, so Dynamo traces `nn.LSTM`, `nn.GRU` and "
        "`nn.RNN` modules (support torch calls experimental) instead of breaking the graph at them. "
        "The setting holds only while that compiled function runs."
    )
    examples = _examples(
        "allow_rnn", "return torch.nn.LSTM(4, 4)(x)[0]", "y = torch.nn.GRU(4, 4)(x)[0]", "capture_scalar_outputs"
    )


class LoggerIgnored(CompileSiteConfig):
    """A logger call Dynamo cannot trace, most often inside a library the model comes from
    (`logger.warning_once(...)` in transformers), where no guard can be written: the logger method
    goes into `torch._dynamo.config.ignore_logging_functions` (torch 2.13's name; its older
    `ignore_logger_methods` is an alias) for the compile that traces it. `method` is the logger
    method the break's line calls (`warning`, `warning_once`); `for_code` makes the recipe for one."""

    id = "logger"
    gb_ids = ("GB0291",)
    leads = True
    variant = "ignore_logging_functions"
    flag = "ignore_logging_functions"
    method: ClassVar[str] = "warning"
    imports = ("torch", "logging")
    title = "ignore the logger method in the compile that traces it (`ignore_logging_functions`)"
    description = (
        "Wraps the `torch.compile` call with `torch._dynamo.config.patch(ignore_logging_functions="
        "{logging.Logger.<method>})` (or, for a compiled module that is kept, adds the method to that "
        "set before the compile), so Dynamo treats the logger call as a no-op instead of breaking the "
        "graph. Eager runs log exactly as before; compiled runs no longer emit this record, for every "
        "logger's `<method>` while the setting holds. Meant for logger calls inside a library, which "
        "cannot be guarded in place."
    )

    @classmethod
    def matches(cls, source: str, line: int, code: str) -> bool:
        return _called_method(code) is not None

    def value(self) -> str:
        return f"{{logging.Logger.{self.method}}}"

    def _setting(self) -> cst.SimpleStatementLine:
        target = self.torch_expr(f"_dynamo.config.{self.flag}")
        return cst.SimpleStatementLine([cst.AugAssign(target, cst.BitOrAssign(), cst.parse_expression(self.value()))])

    @classmethod
    def for_code(cls, code: str) -> type[LoggerIgnored] | None:
        """The recipe for the logger method `code` calls (`logger.warning_once("…")` →
        `warning_once`); None when the line is no method call."""
        found = _called_method(code)
        return type(f"LoggerIgnored_{found}", (cls,), {"method": found}) if found else None


def _called_method(code: str) -> str | None:
    """The method the statement's first call names: `logger.warning_once("…")` → `warning_once`
    (the first line of a call spread over several lines too)."""
    found = CALLED_METHOD.search(code)
    return found[1] if found else None


class SettingAtCall(CompileSiteConfig):
    """Base of a setting turned on around the statement that calls the compiled model, not at its
    compile: the compile is in a helper that other entrypoints share (`compiled(model)` in a
    `build.py` every model's module calls), where a setting would reach every model compiled
    there. `with torch._dynamo.config.patch(flag=True):` holds while the call runs, which is when
    Dynamo traces. A statement already wrapped so (an earlier fix's) gets the setting joined."""

    def visit_Call(self, node: cst.Call) -> None:
        return None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        return None

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if self.edits or not self.on_site(node):
            return
        block = self.parent(node)
        wrapper = self.parent(block) if isinstance(block, cst.IndentedBlock) else None
        if isinstance(wrapper, cst.With) and len(block.body) == 1 and len(wrapper.items) == 1:  # type: ignore[union-attr]
            call = wrapper.items[0].item
            if isinstance(call, cst.Call) and _is_patch_call(call):
                self._join(call)
                return
        body = cst.IndentedBlock([node.with_changes(leading_lines=())])
        wrapped = cst.With([cst.WithItem(self._patch_call())], body, leading_lines=node.leading_lines)
        self.record(node, wrapped, self.imports)


def at_call(setting: type[CompileSiteConfig]) -> type[CompileSiteConfig]:
    """`setting` turned on around the call of the compiled model (SettingAtCall)."""
    flag = setting.flag
    description = (
        f"The `torch.compile` is in a helper other code shares, so the setting goes around the statement that "
        f"calls the compiled model instead: `with torch._dynamo.config.patch({flag}=...):`, which holds while "
        f"that call runs (when Dynamo traces) and reaches no other model compiled by the helper. "
        f"{setting.description}"
    )
    title = f"turn on `{flag}` around the call of the compiled model"
    attributes = {"variant": f"{setting.variant}_at_call", "title": title, "description": description}
    return type(f"{setting.__name__}AtCall", (SettingAtCall, setting), attributes)


class NestedBreaks(CompileSiteConfig):
    """A break in a function the compiled frame calls: with `nested_graph_breaks` Dynamo resumes
    in that function after the break instead of splitting every frame above it (torch 2.13 and
    2.14.1 leave it off; PyTorch means to make it the default). The break stays; the graphs around
    it join up. Tried in a last round, on the breaks no other fix removed, kept only when it cuts
    the graphs with no frame more running eagerly and the outputs equal, and confirmed with the
    code's own backend."""

    id = "nested"
    variant = "nested_graph_breaks"
    flag = "nested_graph_breaks"
    title = "turn on `nested_graph_breaks` for the compile that traces it"
    description = (
        "Turns on `torch._dynamo.config.nested_graph_breaks` for the `torch.compile` that traces the "
        "break's frame (or around the call of the compiled model), so that after a break in a function "
        "the frame calls, Dynamo resumes in that function rather than splitting every frame above it: "
        "the break still happens, but fewer graphs run around it. Kept only because the re-run had fewer graphs, "
        "no frame more running eagerly and equal outputs; confirmed with the compiler the code names."
    )
    examples = _examples("nested_graph_breaks", "return helper(x) * 2", "x = helper(x)", "capture_scalar_outputs")
