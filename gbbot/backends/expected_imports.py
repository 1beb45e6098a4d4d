"""What a program imports before it does anything else, read from its source without running it:
the warm server's standby child imports the installed ones while the entrypoint before it runs, so
that the program finds them loaded when its turn comes (see warm_server, "standby").

Only what the program would run first, in its own order: the leading import statements of the
file it starts in (after a docstring; `if TYPE_CHECKING:` blocks, never true at run time, are
passed over), and, where one of them imports a module of the checkout, that module's leading
imports, then the rest only if that module is imports and nothing else. The first statement that
is not an import ends the list, since from there on the program runs its own code, which may set
what an import reads (`os.environ["HF_HUB_OFFLINE"] = "1"` before `import transformers`). Imports
inside functions are never named: a module imported only in `from_pretrained` is not one the
program surely needs.

`from X import a` gives `X` and `X.a`, which the child imports as a module or, failing that,
reads as an attribute, as the statement does (a lazily loaded class such as
`transformers.BertModel` loads its modeling module). Only names: the child imports just those found
installed outside the checkout, and stops at the first it cannot (warm_server.import_expected).
Bounded, since the files are the pull request's: so many files, so many bytes each, so many names;
a file that does not parse ends the list. What a file gives is kept while the file is unchanged.
"""

from __future__ import annotations

import ast
import functools
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_FILES = 40
MAX_FILE_BYTES = 2 << 20
MAX_NAMES = 2000
LAUNCHER = "gbbot.child.launch"  # `call:` and `model:` entrypoints: the target is its argument


@dataclass(frozen=True)
class Leading:
    """What one file runs first: the modules its leading import statements name, in order, and
    whether the file is nothing but those (so that what imports it goes on after it)."""

    names: tuple[str, ...]
    only_imports: bool


def start_files(root: Path, kind: str, target: str, args: tuple[str, ...]) -> list[Path]:
    """The checkout's files an entrypoint starts in, in the order it runs them: its script, its
    `-m` module (the packages above it first), the module of a `call:`/`model:` target. None for
    pytest, which runs its own start-up and the conftest files first."""
    if kind == "script":
        files = [root / target]
    elif target == LAUNCHER:
        targets = [a.partition(":")[0] for a in args if ":" in a and not a.startswith("-")]
        files = _module_file(targets[0], [root]) if targets else []
    elif target == "pytest":
        files = []
    else:
        files = _module_file(target, [root])
    return [f for f in files if _inside(f, root) and f.is_file()]


def expected(root: Path, starts: list[Path]) -> list[str]:
    """The names of the modules from outside the checkout that the program imports before it runs
    anything else, in the order it imports them."""
    root = root.resolve()
    names: dict[str, None] = {}
    seen: set[Path] = set()
    tops = _checkout_tops(root)

    def visit(path: Path) -> bool:
        """Note what `path` imports first; whether the program goes on after it."""
        seen.add(path)
        leading = _leading(path, root)
        for name in leading.names:
            if len(names) >= MAX_NAMES:
                return False
            local = [f.resolve() for f in _module_file(name, [path.parent, root])]
            if local:
                if not all(f.is_relative_to(root) for f in local):
                    return False  # a link out of the checkout: what it runs is not read
                fresh = [f for f in local if f not in seen]
                if len(seen) + len(fresh) > MAX_FILES or not all(visit(f) for f in fresh):
                    return False
            elif name.partition(".")[0] in tops:
                return False  # the checkout's own name, not found as a file: nothing to say after it
            else:
                names.setdefault(name, None)
        return leading.only_imports

    for start in starts:
        start = start.resolve()
        if start in seen or not visit(start):
            break
    return list(names)


def _leading(path: Path, root: Path) -> Leading:
    try:
        stat = path.stat()
    except OSError:
        return Leading((), False)
    if stat.st_size > MAX_FILE_BYTES:
        return Leading((), False)
    return _leading_of(str(path), stat.st_mtime_ns, stat.st_size, str(root))


@functools.lru_cache(maxsize=4 * MAX_FILES)
def _leading_of(path: str, _mtime_ns: int, _size: int, root: str) -> Leading:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like: the program's own business
            tree = ast.parse(Path(path).read_bytes(), filename=path)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):  # CPython's parser's limits
        return Leading((), False)
    package = _package_of(Path(path), Path(root))
    names: list[str] = []
    for index, node in enumerate(tree.body):
        if (index == 0 and _docstring(node)) or _type_checking(node):
            continue
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            return Leading(tuple(names), False)
        names += _imported(node, package)
    return Leading(tuple(names), True)


def _imported(node: ast.Import | ast.ImportFrom, package: list[str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    module = _absolute(node, package)
    if module is None or module == "__future__":
        return []
    return [module, *(f"{module}.{alias.name}" for alias in node.names if alias.name != "*")]


def _docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _type_checking(node: ast.stmt) -> bool:
    """`if TYPE_CHECKING:` with no `else`: a block that never runs."""
    if not isinstance(node, ast.If) or node.orelse:
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(node: ast.ImportFrom, package: list[str]) -> str | None:
    if not node.level:
        return node.module
    if node.level - 1 > len(package):
        return None
    parts = package[: len(package) - (node.level - 1)] + ([node.module] if node.module else [])
    return ".".join(parts) or None


def _package_of(path: Path, root: Path) -> list[str]:
    """The dotted package a checkout file belongs to, by its directories' `__init__.py` files."""
    parts: list[str] = []
    directory = path.parent
    while directory != root and _inside(directory, root) and (directory / "__init__.py").is_file():
        parts.insert(0, directory.name)
        directory = directory.parent
    return parts


def _module_file(name: str, places: list[Path]) -> list[Path]:
    """The checkout files importing `name` runs (the packages above it first), in the first of
    `places` that has it; [] when none does."""
    parts = name.split(".")
    for place in places:
        files = list(_package_files(place, parts))
        if files:
            return files
    return []


def _package_files(place: Path, parts: list[str]) -> Iterator[Path]:
    for depth in range(1, len(parts) + 1):
        base = place.joinpath(*parts[:depth])
        if (base / "__init__.py").is_file():
            yield base / "__init__.py"
        elif base.with_suffix(".py").is_file():  # a module: the rest of the name is its attributes
            yield base.with_suffix(".py")
            return
        elif not base.is_dir():  # a namespace package's directory has no __init__.py
            return


def _checkout_tops(root: Path) -> set[str]:
    """Top-level names the checkout itself provides: never named, even when a module of that name
    is also installed."""
    try:
        return {p.stem if p.suffix == ".py" else p.name for p in root.iterdir() if p.suffix == ".py" or p.is_dir()}
    except OSError:
        return set()


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (OSError, ValueError):
        return False
    return True
