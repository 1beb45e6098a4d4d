"""Where the repository compiles a frame: the `torch.compile` that a Dynamo setting
(`capture_scalar_outputs`, `capture_dynamic_output_shape_ops`) belongs on. Pure over source texts.

A setting holds for the compile that traced the *frame* (the code object Dynamo was compiling,
often the caller of the function that breaks), so the search starts from the frame, not from the
break's function. A compile site compiles a frame when, in the file's own scopes:

- `torch.compile(f)` / `torch.compile(obj.f)` names the frame's function;
- `torch.compile(m)` / `m.compile()` / `torch.compile(C(...))` is given an instance of a class
  whose call runs the frame: the frame is that class's `forward` (or `__call__`), or a subclass's
  inherited one. `m` is bound in the same scope (`m = C(...)`, `m = C.from_pretrained(...)`,
  `self.m = C(...)` in the class);
- `@torch.compile` decorates the frame's own function (a method too).

Every file of the repository is searched (the compile is often in a training script or in a
`call:` target's module, which the break's stack need not show). When none matches, a compile on
the break's stack whose argument cannot be resolved either way (a parameter, a factory's result)
is the candidate, if it is the only one: verification by re-running decides.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from gbbot.core import source_limits
from gbbot.core.model import FrameRef
from gbbot.recipes.branches import parsed

COMPILE_WORD = "compile"  # files without it are not parsed
CALL_METHODS = ("forward", "__call__")  # a module instance's call runs these


def describe(frame: FrameRef, owner: str | None = None) -> str:
    """`Model.forward` (model.py:12): the frame as the words name it."""
    name = f"{owner}.{frame.function}" if owner else frame.function
    return f"`{name}` ({frame.file}:{frame.line})" if frame.line else f"`{name}` ({frame.file})"


@dataclass(frozen=True)
class CompileSite:
    path: str
    line: int


@dataclass(frozen=True)
class Search:
    """What a search for one frame found: the sites that compile it, the compiles on the break's
    stack that cannot be resolved either way, and the frame's class (for the words when nothing
    is found)."""

    sites: tuple[CompileSite, ...]
    unresolved: tuple[CompileSite, ...]
    frame: FrameRef
    owner: str | None = None


# --- modules, and what their names refer to ------------------------------------------------------------

Id = tuple["str | None", str]  # (repository file, or None outside it; the class's or function's name)
UNRESOLVED: Id = (None, "")
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def _parse(text: str) -> ast.Module | None:
    """The module's tree; None for a file that does not parse or that gbbot does not parse (too
    large, nested too deep: `core.source_limits`)."""
    return None if source_limits.refusal(text) else parsed(text)


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else ""
    return ""


def _span(node: FunctionNode) -> tuple[int, int]:
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return start, node.end_lineno or node.lineno


def module_names(paths: Iterable[str]) -> dict[str, str]:
    """Dotted module name → repository file (`src/` layouts too)."""
    found: dict[str, str] = {}
    for path in paths:
        dotted = path[: -len(".py")].replace("/", ".").removesuffix(".__init__")
        found.setdefault(dotted, path)
        if dotted.startswith("src."):
            found.setdefault(dotted[len("src.") :], path)
    return found


@dataclass
class _Module:
    """One file: its tree, what its top-level names refer to (a class or function of a file, or a
    module by dotted name), and how it spells `torch` and `torch.compile`."""

    path: str
    tree: ast.Module
    modules: Mapping[str, str]
    symbols: dict[str, Id] = field(default_factory=dict)
    imported_modules: dict[str, str] = field(default_factory=dict)  # local name → dotted module
    torch: set[str] = field(default_factory=set)
    compile: set[str] = field(default_factory=set)
    external: dict[str, str] = field(default_factory=dict)  # local name → the outside module it comes from

    def __post_init__(self) -> None:
        for node in self.tree.body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                self.symbols[node.name] = (self.path, node.name)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                self._import(node)
            elif isinstance(node, ast.ImportFrom):
                self._import_from(node)

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "torch" or (alias.name.startswith("torch.") and alias.asname is None):
                self.torch.add(alias.asname or "torch")
            local = alias.asname or alias.name.split(".")[0]
            self.imported_modules[local] = alias.name if alias.asname else alias.name.split(".")[0]

    def _package(self, level: int) -> str:
        parts = self.path[: -len(".py")].split("/")[:-1]
        return ".".join(parts[: len(parts) - (level - 1)] if level > 1 else parts)

    def _import_from(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            base = ".".join(p for p in (self._package(node.level), base) if p)
        for alias in node.names:
            local = alias.asname or alias.name
            if base == "torch" and alias.name == "compile":
                self.compile.add(local)
            if f"{base}.{alias.name}" in self.modules:
                self.imported_modules[local] = f"{base}.{alias.name}"
            else:
                self.symbols[local] = (self.modules.get(base), alias.name)
                if base not in self.modules:
                    self.external[local] = base

    def resolve(self, dotted: str) -> Id:
        """The class or function a dotted name refers to (for `C.method`: the class C)."""
        parts = dotted.split(".")
        if parts[0] in self.imported_modules and len(parts) > 1:
            module = ".".join([self.imported_modules[parts[0]], *parts[1:-1]])
            return (self.modules.get(module), parts[-1])
        return self.symbols.get(parts[0], UNRESOLVED)

    def is_compile(self, func: ast.AST) -> bool:
        if isinstance(func, ast.Call):
            func = func.func
        if isinstance(func, ast.Name):
            return func.id in self.compile
        return isinstance(func, ast.Attribute) and func.attr == "compile" and _dotted(func.value) in self.torch

    def functions(self) -> Iterator[tuple[FunctionNode, str | None]]:
        """Every function of the module, with the class it is a method of."""

        def walk(node: ast.AST, cls: str | None) -> Iterator[tuple[FunctionNode, str | None]]:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    yield from walk(child, child.name)
                elif isinstance(child, FunctionNode):
                    yield child, cls
                    yield from walk(child, None)
                else:
                    yield from walk(child, cls)

        return walk(self.tree, None)

    def classes(self) -> Iterator[ast.ClassDef]:
        return (n for n in ast.walk(self.tree) if isinstance(n, ast.ClassDef))


def owner_of(module: _Module, frame: FrameRef) -> str | None:
    """The class the frame's function is a method of (None: a plain function, or not found)."""
    found = [
        (_span(node)[1] - _span(node)[0], cls)
        for node, cls in module.functions()
        if node.name == frame.function and (not frame.line or _span(node)[0] <= frame.line <= _span(node)[1])
    ]
    return min(found, key=lambda f: f[0])[1] if found else None


# --- what runs the frame ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reach:
    """What runs the frame when called, by identity: module-level functions, methods (by name)
    and classes (an instance's call)."""

    functions: frozenset[Id]
    methods: frozenset[str]
    classes: frozenset[Id]
    owners: frozenset[Id]  # the frame's own class and the classes inheriting the frame from it


def _calls(module: _Module, node: ast.AST) -> tuple[set[Id], set[str]]:
    """What a function calls: resolved classes and functions, and method names (`x.f(...)`)."""
    ids: set[Id] = set()
    methods: set[str] = set()
    for call in (c for c in ast.walk(node) if isinstance(c, ast.Call)):
        dotted = _dotted(call.func)
        resolved = module.resolve(dotted) if dotted else UNRESOLVED
        if resolved != UNRESOLVED and resolved[1]:  # (None, C): a class or function imported from a library
            ids.add(resolved)
        elif isinstance(call.func, ast.Attribute):
            methods.add(call.func.attr)
    return ids, methods


def reaching(
    frame: FrameRef,
    modules: Sequence[_Module],
    library_owner: str | None = None,
    whole_library: Sequence[str] = (),
) -> Reach:
    """The functions and classes whose call runs the frame: the frame's function, what calls one of
    them, the classes whose `forward`/`__call__` does or that make an instance of one
    (`self.blocks = ModuleList([Block()])`: calling the model calls the block), and subclasses that
    inherit a reached call. Dynamo inlines what a compiled call runs, so compiling any of them
    traces the frame. A frame inside a library is named by its class (`library_owner`, read from
    the library's source): the repository refers to it as `(None, class name)`. `whole_library`:
    files of the break's stack; every class they import from that library counts (a layer deep
    inside a model the repository makes there, which the library's own source would show;
    verification decides)."""
    here = next((m for m in modules if m.path == frame.file), None)
    owner = owner_of(here, frame) if here is not None else None
    file: str | None = frame.file
    if here is None and library_owner:
        file, owner = None, library_owner
    functions: set[Id] = set() if owner else {(frame.file, frame.function)}
    methods: set[str] = {frame.function} if owner and frame.function not in CALL_METHODS else set()
    classes: set[Id] = {(file, owner)} if owner and frame.function in CALL_METHODS else set()
    owners: set[Id] = {(file, owner)} if owner else set()
    if here is None and whole_library:
        package = frame.file.split("/")[0]
        stack = [m for m in modules if m.path in whole_library]
        classes |= {
            m.symbols[local] for m in stack for local, base in m.external.items() if base.split(".")[0] == package
        }
    defs = [(m, node, cls, *_calls(m, node)) for m in modules for node, cls in m.functions()]
    bases = [(m, c, {m.resolve(_dotted(b)) for b in c.bases}) for m in modules for c in m.classes()]
    while True:
        size = (len(functions), len(methods), len(classes), len(owners))
        for module, node, cls, ids, called in defs:
            runs = bool(ids & functions or called & methods)
            if cls is None and runs:
                functions.add((module.path, node.name))
            elif cls is not None and runs and node.name not in CALL_METHODS:
                methods.add(node.name)
            if cls is not None and ((runs and node.name in CALL_METHODS) or ids & classes):
                classes.add((module.path, cls))
        for module, cls, parents in bases:
            if parents & owners and not any(isinstance(s, FunctionNode) and s.name == frame.function for s in cls.body):
                owners.add((module.path, cls.name))
            if parents & classes:
                classes.add((module.path, cls.name))
        if (len(functions), len(methods), len(classes), len(owners)) == size:
            break
    return Reach(frozenset(functions), frozenset(methods), frozenset(classes), frozenset(owners))


# --- compile sites of one module -------------------------------------------------------------------------


MATCH, OTHER, UNKNOWN = "match", "other", "unknown"


class _Scope:
    """Names bound in one function (or the module, or a class's `self.`), to what the calls that
    made them refer to."""

    def __init__(self, module: _Module, nodes: Sequence[ast.AST], passed: frozenset[str] = frozenset()) -> None:
        self.module = module
        self.passed = passed  # parameters every caller found passes something that runs the frame
        self.bound: dict[str, set[Id]] = {}
        for node in nodes:
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                    self._bind(_dotted(stmt.targets[0]), stmt.value)
                elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                    self._bind(_dotted(stmt.target), stmt.value)

    def _bind(self, name: str, value: ast.AST) -> None:
        if not name:
            return
        if isinstance(value, ast.Call) and self.module.is_compile(value.func):
            return  # m = torch.compile(m): m stays what it was
        made = self.module.resolve(_dotted(value.func)) if isinstance(value, ast.Call) else UNRESOLVED
        self.bound.setdefault(name, set()).add(made)


def _verdict(expr: ast.AST, scope: _Scope, reach: Reach, known: frozenset[Id]) -> str:
    """Does compiling `expr` trace the frame?"""
    if isinstance(expr, ast.Call):
        made = scope.module.resolve(_dotted(expr.func))
        return MATCH if made in reach.classes else (OTHER if made in known else UNKNOWN)
    name = _dotted(expr)
    if not name:
        return UNKNOWN
    if name in scope.passed and name not in scope.bound:
        return MATCH
    if name in scope.bound:
        made = scope.bound[name]
        if made & reach.classes:
            return MATCH
        return OTHER if made <= known else UNKNOWN
    last = name.rsplit(".", 1)[-1]
    resolved = scope.module.resolve(name)
    if resolved in reach.functions:
        return MATCH
    if "." in name and last in reach.methods:
        base = scope.bound.get(name.rsplit(".", 1)[0], set())
        return OTHER if base and base <= known and not base & (reach.owners | reach.classes) else MATCH
    return OTHER if resolved[0] is not None else UNKNOWN


def _scopes(module: _Module) -> Iterator[tuple[ast.AST, list[ast.AST]]]:
    """Each scope to look in: (the node whose body it is, the nodes binding its names). A method's
    scope also sees its class's other methods (`self.net = Net()` in `__init__`)."""
    tree = module.tree
    yield tree, [s for s in tree.body if not _is_def(s)]
    methods: dict[str | None, list[ast.AST]] = {}
    found = list(module.functions())
    for node, cls in found:
        methods.setdefault(cls, []).append(node)
    for node, cls in found:
        yield node, ([node, *methods[cls]] if cls else [node])


def _is_def(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)


def _own_nodes(scope_node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a scope's body, not descending into nested functions or classes."""
    stack = list(getattr(scope_node, "body", ()))
    while stack:
        node = stack.pop()
        if _is_def(node):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _call_site(node: ast.AST, scope: _Scope, reach: Reach, known: frozenset[Id]) -> list[tuple[int, str]]:
    if not isinstance(node, ast.Call):
        return []
    module = scope.module
    if module.is_compile(node.func) and node.args and not isinstance(node.args[0], ast.Starred):
        return [(node.lineno, _verdict(node.args[0], scope, reach, known))]
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == COMPILE_WORD and _dotted(func.value) not in module.torch:
        verdict = _verdict(func.value, scope, reach, known)  # model.compile(): an nn.Module compiling itself
        return [(node.lineno, verdict)] if verdict == MATCH else []
    return []


def sites_in(
    module: _Module, frame: FrameRef, reach: Reach, known: frozenset[Id], passed: frozenset[Param] = frozenset()
) -> list[tuple[int, str]]:
    """(line, verdict) of each compile site of one module; `passed`: the parameters of functions
    that a caller gives something running the frame (`compiled(Model())` for `def compiled(m):
    return torch.compile(m)`)."""
    found: list[tuple[int, str]] = []
    for scope_node, binders in _scopes(module):
        mine = frozenset(p for path, fn, p in passed if path == module.path and fn == getattr(scope_node, "name", None))
        scope = _Scope(module, binders, mine)
        for node in _own_nodes(scope_node):
            found += _call_site(node, scope, reach, known)
    for node, cls in module.functions():
        start, end = _span(node)
        own = module.path == frame.file and node.name == frame.function
        own = own and (not frame.line or start <= frame.line <= end)
        reached = (module.path, node.name) in reach.functions if cls is None else node.name in reach.methods
        if own or reached or (cls is not None and (module.path, cls) in reach.classes):
            found += [(d.lineno, MATCH) for d in node.decorator_list if module.is_compile(d)]
    return sorted(set(found))


Param = tuple[str, str, str]  # (file, module-level function, parameter)


def _parameters(node: ast.AST) -> list[str]:
    args = getattr(node, "args", None)
    return [a.arg for a in (*args.posonlyargs, *args.args)] if isinstance(args, ast.arguments) else []


def passed_in(modules: Sequence[_Module], reach: Reach, known: frozenset[Id]) -> frozenset[Param]:
    """The parameters of module-level functions that a call somewhere in the repository fills with
    something whose call runs the frame (`compiled(Model())`, `compiled(model)` with `model =
    Model()`): one call deep, which is where a helper that compiles usually sits."""
    functions = {(m.path, node.name): _parameters(node) for m in modules for node, cls in m.functions() if cls is None}
    found: set[Param] = set()
    for module in modules:
        for scope_node, binders in _scopes(module):
            scope = _Scope(module, binders)
            for call in (n for n in _own_nodes(scope_node) if isinstance(n, ast.Call)):
                target = module.resolve(_dotted(call.func)) if _dotted(call.func) else UNRESOLVED
                params = functions.get(target) if target[0] is not None else None
                if not params:
                    continue
                given = list(zip(params, call.args, strict=False))
                given += [(k.arg, k.value) for k in call.keywords if k.arg in params]
                for param, value in given:
                    if not isinstance(value, ast.Starred) and _verdict(value, scope, reach, known) == MATCH:
                        found.add((target[0], target[1], param))  # type: ignore[arg-type]
    return frozenset(found)


# --- the search -----------------------------------------------------------------------------------------


def search(
    frame: FrameRef,
    texts: Mapping[str, str],
    stack_files: Sequence[str] = (),
    library_owner: str | None = None,
    whole_library: bool = False,
) -> Search:
    """Every compile site in `texts` (the repository's Python files, by path) that compiles
    `frame`, and the unresolved ones in `stack_files` (the files of the break's stack).
    `library_owner`: for a frame inside a library, the class whose method it is; `whole_library`:
    also any class of that library the stack's files import (a layer the repository never names)."""
    names = module_names(texts)
    modules = [_Module(p, t, names) for p, t in ((p, _parse(text)) for p, text in texts.items()) if t is not None]
    reach = reaching(frame, modules, library_owner, tuple(stack_files) if whole_library else ())
    known = frozenset((m.path, c.name) for m in modules for c in m.classes())
    passed = passed_in(modules, reach, known)
    verdicts = {m.path: sites_in(m, frame, reach, known, passed) for m in modules if COMPILE_WORD in texts[m.path]}
    matched = [CompileSite(p, line) for p, found in verdicts.items() for line, v in found if v == MATCH]
    unknown = [CompileSite(p, line) for p in stack_files for line, v in verdicts.get(p, []) if v == UNKNOWN]
    owner = next((o for f, o in reach.owners if f == frame.file), library_owner)
    return Search(tuple(matched), tuple(dict.fromkeys(unknown)), frame, owner)


def unresolved_site(searches: Sequence[Search], stack_lines: Iterable[CompileSite]) -> CompileSite | None:
    """With no site matched for any frame: the compile that no frame could rule out, if there is
    one — the compile on a line of the break's stack (`torch.compile(m)(x)` in the caller), else
    the only one in the stack's files."""
    if not searches:
        return None
    common = set(searches[0].unresolved).intersection(*(s.unresolved for s in searches[1:]))
    on_stack = [s for s in stack_lines if s in common]
    if on_stack:
        return on_stack[0]
    return next(iter(common)) if len(common) == 1 else None
