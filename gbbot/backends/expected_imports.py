"""What an entrypoint will import, read from its source before it runs: the warm server imports the
installed ones beside the first child that needs them, so that the next children find them loaded.

Learning from what a child imported (warm_server) only helps the children forked after that child
ended and the server imported what it learned; with `--jobs 1` that is the third entrypoint on, so
the second one imported `transformers` again. Reading the program's imports needs no run: the
script (or module, or `call:` target) and the checkout's own modules it imports, one import deeper
at a time, give the names of what they import from elsewhere. `from X import a` gives `X` and
`X.a`, which the server imports as a module or, failing that, reads as an attribute, as the
statement would (a lazily loaded class such as `transformers.BertModel` loads its modeling
module).

Only names: the server decides what it imports (installed modules outside the checkout, never the
checkout's own; see warm_server.learnable), and tries them in a throwaway fork first. Bounded, since
the files are the pull request's: so many files, so many bytes each, so many names; a file that does
not parse gives nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

MAX_FILES = 200
MAX_FILE_BYTES = 2 << 20
MAX_NAMES = 2000
LAUNCHER = "gbbot.child.launch"  # `call:` and `model:` entrypoints: the target is its argument


def start_files(root: Path, kind: str, target: str, args: tuple[str, ...]) -> list[Path]:
    """The checkout's files an entrypoint starts in: its script, its `-m` module, the module of a
    `call:`/`model:` target, and any `.py` file it names (pytest's test files)."""
    files = [root / target] if kind == "script" else []
    if kind == "module" and target != LAUNCHER:
        files += _module_file(target, [root])
    for arg in args:
        if kind == "module" and target == LAUNCHER and ":" in arg and not arg.startswith("-"):
            files += _module_file(arg.partition(":")[0], [root])
        elif arg.endswith(".py"):
            files.append(root / arg)
    return [f for f in files if _inside(f, root) and f.is_file()]


def expected(root: Path, starts: list[Path]) -> list[str]:
    """The names of the modules `starts` and the checkout modules they import would import from
    outside the checkout, in the order first met."""
    root = root.resolve()
    names: dict[str, None] = {}
    queue, seen, tops = [f.resolve() for f in starts], set(), _checkout_tops(root)
    while queue and len(seen) < MAX_FILES and len(names) < MAX_NAMES:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        for name in _imports(path, root):
            local = _module_file(name, [path.parent, root])
            if local:
                queue += [f for f in local if _inside(f, root)]
            elif name.partition(".")[0] not in tops:
                names.setdefault(name, None)
    return list(names)[:MAX_NAMES]


def _imports(path: Path, root: Path) -> Iterator[str]:
    """The absolute module names `path` imports anywhere (a function's imports run when it is called,
    which an entrypoint usually does), but under `if TYPE_CHECKING:`; relative imports resolved
    against the file's package."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return
    package = _package_of(path, root)
    for node in _walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, package)
            if module is None:
                continue
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names if alias.name != "*")


def _walk(tree: ast.AST) -> Iterator[ast.AST]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _type_checking(node.test):
            yield from (n for child in node.orelse for n in (child, *_walk(child)))
            continue
        yield node
        yield from _walk(node)


def _type_checking(test: ast.expr) -> bool:
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
    """The checkout file `name` (and the packages above it) would be found as, in the first of
    `places` that has it; [] when none does."""
    parts = name.split(".")
    for place in places:
        files = []
        for depth in range(1, len(parts) + 1):
            base = place.joinpath(*parts[:depth])
            if (base / "__init__.py").is_file():
                files.append(base / "__init__.py")
            elif base.with_suffix(".py").is_file():  # a module: the rest of the name is its attributes
                files.append(base.with_suffix(".py"))
                break
            elif not base.is_dir():  # a namespace package's directory has no __init__.py
                break
        if files:
            return files
    return []


def _checkout_tops(root: Path) -> set[str]:
    """Top-level names the checkout itself provides: never asked of the server, even when a
    module of that name is also installed."""
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
