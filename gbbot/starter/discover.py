"""Find where a repository compiles, read with Python's own parser (nothing is imported or run), and what would
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

import ast
import contextlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

MAX_FILES = 5000  # Python files read; a monorepo past this is told to pass --root
MAX_FILE_BYTES = 300_000  # larger .py files are generated code or tables, not model code to drive
SKIPPED_DIRS = frozenset({"site-packages", "node_modules", "__pycache__", "build", "dist", "venv", "env"})
# File names that end like data or weights: a script naming one reads something the repository may lack
DATA_SUFFIXES = (".bin", ".npy", ".npz", ".pt", ".pth", ".ckpt", ".safetensors", ".pkl", ".h5", ".parquet",
                 ".arrow", ".csv", ".jsonl", ".tfrecord", ".tar")  # fmt: skip
LOADERS = ("torch.load", "np.load", "np.memmap", "numpy.load", "numpy.memmap", "load_dataset", "from_pretrained",
           "hf_hub_download", "load_state_dict_from_url", "snapshot_download", "urlretrieve", "urlopen",
           "requests.get", "get_encoding", "download_url")  # fmt: skip
LOADER = re.compile(rf"(^|\.)({'|'.join(map(re.escape, LOADERS))})$")


@dataclass(frozen=True)
class Param:
    name: str
    required: bool  # no default
    default: Any = None  # a literal default (int, float, str, bool, None); `OTHER` when not a literal


OTHER = "<expression>"  # a default that is not a literal
POSITIONAL = "<positional>"  # a Knob that is an argparse positional argument (`data`)


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
    returns: frozenset[str] = frozenset()  # what its return statements call, dotted (nn.Sequential, a class)
    literals: tuple[tuple[str, Any], ...] = ()  # the literal keywords of the calls in it (`DiT(depth=12, …)`)


@dataclass(frozen=True)
class ClassFacts:
    name: str
    line: int
    bases: tuple[str, ...]  # as written, dotted
    compiles: bool  # a compile site in its body
    fields: tuple[tuple[str, Any], ...] = ()  # `name: int = 512` in its body: a config's settings, literal ones


@dataclass(frozen=True)
class Knob:
    """A setting a short run may need: an argparse option or a module-level assignment."""

    name: str  # `--steps` for an option, `max_iters` for an assignment or a positional argument
    line: int
    value: Any = None  # the assignment's literal; an option's action or type (store_true, int), or const


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
    # `Net(dim=64, depth=2)` anywhere in it (a test, an example): a class called with literal keywords
    constructions: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()

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
    deferred: tuple[str, ...] = ()  # files that may define an nn.Module, not parsed yet (add_models)
    # (key, value) of the repository's YAML and JSON files (`configs/base.yaml`'s `n_mels: 80`), in
    # path order, files with "config" in their path first: sizes for constructors (add_models)
    settings: tuple[tuple[str, object], ...] = ()
    configs: tuple[str, ...] = ()  # the YAML and JSON files the walk saw, read by add_models
    # (module, function) registered with `@register_model` (timm's registry), found in every file's bytes
    registered: tuple[tuple[str, str], ...] = ()
    # what the README's Python examples build, as imported there, in order: the models its authors show first
    shown: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()


# --- one file: pure -------------------------------------------------------------------------------


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _literal(node: ast.expr | None) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str | bool | type(None)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _literal(node.operand)
        return -inner if isinstance(inner, int | float) and not isinstance(inner, bool) else OTHER
    return OTHER


def _params(args: ast.arguments) -> tuple[Param, ...]:
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    found = [
        Param(a.arg, d is None, _literal(d) if d is not None else None)
        for a, d in zip(positional, defaults, strict=True)
    ]
    found += [Param(a.arg, d is None, _literal(d) if d is not None else None)
              for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]  # fmt: skip
    return tuple(found)


def _is_main_guard(test: ast.expr) -> bool:
    if not isinstance(test, ast.Compare):
        return False
    parts = [test.left, *test.comparators]
    names = {p.id for p in parts if isinstance(p, ast.Name)}
    strings = {p.value for p in parts if isinstance(p, ast.Constant)}
    return names == {"__name__"} and strings == {"__main__"}


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
    returns: set[str] = field(default_factory=set)
    literals: list[tuple[str, Any]] = field(default_factory=list)


class _Collector(ast.NodeVisitor):
    """One pass over a module's syntax tree (stdlib `ast`: parsing is what `init` spends its time on)."""

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
        self.constructions: list[tuple[str, tuple[tuple[str, Any], ...]]] = []
        self._depth = 0  # function/class nesting
        self._class: tuple[str, int, tuple[str, ...], list[int]] | None = None  # the module-level class visited
        self._fields: list[tuple[str, Any]] = []  # its body's literal settings
        self._unit: _Unit | None = None
        self._returns = 0  # return statements being visited

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            bound = alias.asname or alias.name.split(".")[0]
            self.imports.append(alias.name)
            self.bindings[bound] = alias.name if alias.asname else bound
            (self.torch_names if alias.name == "torch" else self.other_modules).add(bound)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        level = node.level
        base = self.package[: len(self.package) - level + 1] if level else []
        module = ".".join([*base, *filter(None, [node.module or ""])])
        if module:
            self.imports.append(module)
        for alias in node.names:
            if alias.name == "*":
                continue
            bound = alias.asname or alias.name
            self.imports.append(f"{module}.{alias.name}" if module else alias.name)
            self.bindings[bound] = f"{module}.{alias.name}" if module else alias.name
            if module == "torch" and alias.name == "compile":
                self.compile_names.add(bound)

    def _is_torch_compile(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Call):
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

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        method = isinstance(func, ast.Attribute) and func.attr == "compile"
        receiver = _dotted(func.value) if isinstance(func, ast.Attribute) else None
        if self._is_torch_compile(func) or (method and receiver not in self.other_modules):
            self._site(node.lineno)
        dotted = _dotted(func) or ""
        names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if dotted.endswith("add_argument") and names:
            how = {k.arg: _dotted(k.value) or _literal(k.value) for k in node.keywords}
            # `--torchcompile` with a `const`: the flag alone turns it on
            value = "const" if "const" in how else how.get("action") or how.get("type")
            option = next((n for n in names if n.startswith("--")), None)
            self.knobs.append(Knob(option or names[0], node.lineno, value if option else POSITIONAL))
        called = dotted.rsplit(".", 1)[-1]
        literal = tuple((k.arg, v) for k in node.keywords if k.arg and (v := _literal(k.value)) is not OTHER)
        if called[:1].isupper() and node.keywords and all(k.arg for k in node.keywords):
            self.constructions.append((called, literal))
        if self._unit is not None:
            self._unit.literals += literal
        if LOADER.search(dotted):
            self.reads.append(Read(dotted, node.lineno, True))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        text = node.value
        if not isinstance(text, str) or len(text) > 200:
            return
        self.configurator |= text.endswith("configurator.py")
        if text.lower().endswith(DATA_SUFFIXES) and " " not in text:
            self.reads.append(Read(text, node.lineno))

    def visit_Name(self, node: ast.Name) -> None:
        if self._unit is not None:
            self._unit.uses.add(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = _dotted(node)
        if dotted and self._unit is not None:
            self._unit.uses.add(dotted)
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        if self._unit is not None and isinstance(node.value, ast.Call):
            self._unit.returns.add(_dotted(node.value.func) or "")
        self._returns += 1
        self.generic_visit(node)
        self._returns -= 1

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if self._depth == 1 and self._class is not None and self._unit is None and isinstance(node.target, ast.Name):
            value = _literal(node.value)
            if value is not OTHER and value is not None:
                self._fields.append((node.target.id, value))
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if self._depth == 1 and self._class is not None and self._unit is None:
            value = _literal(node.value)
            if value is not OTHER and value is not None:
                self._fields += [(t.id, value) for t in node.targets if isinstance(t, ast.Name)]
        if self._depth == 0:
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if isinstance(node.value, ast.Call) and self._is_torch_compile(node.value.func):
                self.compiled += targets
            value = _literal(node.value)
            if value is not OTHER and value is not None:
                self.knobs += [Knob(name, node.lineno, value) for name in targets]
        self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> None:
        self.top_work |= self._depth == 0 and isinstance(node.value, ast.Call)
        self.generic_visit(node)

    def _loop(self, node: ast.stmt) -> None:
        self.top_work |= self._depth == 0
        self.generic_visit(node)

    visit_For = visit_While = visit_With = visit_AsyncFor = visit_AsyncWith = _loop

    def visit_If(self, node: ast.If) -> None:
        self.main_guard |= self._depth == 0 and _is_main_guard(node.test)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        own = [d.lineno for d in node.decorator_list if self._is_torch_compile(d)]
        starts_unit = self._depth == 0 or (self._depth == 1 and self._class is not None and self._unit is None)
        outer = self._unit
        if starts_unit:
            names = [_dotted(d.func if isinstance(d, ast.Call) else d) or "" for d in node.decorator_list]
            fixture = any(name.split(".")[-1] == "fixture" for name in names)
            prefix = f"{self._class[0]}." if self._class is not None else ""
            self._unit = _Unit(prefix + node.name, node.lineno, bool(own), fixture, _params(node.args))
        for line in own:
            self._site(line)
        self._depth += 1
        for child in [*node.decorator_list, node.args, *node.body]:
            self.visit(child)
        self._depth -= 1
        if starts_unit:
            self._record(self._unit, set(own))
            self._unit = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def _record(self, unit: _Unit, own: set[int]) -> None:
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
                frozenset(unit.returns - {""}),
                tuple(unit.literals),
            )
        )

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        top = self._depth == 0
        if top:
            bases = tuple(filter(None, (_dotted(b) for b in node.bases)))
            self._class = (node.name, node.lineno, bases, [])
            self._fields = []
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1
        if top and self._class is not None:
            name, line, bases, sites = self._class
            self.classes.append(ClassFacts(name, line, bases, bool(sites), tuple(self._fields)))
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
    if len(source) > MAX_FILE_BYTES:  # generated code or a table; too deep a nest raises below
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, RecursionError, ValueError, MemoryError):
        return None
    module = module_of(path)
    package = module.split(".") if path.endswith("__init__.py") else module.split(".")[:-1]
    collector = _Collector(package)
    try:
        collector.visit(tree)
    except RecursionError:  # an expression nested thousands deep: generated code
        return None
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
        tuple(collector.constructions),
    )


# A registered model variant: `@register_model` (any decorators after it) on a module-level `def`
REGISTERED = re.compile(rb"^@(?:\w+\.)*register_model\b.*\n(?:@.*\n)*def\s+([A-Za-z]\w*)\s*\(", re.MULTILINE)


def worth_parsing(path: str, head: bytes, models: bool = False) -> bool:
    """Pure: whether a file can hold a candidate or lead to one, from its name and bytes alone.
    Parsing is what costs: a file that never says `compile` is no site, and is read only when it
    is a test (tests reach compiled code through imports), a conftest (fixtures) or a package's
    __init__ (re-exports). `models`: nn.Module classes are wanted too, the `*Config` classes
    whose settings size them, and a registry's `create_model`."""
    name = path.rsplit("/", 1)[-1]
    special = name.startswith("test_") or name.endswith("_test.py") or name in ("conftest.py", "__init__.py")
    wanted = (b"Module", b"Config", b"register_model")  # models, their configs, a registry's factory
    return special or b"compile" in head or (models and any(word in head for word in wanted))


# --- the tree: I/O --------------------------------------------------------------------------------


def _skipped(directory: Path) -> bool:
    name = directory.name
    return (
        name.startswith(".")  # .git, .venv, .tox, .mypy_cache, …
        or name in SKIPPED_DIRS
        or name.endswith(".egg-info")
        or (directory / "pyvenv.cfg").exists()  # a virtual environment under any name
    )


def walk(root: Path, names: set[str] | None = None, configs: list[Path] | None = None) -> Iterator[Path]:
    """The repository's .py files in a stable order, skipping environments and build output;
    every file name seen goes into `names` (a script's data may be there under any suffix), and
    every YAML or JSON file into `configs`."""
    for current, dirs, files in os.walk(root):
        here = Path(current)
        dirs[:] = sorted(d for d in dirs if not _skipped(here / d))
        if names is not None:
            names.update(files)
        for name in sorted(files):
            path = here / name
            if configs is not None and name.endswith(CONFIG_SUFFIXES):
                configs.append(path)
            if name.endswith(".py") and path.is_file() and not path.is_symlink():
                yield path


CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
MAX_CONFIG_FILES = 200
MAX_CONFIG_BYTES = 64_000  # a model's settings, not a dataset's index or a vocabulary
MAX_CONFIG_DEPTH = 4


def config_files(root: Path, seen: Iterable[str]) -> list[Path]:
    """Of the YAML and JSON files the scan's walk saw (`seen`, relative to `root`), the regular
    ones under MAX_CONFIG_BYTES, those with "config" in their path first, at most MAX_CONFIG_FILES."""
    found = []
    for relative in sorted(seen, key=lambda r: ("config" not in r.lower(), r)):
        path = root / relative
        with contextlib.suppress(OSError):
            if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_CONFIG_BYTES:
                found.append(path)
        if len(found) == MAX_CONFIG_FILES:
            break
    return found


def settings_of(relative: str, text: str) -> list[tuple[str, object]]:
    """Pure: the scalar settings of one YAML or JSON file, nested mappings flattened by key
    (`model: {encoder: {n_mels: 80}}` gives `n_mels`); none for a file that does not parse.
    Only numbers, booleans and short strings: what a constructor's size or switch takes."""
    try:
        data = json.loads(text) if relative.endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError, RecursionError):
        return []
    found: list[tuple[str, object]] = []

    def visit(node: object, depth: int) -> None:
        if not isinstance(node, dict) or depth > MAX_CONFIG_DEPTH:
            return
        for key, value in node.items():
            if not isinstance(key, str) or not key.isidentifier():
                continue
            if isinstance(value, dict):
                visit(value, depth + 1)
            elif isinstance(value, bool | int | float) or (isinstance(value, str) and len(value) <= 40):
                found.append((key, value))

    visit(data, 0)
    return found


README_CODE = re.compile(r"^```(?:python|py)\n(.*?)^```", re.MULTILINE | re.DOTALL)
MAX_README_BYTES = 200_000


def readme_constructions(root: Path) -> tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]:
    """The classes the root README's Python blocks build with keywords, in order, named as they
    import them (`vit_pytorch.ViT`), block by block (one that does not parse is skipped)."""
    try:
        text = (root / "README.md").read_text(encoding="utf-8", errors="replace")[:MAX_README_BYTES]
    except OSError:
        return ()
    blocks = [facts for block in README_CODE.findall(text) if (facts := facts_of("README.md", block))]
    return tuple((dict(f.bindings).get(name, name), keywords) for f in blocks for name, keywords in f.constructions)


Progress = Callable[[int, int], None]  # (files read, files parsed)


def _read(root: Path, path: Path) -> tuple[str, bytes] | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.relative_to(root).as_posix(), path.read_bytes()
    except OSError:
        return None


def _parse(relative: str, data: bytes) -> FileFacts | None:
    try:
        return facts_of(relative, data.decode("utf-8"))
    except UnicodeDecodeError:
        return None


def scan(root: Path, max_files: int = MAX_FILES, progress: Progress | None = None) -> Scan:
    """The files that can compile or lead to a compile, parsed; those that may only define an
    nn.Module are listed in `deferred`, for `add_models` when nothing compiles."""
    found: list[FileFacts] = []
    deferred: list[str] = []
    read = parsed = 0
    registered: list[tuple[str, str]] = []
    names: set[str] = set()
    configs: list[Path] = []
    truncated = False
    for path in walk(root, names, configs):
        if read == max_files:
            truncated = True
            break
        read += 1
        if progress is not None:
            progress(read, parsed)
        got = _read(root, path)
        if got is None:
            continue
        variants = [(module_of(got[0]), m.decode()) for m in REGISTERED.findall(got[1])]
        registered += variants
        if not worth_parsing(*got):  # a registry's file: its classes are what its variants build
            deferred += [got[0]] if worth_parsing(*got, models=True) and not variants else []
            continue
        parsed += 1
        facts = _parse(*got)
        found += [facts] if facts is not None else []
    seen = tuple(p.relative_to(root).as_posix() for p in configs)
    return Scan(tuple(found), read, truncated, parsed, frozenset(names), tuple(deferred), configs=seen,
                registered=tuple(registered))  # fmt: skip


def add_models(root: Path, scan: Scan, progress: Progress | None = None, classes: bool = True) -> Scan:
    """`scan` with its deferred files parsed too (unless not `classes`): the nn.Module classes of a
    repository; and the settings of its YAML and JSON files."""
    found, parsed = list(scan.files), scan.parsed
    for relative in scan.deferred if classes else ():
        got = _read(root, root / relative)
        parsed += 1
        facts = _parse(*got) if got else None
        found += [facts] if facts is not None else []
        if progress is not None:
            progress(scan.read, parsed)
    settings: list[tuple[str, object]] = []
    for path in config_files(root, scan.configs):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            settings += settings_of(path.relative_to(root).as_posix(), path.read_text(encoding="utf-8"))
    return replace(
        scan, files=tuple(found), parsed=parsed, deferred=(), settings=tuple(settings), shown=readme_constructions(root)
    )
