"""Third-party breaks are never patched in site-packages. gbbot offers the graph-break skill's
pattern instead: a subclass in the user's code that overrides the offending method (a copy of the
library's method with the breaking line marked, saying where it came from: package, version,
file:line), to be finished by a person. A copy that calls what no graph break needs (a process,
the network, files, code from a string) says so, and is never finished by gbbot (fix/override).
Pure: the library's source comes in through a lookup function, its version from its metadata."""

from __future__ import annotations

import ast
import builtins
import fnmatch
import functools
import importlib.metadata
import symtable
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from gbbot.analysis.source import source_map
from gbbot.core.fixes import FixResult, FixStatus
from gbbot.core.model import Frame, GraphBreak

SourceLookup = Callable[[str], "str | None"]  # display path (e.g. "lib/mod.py") → text
MAX_COPIED_LINES = 200
# What a copied library method may not call for gbbot to finish it as an override: what no graph
# break needs. A copy that calls one stays a scaffold, for a person to read before using it.
REACHES_OUT = (
    ("a process", ("os.system", "os.popen", "os.exec*", "os.spawn*", "os.fork*", "os.posix_spawn*", "os.kill*",
                   "subprocess.*", "pty.*", "multiprocessing.*")),
    ("the network", ("socket.*", "urllib.*", "http.*", "requests.*", "httpx.*", "aiohttp.*", "ftplib.*", "smtplib.*")),
    ("files", ("builtins.open", "io.open", "os.open", "os.remove", "os.unlink", "os.rename", "os.replace", "os.rmdir",
               "os.removedirs", "os.mkdir", "os.makedirs", "os.chmod", "os.chown", "os.symlink", "os.link",
               "os.truncate", "os.write", "shutil.*", "pathlib.*", "*.write_text", "*.write_bytes")),
    ("code from a string", ("builtins.eval", "builtins.exec", "builtins.compile", "builtins.__import__",
                            "importlib.*")),
)  # fmt: skip


@dataclass(frozen=True)
class LibraryFrame:
    frame: Frame
    module: str  # importable name, "lib.mod"
    qualname: str  # "Class.method" or "function"
    source: str

    @property
    def package(self) -> str:
        return self.module.split(".")[0]

    @property
    def origin(self) -> str:
        """Where a copy of it comes from: `tinylib 1.0, tinylib/net.py:12 (Net.forward)`."""
        node = _definition(self.source, self.qualname)
        where = f"{self.frame.file}:{node.lineno if node else self.frame.line}"
        return f"{self.package} {installed_version(self.package) or '(version unknown)'}, {where} ({self.qualname})"


@functools.cache
def installed_version(package: str) -> str | None:
    """The installed version of the distribution that holds the top-level package `package`,
    from its metadata (nothing is imported)."""
    try:
        names = importlib.metadata.packages_distributions().get(package) or []
        return importlib.metadata.version(names[0]) if names else None
    except (importlib.metadata.PackageNotFoundError, OSError, ValueError):
        return None


def reaches_out(library: LibraryFrame) -> str | None:
    """What the library's method calls that no graph break needs, in words (`` `os.system` (a
    process) ``): names resolved through the library module's imports; None when nothing."""
    node = _definition(library.source, library.qualname)
    if node is None:
        return None
    names = _module_imports(ast.parse(library.source))
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        found = _qualified(call.func, names)
        if found is None and isinstance(call.func, ast.Attribute):
            found = f"*.{call.func.attr}"  # a method of what a call made: `Path(p).write_text`
        for what, patterns in REACHES_OUT:
            if found and any(fnmatch.fnmatchcase(found, p) for p in patterns):
                return f"`{found.removeprefix('builtins.')}` ({what})"
    return None


def _module_imports(tree: ast.Module) -> dict[str, str]:
    """The names a module's top-level imports bind, each to its qualified name (a function or
    class of its own shadows a builtin: its own `open` is not the builtin)."""
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = f"<module>.{node.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                names[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _qualified(node: ast.expr, imports: dict[str, str]) -> str | None:
    """`sp.run` → "subprocess.run", `open` → "builtins.open"; None for what is not a dotted name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    head = node.id
    base = imports.get(head) or (f"builtins.{head}" if hasattr(builtins, head) else head)
    return ".".join((base, *parts))


def module_name(path: str) -> str:
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def library_frames(brk: GraphBreak) -> tuple[Frame, ...]:
    """The frames inside the library: those after the user's call into it, innermost last."""
    stack = brk.user_stack
    index = max((i for i, f in enumerate(stack) if f.file == brk.file and f.line == brk.line), default=-1)
    inside = _up_to_library_site(stack[index + 1 :], brk)
    return tuple(f for f in inside if not f.file.startswith(("torch/", "functorch/")))


def _up_to_library_site(frames: tuple[Frame, ...], brk: GraphBreak) -> tuple[Frame, ...]:
    """The frames down to the library site the report names (the standard library's frames
    below it, e.g. contextlib's, are not the library's code to override)."""
    site = brk.library_site
    at = [i for i, f in enumerate(frames) if site and (f.file, f.line) == (site.path, site.line)]
    return frames[: at[-1] + 1] if at else frames


def locate(brk: GraphBreak, lookup: SourceLookup) -> LibraryFrame | None:
    """The innermost library frame whose source can be read, preferring a method (it can be
    overridden in a subclass)."""
    found: list[LibraryFrame] = []
    for frame in reversed(library_frames(brk)):
        text = lookup(frame.file)
        if text is None:
            continue
        qualname = source_map(text).qualname(frame.line, frame.function)
        found.append(LibraryFrame(frame, module_name(frame.file), qualname, text))
    methods = [f for f in found if _owner(f.qualname)]
    return (methods or found or [None])[0]


def _owner(qualname: str) -> str | None:
    """`Class.method` → "Class" (top-level classes only: a subclass must be importable)."""
    parts = qualname.split(".")
    return parts[0] if len(parts) == 2 and "<locals>" not in qualname else None


def _definition(source: str, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    scope: list[ast.stmt] = ast.parse(source).body
    node = None
    for part in qualname.split("."):
        named = (n for n in scope if isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef))
        node = next((n for n in named if n.name == part), None)
        if node is None:
            return None
        scope = node.body
    return node if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else None


def copied_definition(library: LibraryFrame, marker: str) -> str:
    """The library's function, dedented, with `marker` as a comment above the breaking line."""
    node = _definition(library.source, library.qualname)
    lines = library.source.splitlines()
    if node is None or node.end_lineno is None or node.end_lineno - node.lineno > MAX_COPIED_LINES:
        name = library.qualname.split(".")[-1]
        return f"def {name}(self, *args, **kwargs):\n    # {marker}\n    ..."
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    chunk = lines[start - 1 : node.end_lineno]
    at = library.frame.line - start
    if 0 <= at < len(chunk):
        indent = chunk[at][: len(chunk[at]) - len(chunk[at].lstrip())]
        chunk.insert(at, f"{indent}# {marker}")
    return textwrap.dedent("\n".join(chunk))


def module_bindings(source: str) -> frozenset[str]:
    """Names a module binds at its top level (imports, definitions, assignments)."""
    table = symtable.symtable(source, "<module>", "exec")
    return frozenset(s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported())


def unbound_names(text: str) -> frozenset[str]:
    """Names the functions and classes of `text` read as globals that neither the module nor builtins bind
    (SyntaxError when it does not compile)."""
    compile(text, "<scaffold>", "exec")
    module = symtable.symtable(text, "<scaffold>", "exec")
    known = module_bindings(text) | frozenset(dir(builtins))
    free: set[str] = set()
    pending = list(module.get_children())
    while pending:
        table = pending.pop()
        pending.extend(table.get_children())
        if table.get_type() not in ("function", "class"):  # a class body reads its decorators' names
            continue
        free |= {s.get_name() for s in table.get_symbols() if s.is_global() and s.is_referenced()}
    return frozenset(free - known)


def _imports_for(text: str, library: LibraryFrame) -> str:
    """`text` with an import of every name the copied code uses from the library's module."""
    missing = sorted(unbound_names(text) & module_bindings(library.source))
    if not missing:
        return text
    line = f"from {library.module} import {', '.join(missing)}  # what the copied code uses"
    head, marker, rest = text.partition("\n\n\n")
    return f"{head}\n{line}{marker}{rest}"


def sound_text(brk: GraphBreak, library: LibraryFrame) -> tuple[str | None, str]:
    """The scaffold, or None and why not: it must compile and name nothing it does not import."""
    try:
        text = _imports_for(_text(brk, library), library)
        unbound = unbound_names(text)
    except SyntaxError as exc:
        return None, f"a copy of {library.qualname} does not compile on its own ({exc.msg})"
    if unbound:
        return None, f"a copy of {library.qualname} would use names gbbot cannot import: {', '.join(sorted(unbound))}"
    return text, ""


def _text(brk: GraphBreak, library: LibraryFrame) -> str:
    where = f"{library.frame.file}:{library.frame.line}"
    marker = f"TODO(gbbot): {brk.gb_id or 'graph break'} ({brk.gb_type}) breaks the graph on the next line"
    body = copied_definition(library, marker)
    owner, package, reached = _owner(library.qualname), library.package, reaches_out(library)
    head = [
        "# Scaffold from gbbot: NOT a verified fix. Finish it by hand, then re-run gbbot.",
        f"# The graph break is inside {package}, at {where} in {library.qualname}.",
        f"# Copied from {library.origin}.",
        f"# Do not edit site-packages: override it here (your code calls into {package} at {brk.file}:{brk.line}).",
        *([f"# The copy calls {reached}, which no graph break needs: read it before you use it."] * bool(reached)),
    ]
    if owner:
        name = f"Compilable{owner}"
        head.append(f"# Then create {name} wherever your code creates {owner}.")
        return "\n".join(
            [
                *head,
                f"from {library.module} import {owner}",
                "",
                "",
                f"class {name}({owner}):",
                textwrap.indent(body, "    "),
                "",
            ]
        )
    function = library.qualname.split(".")[-1]
    head.append(f"# Then call this copy instead of {library.module}.{function}.")
    return "\n".join(
        [
            *head,
            f"import {library.module}  # noqa: F401 - what the copy replaces",
            "",
            "",
            body.replace(f"def {function}(", f"def compilable_{function}(", 1),
            "",
        ]
    )


def _result(brk: GraphBreak, status: FixStatus, title: str, reason: str, **more: str) -> FixResult:
    return FixResult(brk.fingerprint, status, brk.file, brk.line, recipe=brk.fix, title=title, reason=reason, **more)


def _override_advice(brk: GraphBreak, why: str) -> FixResult:
    """Advice in words where no scaffold can be offered: `why`, then what to do instead."""
    how = "subclass the class that owns that method in your code and override the method (never patch site-packages)"
    return _result(brk, FixStatus.ADVICE, "third-party code: override it in your code", f"{why}; {how}")


def scaffold(brk: GraphBreak, lookup: SourceLookup) -> FixResult:
    library = locate(brk, lookup)
    if library is None:
        frames = library_frames(brk)
        where = f"{frames[-1].file}:{frames[-1].line} in {frames[-1].function}" if frames else "a library"
        return _override_advice(brk, f"the break is inside {where}, whose source gbbot could not read")
    where = f"{library.frame.file}:{library.frame.line}"
    text, why_not = sound_text(brk, library)
    reached = reaches_out(library)
    if text is None:
        why = f"the break is in third-party code ({where}); {why_not}, so no scaffold is offered"
        return _override_advice(brk, why)
    reason = f"the break is in third-party code ({where}); gbbot never patches installed packages" + (
        f"; the copied method calls {reached}, which no graph break needs: not finished by gbbot" * bool(reached)
    )
    description = (
        "A subclass in your code that overrides the library method where the graph break is, "
        f"copied from the installed version ({library.origin}) with the breaking line marked. It "
        "is a starting point, not a verified fix: rewrite the marked line, use the subclass, re-run gbbot."
    )
    title = "scaffold subclass for third-party code (to finish by hand)"
    return _result(brk, FixStatus.SCAFFOLD, title, reason, description=description, scaffold=text)
