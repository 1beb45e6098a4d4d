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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

COMPILE_WORD = "compile"  # files without it are not parsed
CALL_METHODS = ("forward", "__call__")  # a module instance's call runs these


@dataclass(frozen=True)
class CompiledFrame:
    """The code object Dynamo compiled: its file (repository-relative, or a library path), the
    line its code starts on (`co_firstlineno`: the first decorator's line when decorated) and its
    name (`co_name`). `first_line` 0: not known (any function of that name in the file)."""

    file: str
    first_line: int
    name: str

    def describe(self, owner: str | None = None) -> str:
        name = f"{owner}.{self.name}" if owner else self.name
        return f"`{name}` ({self.file}:{self.first_line})" if self.first_line else f"`{name}` ({self.file})"


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
    frame: CompiledFrame
    owner: str | None = None


# --- the frame's function and the classes whose call runs it -----------------------------------------


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _span(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int]:
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return start, node.end_lineno or node.lineno


def owner_of(tree: ast.Module, frame: CompiledFrame) -> tuple[str | None, bool]:
    """The class the frame's function is defined in (None: a plain function), and whether the
    function was found at all."""
    found: list[tuple[int, str | None]] = []

    def walk(node: ast.AST, cls: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                walk(child, child.name)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                start, end = _span(child)
                if child.name == frame.name and (not frame.first_line or start <= frame.first_line <= end):
                    found.append((end - start, cls))
                walk(child, None)
            else:
                walk(child, cls)

    walk(tree, None)
    if not found:
        return None, False
    return min(found, key=lambda f: f[0])[1], True


def _base_names(node: ast.ClassDef) -> set[str]:
    return {part for base in node.bases for part in _dotted(base).split(".") if part}


def owner_classes(owner: str | None, frame: CompiledFrame, trees: Iterable[ast.Module]) -> frozenset[str]:
    """The frame's class and the classes that inherit the frame's method from it (by name, across
    the repository)."""
    if owner is None:
        return frozenset()
    defined = [n for t in trees for n in ast.walk(t) if isinstance(n, ast.ClassDef)]
    classes = [(n.name, _base_names(n), _defines(n, frame.name)) for n in defined]
    found = {owner}
    grew = True
    while grew:
        more = {name for name, bases, overrides in classes if bases & found and not overrides and name not in found}
        found |= more
        grew = bool(more)
    return frozenset(found)


def _defines(cls: ast.ClassDef, name: str) -> bool:
    return any(isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == name for s in cls.body)


# --- compile sites of one module -------------------------------------------------------------------------


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else ""
    return ""


class _Imports:
    """How the module spells `torch` and `torch.compile`."""

    def __init__(self, tree: ast.Module) -> None:
        self.torch: set[str] = set()
        self.compile: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "torch" or (alias.name.startswith("torch.") and alias.asname is None):
                        self.torch.add(alias.asname or "torch")
            elif isinstance(node, ast.ImportFrom) and node.module == "torch":
                self.compile.update(a.asname or a.name for a in node.names if a.name == "compile")

    def is_compile(self, func: ast.AST) -> bool:
        if isinstance(func, ast.Call):
            func = func.func
        if isinstance(func, ast.Name):
            return func.id in self.compile
        return isinstance(func, ast.Attribute) and func.attr == "compile" and _dotted(func.value) in self.torch


MATCH, OTHER, UNKNOWN = "match", "other", "unknown"


@dataclass(frozen=True)
class _Wanted:
    function: str
    owners: frozenset[str]  # the frame's class and the classes that inherit it (empty: a function)
    known_classes: frozenset[str]  # every class the repository defines

    @property
    def classes(self) -> frozenset[str]:
        """Classes whose instances' call runs the frame."""
        return self.owners if self.function in CALL_METHODS else frozenset()


class _Scope:
    """Names bound in one function (or the module, or a class's `self.`), to the class names of
    the calls that made them."""

    def __init__(self, nodes: Sequence[ast.AST], functions: set[str]) -> None:
        self.bound: dict[str, set[str]] = {}
        self.functions = functions
        for node in nodes:
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                    self._bind(_dotted(stmt.targets[0]), stmt.value)
                elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                    self._bind(_dotted(stmt.target), stmt.value)

    def _bind(self, name: str, value: ast.AST) -> None:
        if not name:
            return
        if isinstance(value, ast.Call):
            callee = _dotted(value.func)
            if callee.endswith(".compile") or callee == "compile":  # m = torch.compile(m): m stays m
                return
            self.bound.setdefault(name, set()).update(callee.split("."))
        else:
            self.bound.setdefault(name, set()).add("")


def _verdict(expr: ast.AST, scope: _Scope, wanted: _Wanted) -> str:
    """Does compiling `expr` trace the wanted frame?"""
    if isinstance(expr, ast.Call):
        parts = set(_dotted(expr.func).split("."))
        return MATCH if parts & wanted.classes else (OTHER if parts & wanted.known_classes else UNKNOWN)
    name = _dotted(expr)
    if not name:
        return UNKNOWN
    last = name.rsplit(".", 1)[-1]
    if name in scope.bound:
        parts = scope.bound[name]
        if parts & wanted.classes:
            return MATCH
        return OTHER if parts & wanted.known_classes or name in scope.functions else UNKNOWN
    if last == wanted.function and (wanted.function not in CALL_METHODS or "." in name):
        base = name.rsplit(".", 1)[0] if "." in name else ""
        owner = scope.bound.get(base, set())
        return OTHER if owner & wanted.known_classes and not owner & wanted.owners else MATCH
    return OTHER if name in scope.functions else UNKNOWN


def _scopes(tree: ast.Module) -> list[tuple[ast.AST, list[ast.AST]]]:
    """Each scope to look in: (the node whose body it is, the nodes binding its names). A method's
    scope also sees its class's `self.` attributes."""
    found: list[tuple[ast.AST, list[ast.AST]]] = [(tree, [s for s in tree.body if not _is_def(s)])]
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            methods = [s for s in node.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
            found += [(m, [m, *methods]) for m in methods]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not any(
            node in getattr(c, "body", ()) for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
        ):
            found.append((node, [node]))
    return found


def _is_def(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)


def _own_nodes(scope_node: ast.AST) -> Iterable[ast.AST]:
    """The nodes of a scope's body, not descending into nested functions or classes."""
    stack = list(getattr(scope_node, "body", ()))
    while stack:
        node = stack.pop()
        if _is_def(node) and node is not scope_node:
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def sites_in(text: str, frame: CompiledFrame, wanted: _Wanted, here: bool) -> list[tuple[int, str]]:
    """(line, verdict) of each compile site of one module. `here`: the module is the frame's file."""
    tree = _parse(text)
    if tree is None:
        return []
    imports = _Imports(tree)
    functions = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    found: list[tuple[int, str]] = []
    for scope_node, binders in _scopes(tree):
        scope = _Scope(binders, functions)
        for node in _own_nodes(scope_node):
            found += _call_site(node, imports, scope, wanted)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == frame.name:
            start, end = _span(node)
            if here and (not frame.first_line or start <= frame.first_line <= end):
                found += [(d.lineno, MATCH) for d in node.decorator_list if imports.is_compile(d)]
    return sorted(set(found))


def _call_site(node: ast.AST, imports: _Imports, scope: _Scope, wanted: _Wanted) -> list[tuple[int, str]]:
    if not isinstance(node, ast.Call):
        return []
    if imports.is_compile(node.func) and node.args and not isinstance(node.args[0], ast.Starred):
        return [(node.lineno, _verdict(node.args[0], scope, wanted))]
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == COMPILE_WORD and _dotted(func.value) not in imports.torch:
        verdict = _verdict(func.value, scope, wanted)  # model.compile(): an nn.Module compiling itself
        return [(node.lineno, verdict)] if verdict == MATCH else []
    return []


# --- the search -----------------------------------------------------------------------------------------


def search(frame: CompiledFrame, texts: Mapping[str, str], stack_files: Sequence[str] = ()) -> Search:
    """Every compile site in `texts` (the repository's Python files, by path) that compiles
    `frame`, and the unresolved ones in `stack_files` (the files of the break's stack)."""
    frame_tree = _parse(texts.get(frame.file, "")) if frame.file in texts else None
    owner, _ = owner_of(frame_tree, frame) if frame_tree is not None else (None, False)
    relevant = {p: t for p, t in texts.items() if COMPILE_WORD in t}
    trees = [t for t in (_parse(text) for text in texts.values()) if t is not None]
    classes = owner_classes(owner, frame, trees)
    known = frozenset(n.name for t in trees for n in ast.walk(t) if isinstance(n, ast.ClassDef))
    wanted = _Wanted(frame.name, classes, known)
    verdicts = {p: sites_in(t, frame, wanted, p == frame.file) for p, t in relevant.items()}
    matched = [CompileSite(p, line) for p, found in verdicts.items() for line, v in found if v == MATCH]
    unknown = [CompileSite(p, line) for p in stack_files for line, v in verdicts.get(p, []) if v == UNKNOWN]
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
