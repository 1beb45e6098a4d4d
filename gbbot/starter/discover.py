"""Find where a repository compiles, read with LibCST (nothing is imported or run), and what would
drive those sites: scripts, zero-argument functions and the tests that import them.

Sites: `torch.compile(...)`, `x.compile(...)` (nn.Module.compile) in a file that imports torch,
and `@torch.compile` / `@torch.compile(...)` decorators, also through `import torch as t` and
`from torch import compile`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from gbbot.core import source_limits

MAX_FILES = 5000  # Python files read; a monorepo past this is told to pass --root
MAX_FILE_BYTES = 1_000_000  # larger .py files are generated code, not model code
SKIPPED_DIRS = frozenset({"site-packages", "node_modules", "__pycache__", "build", "dist", "venv", "env"})


@dataclass(frozen=True)
class Function:
    """A module-level function."""

    name: str
    line: int
    decorated: bool  # @torch.compile
    compiles: bool  # a compile site in its body
    zero_args: bool  # callable with no arguments


@dataclass(frozen=True)
class FileFacts:
    path: str  # relative to the root, with /
    module: str  # its import name ("src." dropped)
    sites: tuple[int, ...]  # lines of compile sites
    main_guard: bool  # `if __name__ == "__main__":` at module level
    functions: tuple[Function, ...]
    imports: tuple[str, ...]  # module names it imports, and `from pkg import mod` as pkg.mod

    @property
    def is_test(self) -> bool:
        name = self.path.rsplit("/", 1)[-1]
        return name.startswith("test_") or name.endswith("_test.py")


@dataclass(frozen=True)
class Scan:
    files: tuple[FileFacts, ...]
    read: int  # Python files read
    truncated: bool  # MAX_FILES reached


# --- one file: pure -------------------------------------------------------------------------------


def _dotted(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def _module_name(node: cst.BaseExpression | None) -> str:
    return _dotted(node) or "" if node is not None else ""


class _Collector(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, package: list[str]) -> None:
        self.package = package  # the file's package, for relative imports
        self.torch_names: set[str] = set()  # what `torch` is called here
        self.compile_names: set[str] = set()  # names bound to torch.compile
        self.other_modules: set[str] = set()  # other imported names: re.compile is not a site
        self.imports: list[str] = []
        self.sites: list[int] = []
        self.main_guard = False
        self.functions: list[Function] = []
        self._depth = 0  # function/class nesting: only module-level functions are candidates
        self._current: list[int] = []  # sites inside the module-level function being visited
        self._own: set[int] = set()  # its own @torch.compile decorator lines

    def _line(self, node: cst.CSTNode) -> int:
        return self.get_metadata(PositionProvider, node).start.line

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = _module_name(alias.name)
            bound = alias.asname.name.value if alias.asname else name.split(".")[0]
            self.imports.append(name)
            (self.torch_names if name == "torch" else self.other_modules).add(bound)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        level = len(node.relative)
        base = self.package[: len(self.package) - level + 1] if level else []
        module = ".".join([*base, *filter(None, [_module_name(node.module)])])
        if module:
            self.imports.append(module)
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = _module_name(alias.name)
            bound = alias.asname.name.value if alias.asname else name
            self.imports.append(f"{module}.{name}" if module else name)
            if module == "torch" and name == "compile":
                self.compile_names.add(bound)

    def _is_torch_compile(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Call):
            node = node.func
        dotted = _dotted(node)
        return dotted in self.compile_names or any(dotted == f"{t}.compile" for t in self.torch_names)

    def _site(self, line: int) -> None:
        self.sites.append(line)
        self._current.append(line)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        method = isinstance(func, cst.Attribute) and func.attr.value == "compile"
        receiver = _dotted(func.value) if method else None
        if self._is_torch_compile(func) or (method and receiver not in self.other_modules):
            self._site(self._line(node))

    def visit_If(self, node: cst.If) -> None:
        if self._depth == 0 and isinstance(node.test, cst.Comparison):
            parts = [node.test.left, *(c.comparator for c in node.test.comparisons)]
            names = {p.value for p in parts if isinstance(p, cst.Name)}
            strings = {p.evaluated_value for p in parts if isinstance(p, cst.SimpleString)}
            self.main_guard |= names == {"__name__"} and strings == {"__main__"}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        own = [self._line(d) for d in node.decorators if self._is_torch_compile(d.decorator)]
        if self._depth == 0:
            self._current, self._own = [], set(own)
        for line in own:
            self._site(line)
        self._depth += 1

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._depth -= 1
        if self._depth:
            return
        params = node.params
        required = [p for p in (*params.posonly_params, *params.params, *params.kwonly_params) if p.default is None]
        compiles = bool(set(self._current) - self._own)  # in its body, not only its own decorator
        self.functions.append(Function(node.name.value, self._line(node), bool(self._own), compiles, not required))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self._depth == 0:
            self._current, self._own = [], set()
        self._depth += 1

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._depth -= 1


def module_of(path: str) -> str:
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if parts[:1] == ["src"] and len(parts) > 1:
        parts = parts[1:]
    return ".".join(parts)


def facts_of(path: str, source: str) -> FileFacts | None:
    """Pure: one file's compile sites and what could drive them; None when it does not parse."""
    if source_limits.refusal(source):  # deeper or larger than LibCST survives, or not Python
        return None
    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError):
        return None
    module = module_of(path)
    package = module.split(".") if path.endswith("__init__.py") else module.split(".")[:-1]
    collector = _Collector(package)
    wrapper.visit(collector)
    if not collector.torch_names and not collector.compile_names:
        collector.sites = []  # `.compile(` without torch is re, keras, …
        collector.functions = [f for f in collector.functions if not f.compiles]
    return FileFacts(
        path,
        module,
        tuple(sorted(set(collector.sites))),
        collector.main_guard,
        tuple(collector.functions),
        tuple(dict.fromkeys(collector.imports)),
    )


# --- the tree: I/O --------------------------------------------------------------------------------


def _skipped(directory: Path) -> bool:
    name = directory.name
    return (
        name.startswith(".")  # .git, .venv, .tox, .mypy_cache, …
        or name in SKIPPED_DIRS
        or name.endswith(".egg-info")
        or (directory / "pyvenv.cfg").exists()  # a virtual environment under any name
    )


def python_files(root: Path) -> Iterator[Path]:
    """The repository's .py files in a stable order, skipping environments and build output."""
    for current, dirs, files in os.walk(root):
        here = Path(current)
        dirs[:] = sorted(d for d in dirs if not _skipped(here / d))
        for name in sorted(files):
            path = here / name
            if name.endswith(".py") and path.is_file() and not path.is_symlink():
                yield path


def scan(root: Path, max_files: int = MAX_FILES) -> Scan:
    found: list[FileFacts] = []
    read = 0
    for path in python_files(root):
        if read == max_files:
            return Scan(tuple(found), read, True)
        read += 1
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        facts = facts_of(path.relative_to(root).as_posix(), source)
        if facts is not None and (facts.sites or facts.is_test):
            found.append(facts)
    return Scan(tuple(found), read, False)
