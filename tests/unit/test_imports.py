"""gbbot's imports follow its layers, and have no cycles.

The layers are the table that docs/architecture.md prints ("Where things live"): each package and
the packages it may import. The table is read from the document itself, so a sentence there that
the code does not keep fails here, and so does an import the table does not allow. Inside a
package, two more rules: a backend imports no other backend, and an event handler of the action
imports no other handler.

A cycle is how a layered design rots: the contract starts importing a backend, a renderer starts
importing the publisher. Every import counts, late ones inside functions too (they are still a
dependency, only deferred), and so do imports under `if TYPE_CHECKING:`: they do not run, but a
reader still needs one module to read the other.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT.resolve() / "gbbot"
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
# Backends are interchangeable: each imports the contract and shared support, never another one.
BACKENDS = ("gbbot.backends.local", "gbbot.backends.warm", "gbbot.backends.container")
# The action's event handlers: each adapts one event; what two of them share lives elsewhere.
HANDLERS = (
    "gbbot.action.pull_request",
    "gbbot.action.workflow_run",
    "gbbot.action.schedule",
    "gbbot.action.issue_comment",
    "gbbot.action.other",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def _import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from _import_nodes(node)


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    anchor = importer.split(".")
    anchor = anchor if is_package else anchor[:-1]
    anchor = anchor[: len(anchor) - (node.level - 1)]
    return ".".join([*anchor, *([node.module] if node.module else [])])


def imported(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The gbbot modules `name` imports: `from gbbot.x import y` is gbbot.x.y when that is a
    module, else gbbot.x."""
    found: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
            continue
        base = _absolute(node, name, path.name == "__init__.py")
        for alias in node.names:
            found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {module for module in found if module in known and module != name}


def import_graph() -> dict[str, set[str]]:
    known = all_modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def unit(module: str) -> str:
    """A module's package inside gbbot (gbbot.fix.plan → gbbot.fix); a top-level module
    is a unit of its own."""
    parts = module.split(".")
    return ".".join(parts[:2])


def package_graph(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        edges = packages.setdefault(unit(module), set())
        edges |= {unit(t) for t in targets if unit(t) != unit(module) and unit(t) != "gbbot"}
    return packages


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_is_read_from_the_real_package() -> None:
    graph = import_graph()
    assert "gbbot.main" in graph and "gbbot.core.config" in graph["gbbot.checks.tree"] | graph["gbbot.main"] | {
        t for targets in graph.values() for t in targets
    }


def test_no_cycle_between_modules() -> None:
    assert cycles(import_graph()) == []


def test_no_cycle_between_packages() -> None:
    assert cycles(package_graph(import_graph())) == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}}, [["a", "b", "c"]]),
    ],
)
def test_cycle_finder(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(graph) == expected


def test_a_late_import_is_an_edge_and_so_is_a_type_checking_one(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from gbbot.analysis import report\n"
        "def f():\n    from gbbot.core import config\n",
        encoding="utf-8",
    )
    known = {"gbbot.analysis.report": source, "gbbot.core.config": source, "gbbot.mod": source}
    assert imported("gbbot.mod", source, known) == {"gbbot.core.config", "gbbot.analysis.report"}


def test_the_fix_commit_and_push_import_no_libcst() -> None:
    """Only re-deriving a fix needs LibCST (imported when there is something to commit): the audit's
    fix PR text, the loop guard and the push are plain."""
    probe = (
        "import sys; import gbbot.deliver.commit, gbbot.deliver.push, gbbot.deliver.sources, gbbot.audit.fixpr;"
        " print('libcst' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# --- the layers --------------------------------------------------------------------------------


def documented_layers(text: str) -> dict[str, frozenset[str]]:
    """The layer table of docs/architecture.md: rows `| `pkg/` | … | `a`, `b` |` whose first cell
    names a package (or a top-level module) and whose last cell lists what it may import."""
    layers: dict[str, frozenset[str]] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not re.fullmatch(r"`[a-z_]+(/|\.py)`", cells[0]):
            continue
        name = "gbbot." + cells[0].strip("`").removesuffix("/").removesuffix(".py")
        allowed = re.findall(r"`([a-z_][a-z_.]*)`", cells[-1])
        layers[name] = frozenset(f"gbbot.{a}" for a in allowed)
    return layers


def allowed(target: str, entries: frozenset[str]) -> bool:
    """An entry names a package (every module in it may be imported) or one module."""
    return unit(target) in entries or any(target == e or target.startswith(e + ".") for e in entries)


def layer_violations(graph: Mapping[str, set[str]], layers: Mapping[str, frozenset[str]]) -> list[str]:
    """Every import the layers do not allow, as `importer -> imported`; a unit missing from the
    table is a violation too (a new package must be placed)."""
    found = []
    for module, targets in sorted(graph.items()):
        mine = unit(module)
        if mine == "gbbot":
            continue
        if mine not in layers:
            found.append(f"{module}: its package {mine} is not in the layer table")
            continue
        for target in sorted(targets):
            if unit(target) not in (mine, "gbbot") and not allowed(target, layers[mine]):
                found.append(f"{module} -> {target}")
    return found


def sibling_violations(graph: Mapping[str, set[str]]) -> list[str]:
    found = []
    for group in (BACKENDS, HANDLERS):
        for module in group:
            found += [f"{module} -> {t}" for t in sorted(graph.get(module, ())) if t in group]
    return found


def test_the_layer_table_is_the_documents() -> None:
    layers = documented_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    assert "gbbot.core" in layers and layers["gbbot.core"] == frozenset()
    packages = {unit(m) for m in import_graph()} - {"gbbot"}
    assert sorted(packages - set(layers)) == []  # every package and top-level module has a row
    assert sorted(set(layers) - packages) == []  # and no row names one that is gone


def test_every_import_follows_the_layers() -> None:
    layers = documented_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    assert layer_violations(import_graph(), layers) == []


def test_no_backend_imports_another_and_no_handler_another() -> None:
    assert sibling_violations(import_graph()) == []


# Edges that once crept in; each must be caught if it comes back.
REINTRODUCED = [
    ("gbbot.publish.review", "gbbot.fix.present"),  # publishing re-parsing fix results
    # the markdown reading fix results through the fix package (they lived in gbbot/fix/result.py
    # until they moved to core/fixes; fix/present is where the fix package words them now)
    ("gbbot.render.markdown", "gbbot.fix.present"),
    ("gbbot.backends.warm", "gbbot.analysis.reads"),  # a backend reaching into the analysis
    ("gbbot.action.analysis", "gbbot.analysis.report"),  # the action going around the library
    ("gbbot.action.outputs", "gbbot.fix.present"),
    ("gbbot.checks.head_and_base", "gbbot.audit.reuse"),  # the core diff depending on the audit
]


@pytest.mark.parametrize(("importer", "imported"), REINTRODUCED)
def test_an_edge_that_crept_in_before_is_caught(importer: str, imported: str) -> None:
    graph = {module: set(targets) for module, targets in import_graph().items()}
    # both ends are modules of the package as it is: an edge to a module that is gone tests nothing
    assert importer in graph and imported in graph, f"{importer} -> {imported} names a module that does not exist"
    graph.setdefault(importer, set()).add(imported)
    layers = documented_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    assert f"{importer} -> {imported}" in layer_violations(graph, layers)


@pytest.mark.parametrize(
    ("importer", "imported"),
    [("gbbot.backends.warm", "gbbot.backends.local"), ("gbbot.action.pull_request", "gbbot.action.issue_comment")],
)
def test_a_sibling_edge_is_caught(importer: str, imported: str) -> None:
    graph = {module: set(targets) for module, targets in import_graph().items()}
    graph.setdefault(importer, set()).add(imported)
    assert f"{importer} -> {imported}" in sibling_violations(graph)


def test_the_table_reader_reads_rows_and_skips_other_tables() -> None:
    text = (
        "| where | what | may import |\n|---|---|---|\n"
        "| `core/` | values | — |\n| `edges/` | git | `core` |\n| `api.py` | library | `core`, `edges` |\n"
        "| id | category |\n| GB0059 | SUPPORTABLE |\n"
    )
    assert documented_layers(text) == {
        "gbbot.core": frozenset(),
        "gbbot.edges": frozenset({"gbbot.core"}),
        "gbbot.api": frozenset({"gbbot.core", "gbbot.edges"}),
    }
