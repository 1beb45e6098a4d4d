"""Find where a repository compiles, read with LibCST (nothing is imported or run), and what would
drive those sites: scripts, zero-argument functions, the tests that reach them, nn.Module classes.

Sites: `torch.compile(...)`, `x.compile(...)` (nn.Module.compile) in a file that imports torch,
and `@torch.compile` / `@torch.compile(...)` decorators, also through `import torch as t` and
`from torch import compile`.

Per file the facts are what `gbbot init` needs and no more: the sites (and which are at module
level), the module-level functions and the methods of module-level classes with the names each
uses, what each imported name is bound to, the names assigned a compiled object, the classes with
their constructor's and forward's parameters, and, for scripts, their knobs and the data they read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

MAX_FILES = 5000  # Python files read; a monorepo past this is told to pass --root
MAX_FILE_BYTES = 300_000  # larger .py files are generated code or tables, not model code to drive
SKIPPED_DIRS = frozenset({"site-packages", "node_modules", "__pycache__", "build", "dist", "venv", "env"})
# File names that end like data or weights: a script naming one reads something the repository may lack
DATA_SUFFIXES = (".bin", ".npy", ".npz", ".pt", ".pth", ".ckpt", ".safetensors", ".pkl", ".h5", ".parquet",
                 ".arrow", ".csv", ".jsonl", ".tfrecord", ".tar")  # fmt: skip
LOADERS = ("torch.load", "np.load", "np.memmap", "numpy.load", "numpy.memmap", "load_dataset", "from_pretrained",
           "hf_hub_download", "load_state_dict_from_url", "snapshot_download")  # fmt: skip


@dataclass(frozen=True)
class Param:
    name: str
    required: bool  # no default
    default: Any = None  # a literal default (int, float, str, bool, None); `OTHER` when not a literal
    keyword_only: bool = False


OTHER = "<expression>"  # a default that is not a literal


@dataclass(frozen=True)
class Function:
    """A module-level function, or a method of a module-level class (name `Class.method`)."""

    name: str
    line: int
    decorated: bool  # @torch.compile
    compiles: bool  # a compile site in its body
    zero_args: bool  # callable with no arguments
    uses: frozenset[str] = frozenset()  # names and dotted names it reads
    params: tuple[Param, ...] = ()
    factory: bool = False  # every compile site in its body is in a `return`: it hands a compiled object out
    fixture: bool = False  # @pytest.fixture


@dataclass(frozen=True)
class ClassFacts:
    name: str
    line: int
    bases: tuple[str, ...]  # as written, dotted
    compiles: bool  # a compile site in its body


@dataclass(frozen=True)
class Knob:
    """A setting a short run may need: an argparse option or a module-level assignment."""

    name: str  # `--steps` for an option, `max_iters` for an assignment
    line: int
    value: Any = None  # the assignment's literal, or None


@dataclass(frozen=True)
class Read:
    """Something the file reads that may not be in the repository: a data file or a checkpoint."""

    what: str  # a file name, or a loader's name (torch.load)
    line: int
    loader: bool = False  # `what` is a loader called, not a file named


@dataclass(frozen=True)
class FileFacts:
    path: str  # relative to the root, with /
    module: str  # its import name ("src." dropped)
    sites: tuple[int, ...]  # lines of compile sites
    main_guard: bool  # `if __name__ == "__main__":` at module level
    functions: tuple[Function, ...]
    imports: tuple[str, ...]  # module names it imports, and `from pkg import mod` as pkg.mod
    top_sites: tuple[int, ...] = ()  # sites outside any function or class
    top_work: bool = False  # module-level loops or calls: it does something when run
    bindings: tuple[tuple[str, str], ...] = ()  # imported name → what it names (pkg.mod or pkg.mod.attr)
    compiled: tuple[str, ...] = ()  # module-level names assigned torch.compile(...)
    classes: tuple[ClassFacts, ...] = ()
    knobs: tuple[Knob, ...] = ()
    reads: tuple[Read, ...] = ()
    configurator: bool = False  # `exec(open("configurator.py").read())`: --key=value flags (nanoGPT)

    @property
    def is_test(self) -> bool:
        name = self.path.rsplit("/", 1)[-1]
        return name.startswith("test_") or name.endswith("_test.py")

    @property
    def is_conftest(self) -> bool:
        return self.path.rsplit("/", 1)[-1] == "conftest.py"


@dataclass(frozen=True)
class Scan:
    files: tuple[FileFacts, ...]
    read: int  # Python files read
    truncated: bool  # MAX_FILES reached
    parsed: int = 0  # of them, parsed (the others cannot hold a candidate)
    names: frozenset[str] = field(default_factory=frozenset)  # every file name in the tree, for data reads


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


def _literal(node: cst.BaseExpression | None) -> Any:
    if isinstance(node, cst.Integer | cst.Float):
        return node.evaluated_value
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _literal(node.expression)
        return -inner if isinstance(inner, int | float) and not isinstance(inner, bool) else OTHER
    return OTHER


def _params(params: cst.Parameters) -> tuple[Param, ...]:
    positional = [*params.posonly_params, *params.params]
    found = [Param(p.name.value, p.default is None, _literal(p.default) if p.default else None) for p in positional]
    found += [Param(p.name.value, p.default is None, _literal(p.default) if p.default else None, True)
              for p in params.kwonly_params]  # fmt: skip
    return tuple(found)


@dataclass
class _Unit:
    """A function being visited: a module-level one or a method of a module-level class."""

    name: str
    line: int
    decorated: bool
    fixture: bool
    params: tuple[Param, ...]
    sites: list[int] = field(default_factory=list)
    returned: list[int] = field(default_factory=list)  # sites inside a return statement
    uses: set[str] = field(default_factory=set)


class _Collector(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, package: list[str]) -> None:
        self.package = package  # the file's package, for relative imports
        self.torch_names: set[str] = set()  # what `torch` is called here
        self.compile_names: set[str] = set()  # names bound to torch.compile
        self.other_modules: set[str] = set()  # other imported names: re.compile is not a site
        self.imports: list[str] = []
        self.bindings: dict[str, str] = {}
        self.sites: list[int] = []
        self.top_sites: list[int] = []
        self.top_work = False
        self.main_guard = False
        self.compiled: list[str] = []
        self.functions: list[Function] = []
        self.classes: list[ClassFacts] = []
        self.knobs: list[Knob] = []
        self.reads: list[Read] = []
        self.configurator = False
        self._depth = 0  # function/class nesting
        self._class: tuple[str, int, tuple[str, ...], list[int]] | None = None  # the module-level class visited
        self._units: list[_Unit | None] = []  # per function level: the unit it belongs to
        self._returns = 0  # return statements being visited

    def _line(self, node: cst.CSTNode) -> int:
        return self.get_metadata(PositionProvider, node).start.line

    @property
    def _unit(self) -> _Unit | None:
        return self._units[-1] if self._units else None

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = _module_name(alias.name)
            bound = alias.asname.name.value if alias.asname else name.split(".")[0]
            self.imports.append(name)
            self.bindings[bound] = name if alias.asname else bound
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
            self.bindings[bound] = f"{module}.{name}" if module else name
            if module == "torch" and name == "compile":
                self.compile_names.add(bound)

    def _is_torch_compile(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Call):
            node = node.func
        dotted = _dotted(node)
        return dotted in self.compile_names or any(dotted == f"{t}.compile" for t in self.torch_names)

    def _site(self, line: int) -> None:
        self.sites.append(line)
        if self._class is not None:
            self._class[3].append(line)
        unit = self._unit
        if unit is not None:
            unit.sites.append(line)
            if self._returns:
                unit.returned.append(line)
        elif self._depth == 0:
            self.top_sites.append(line)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        method = isinstance(func, cst.Attribute) and func.attr.value == "compile"
        receiver = _dotted(func.value) if method else None
        if self._is_torch_compile(func) or (method and receiver not in self.other_modules):
            self._site(self._line(node))
        dotted = _dotted(func) or ""
        if dotted.endswith("add_argument") and node.args and isinstance(node.args[0].value, cst.SimpleString):
            option = node.args[0].value.evaluated_value
            if isinstance(option, str) and option.startswith("--"):
                self.knobs.append(Knob(option, self._line(node)))
        if any(dotted == loader or dotted.endswith("." + loader) for loader in LOADERS):
            self.reads.append(Read(dotted, self._line(node), True))

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        try:
            text = node.evaluated_value
        except Exception:  # noqa: BLE001 - a string LibCST cannot evaluate is no file name
            return
        if not isinstance(text, str) or len(text) > 200:
            return
        self.configurator |= text.endswith("configurator.py")
        if text.lower().endswith(DATA_SUFFIXES) and " " not in text:
            self.reads.append(Read(text, self._line(node)))

    def visit_Name(self, node: cst.Name) -> None:
        if self._unit is not None:
            self._unit.uses.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        dotted = _dotted(node)
        if dotted and self._unit is not None:
            self._unit.uses.add(dotted)

    def visit_Return(self, node: cst.Return) -> None:
        self._returns += 1

    def leave_Return(self, node: cst.Return) -> None:
        self._returns -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._depth:
            return
        targets = [t.target.value for t in node.targets if isinstance(t.target, cst.Name)]
        if isinstance(node.value, cst.Call) and self._is_torch_compile(node.value.func):
            self.compiled += targets
        value = _literal(node.value)
        if isinstance(value, int | float | bool | str) and value is not OTHER:
            self.knobs += [Knob(name, self._line(node), value) for name in targets]

    def visit_Expr(self, node: cst.Expr) -> None:
        self.top_work |= self._depth == 0 and isinstance(node.value, cst.Call)

    def _loop(self, node: cst.CSTNode) -> None:
        self.top_work |= self._depth == 0

    visit_For = visit_While = visit_With = _loop

    def visit_If(self, node: cst.If) -> None:
        if self._depth == 0 and isinstance(node.test, cst.Comparison):
            parts = [node.test.left, *(c.comparator for c in node.test.comparisons)]
            names = {p.value for p in parts if isinstance(p, cst.Name)}
            strings = {p.evaluated_value for p in parts if isinstance(p, cst.SimpleString)}
            self.main_guard |= names == {"__name__"} and strings == {"__main__"}

    def _decorator_names(self, node: cst.FunctionDef) -> list[str]:
        found = []
        for d in node.decorators:
            target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            found.append(_dotted(target) or "")
        return found

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        own = [self._line(d) for d in node.decorators if self._is_torch_compile(d.decorator)]
        if self._depth == 0 or (self._depth == 1 and self._class is not None and not self._units):
            prefix = f"{self._class[0]}." if self._class is not None else ""
            fixture = any(name.split(".")[-1] == "fixture" for name in self._decorator_names(node))
            self._units.append(_Unit(prefix + node.name.value, self._line(node), bool(own), fixture, _params(node.params)))
        else:
            self._units.append(self._unit)
        for line in own:
            self._site(line)
        self._depth += 1

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._depth -= 1
        unit = self._units.pop()
        if unit is None or (self._units and self._units[-1] is unit):
            return
        own = {self._line(d) for d in node.decorators if self._is_torch_compile(d.decorator)}
        body = [s for s in unit.sites if s not in own]  # in its body, not only its own decorator
        params = unit.params[1:] if self._class is not None else unit.params  # self
        self.functions.append(
            Function(
                unit.name,
                unit.line,
                unit.decorated,
                bool(body),
                all(not p.required for p in params),
                frozenset(unit.uses),
                params,
                bool(body) and set(body) <= set(unit.returned),
                unit.fixture,
            )
        )

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self._depth == 0:
            bases = tuple(filter(None, (_dotted(b.value) for b in node.bases)))
            self._class = (node.name.value, self._line(node), bases, [])
        self._depth += 1

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._depth -= 1
        if self._depth == 0 and self._class is not None:
            name, line, bases, sites = self._class
            self.classes.append(ClassFacts(name, line, bases, bool(sites)))
            self._class = None


def module_of(path: str) -> str:
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if parts[:1] == ["src"] and len(parts) > 1:
        parts = parts[1:]
    return ".".join(parts)


def facts_of(path: str, source: str) -> FileFacts | None:
    """Pure: one file's compile sites and what could drive them; None when it does not parse."""
    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return None
    module = module_of(path)
    package = module.split(".") if path.endswith("__init__.py") else module.split(".")[:-1]
    collector = _Collector(package)
    wrapper.visit(collector)
    functions = tuple(collector.functions)
    if not collector.torch_names and not collector.compile_names:
        collector.sites = collector.top_sites = []  # `.compile(` without torch is re, keras, …
        functions = tuple(
            f if not f.compiles else Function(f.name, f.line, f.decorated, False, f.zero_args, f.uses, f.params)
            for f in functions
        )
    return FileFacts(
        path,
        module,
        tuple(sorted(set(collector.sites))),
        collector.main_guard,
        functions,
        tuple(dict.fromkeys(collector.imports)),
        tuple(sorted(set(collector.top_sites))),
        collector.top_work,
        tuple(collector.bindings.items()),
        tuple(collector.compiled),
        tuple(collector.classes),
        tuple(collector.knobs),
        tuple(collector.reads),
        collector.configurator,
    )


def worth_parsing(path: str, head: bytes) -> bool:
    """Pure: whether a file can hold a candidate or lead to one, from its name and bytes alone.
    Parsing is what costs: a file that never says `compile` or `Module` is neither a site nor a
    model, and is read only when it is a test (tests reach compiled code through imports), a
    conftest (fixtures) or a package's __init__ (re-exports)."""
    name = path.rsplit("/", 1)[-1]
    special = name.startswith("test_") or name.endswith("_test.py") or name in ("conftest.py", "__init__.py")
    return special or b"compile" in head or b"Module" in head


# --- the tree: I/O --------------------------------------------------------------------------------


def _skipped(directory: Path) -> bool:
    name = directory.name
    return (
        name.startswith(".")  # .git, .venv, .tox, .mypy_cache, …
        or name in SKIPPED_DIRS
        or name.endswith(".egg-info")
        or (directory / "pyvenv.cfg").exists()  # a virtual environment under any name
    )


def walk(root: Path, names: set[str] | None = None) -> Iterator[Path]:
    """The repository's .py files in a stable order, skipping environments and build output;
    every file name seen goes into `names` (a script's data may be there under any suffix)."""
    for current, dirs, files in os.walk(root):
        here = Path(current)
        dirs[:] = sorted(d for d in dirs if not _skipped(here / d))
        if names is not None:
            names.update(files)
        for name in sorted(files):
            path = here / name
            if name.endswith(".py") and path.is_file() and not path.is_symlink():
                yield path


def python_files(root: Path) -> Iterator[Path]:
    return walk(root)


Progress = Callable[[int, int], None]  # (files read, files parsed)


def scan(root: Path, max_files: int = MAX_FILES, progress: Progress | None = None) -> Scan:
    found: list[FileFacts] = []
    read = parsed = 0
    names: set[str] = set()
    for path in walk(root, names):
        if read == max_files:
            return Scan(tuple(found), read, True, parsed, frozenset(names))
        read += 1
        if progress is not None:
            progress(read, parsed)
        relative = path.relative_to(root).as_posix()
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            data = path.read_bytes()
            if not worth_parsing(relative, data):
                continue
            source = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        parsed += 1
        facts = facts_of(relative, source)
        if facts is not None:
            found.append(facts)
    return Scan(tuple(found), read, False, parsed, frozenset(names))
