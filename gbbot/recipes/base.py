"""What every recipe shares: the break site it looks for, the edits it records, and small builders.

A recipe is one class: the breaks it takes (its GB ids; none: it is chosen by the statement's shape,
whatever break the line reports), one matcher (a LibCST visitor that only *records* `Edit`s: node →
replacement, imports it needs), its examples and its rewrite; `gbbot.recipes.engine` applies the
edits. The label every view shows asks the same matcher in a dry pass (`matches`), so a view never
promises a fix the fix step then refuses. Each recipe carries its own before/after examples (and
look-alikes it must leave alone, both in gbbot/data/recipe_examples.yaml), which
tests/unit/recipes/test_recipes.py runs as golden cases. A line marked `# BREAK` in an example is
where the graph break is reported.
"""

from __future__ import annotations

import ast
import functools
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import libcst as cst
import yaml
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider, QualifiedNameProvider

from gbbot.core import source_limits

Replacement = cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel
MARKER = "# BREAK"
Released = tuple[str, str, "str | None"]  # `from MODULE import NAME [as ALIAS]`


@dataclass(frozen=True)
class Names:
    """How the module spells what replacements need: `torch` (an existing `import torch as T`
    makes it `T`), and whether an import must be added."""

    torch: str = "torch"
    torch_imported: bool = True


@dataclass(frozen=True)
class BreakSite:
    """Where the break was reported, as a 1-based line in the file."""

    line: int


@dataclass(frozen=True)
class Edit:
    node: cst.CSTNode
    replacement: Replacement
    imports: tuple[str, ...] = ()  # modules the replacement names ("torch")
    keeps_comments: bool = True  # False only where a statement is deleted on purpose
    released: tuple[Released, ...] = ()  # imports the edit may leave unused: removed if they are


@dataclass(frozen=True)
class Example:
    before: str
    after: str


EXAMPLES = Path(__file__).parent.parent / "data" / "recipe_examples.yaml"


@functools.cache
def _written() -> dict[str, dict[str, list[Any]]]:
    return yaml.safe_load(EXAMPLES.read_text(encoding="utf-8"))


class Written:
    """A recipe's `examples` or `untouched`, read from gbbot/data/recipe_examples.yaml when first
    asked for (the file takes a tenth of a second to parse): the entry of the recipe's class, else
    of the nearest base class that has one."""

    def __init__(self, field: str) -> None:
        self.field = field

    def __get__(self, recipe: object, owner: type) -> tuple:
        for cls in owner.__mro__:
            entry = _written().get(cls.__name__, {})
            if self.field in entry:
                return tuple(Example(**e) if self.field == "examples" else e for e in entry[self.field])
        return ()


class SourceError(Exception):
    """The file does not parse: nothing in it is patched."""


def parse(source: str) -> cst.Module:
    """`source` as LibCST's tree; SourceError when it does not parse or is refused before LibCST
    sees it (core/source_limits: deeper or larger than LibCST survives)."""
    refused = source_limits.refusal(source)
    if refused:
        raise SourceError(refused)
    try:
        return cst.parse_module(source)
    except (RecursionError, MemoryError):
        raise SourceError("it nests deeper than gbbot parses") from None
    except cst.ParserSyntaxError as exc:
        where, message = f"line {exc.raw_line}, column {exc.raw_column}", exc.message
    try:  # Python's own parser names the place better (LibCST's tokenizer says "line 1" for some)
        ast.parse(source)
    except SyntaxError as exc:
        where, message = f"line {exc.lineno}", exc.msg
    raise SourceError(f"{where}: {message}")


@functools.lru_cache(maxsize=8)
def wrapped(source: str) -> MetadataWrapper:
    """One parse (and one resolution of positions, parents, names) per file text: every break of a
    file, and every recipe asked about it, reads the same tree."""
    return MetadataWrapper(parse(source))


class Recipe(cst.CSTVisitor):
    """Base class: subclasses look at the statement or expression on `site.line` and call
    `record`. They never transform."""

    METADATA_DEPENDENCIES: ClassVar[Sequence] = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)
    id: ClassVar[str]  # the `fix` id, shared by the variants of one recipe
    gb_ids: ClassVar[tuple[str, ...]] = ()  # the breaks it takes by id; none: by the statement's shape
    leads: ClassVar[bool] = False  # it already guards the statement: tried before the shape recipes
    at_compile_site: ClassVar[bool] = False  # it writes a setting at the compile, not at the break
    variant: ClassVar[str] = "default"
    title: ClassVar[str]  # what it does, in a few words
    description: ClassVar[str]  # what it changes and why; when it may change behaviour
    examples: ClassVar[tuple[Example, ...]] = Written("examples")  # type: ignore[assignment]
    untouched: ClassVar[tuple[str, ...]] = Written("untouched")  # type: ignore[assignment] - look-alikes: no edit

    @classmethod
    def matches(cls, source: str, line: int, code: str) -> bool:
        """The matcher in a dry pass: would the recipe record an edit for a break at `line` of
        `source` (`code`: the break's statement)? Nothing is applied."""
        try:
            wrapper = wrapped(source)
        except SourceError:
            return False
        recipe = cls(BreakSite(line), Names())
        wrapper.visit(recipe)
        return bool(recipe.edits)

    def __init__(self, site: BreakSite, names: Names) -> None:
        super().__init__()
        self.site = site
        self.names = names
        self.edits: list[Edit] = []

    def record(
        self, node: cst.CSTNode, replacement: Replacement, imports: tuple[str, ...] = (), keeps_comments: bool = True
    ) -> None:
        self.edits.append(Edit(node, replacement, imports, keeps_comments))

    def record_removal(self, statement: cst.BaseStatement, released: tuple[Released, ...] = ()) -> None:
        """Delete `statement` (its own trailing comment goes with it), keeping the comment lines above;
        `released` names from-imports that only the statement may have used."""
        for old, new in removal(self, statement):
            self.edits.append(Edit(old, new, keeps_comments=old is not statement, released=released))

    def from_import_of(self, name: cst.CSTNode) -> tuple[Released, ...]:
        """For a bare name bound by `from M import N [as A]`: ((M, N, A),); else ()."""
        if not isinstance(name, cst.Name):
            return ()
        found = []
        for qualified in self.get_metadata(QualifiedNameProvider, name, set()):
            module, _, imported = qualified.name.rpartition(".")
            if module:
                found.append((module, imported, name.value if name.value != imported else None))
        return tuple(found)

    # --- questions about nodes ---------------------------------------------------------------

    def lines(self, node: cst.CSTNode) -> tuple[int, int]:
        where = self.get_metadata(PositionProvider, node)
        return where.start.line, where.end.line

    def on_site(self, node: cst.CSTNode) -> bool:
        start, end = self.lines(node)
        return start <= self.site.line <= end

    def starts_on_site(self, node: cst.CSTNode) -> bool:
        return self.lines(node)[0] == self.site.line

    def is_name(self, node: cst.CSTNode, *qualified: str) -> bool:
        """Does `node` refer to one of these qualified names (imports and aliases resolved)?"""
        found = {q.name for q in self.get_metadata(QualifiedNameProvider, node, set())}
        return bool(found & set(qualified))

    def is_compile(self, node: cst.BaseExpression) -> bool:
        """`torch.compile`, or `torch.compile(...)` (a decorator with options)."""
        return self.is_name(node.func if isinstance(node, cst.Call) else node, "torch.compile")

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.get_metadata(ParentNodeProvider, node, None)

    def enclosing(self, node: cst.CSTNode, kind: type[cst.CSTNode]) -> cst.CSTNode | None:
        current = self.parent(node)
        while current is not None and not isinstance(current, kind):
            current = self.parent(current)
        return current

    def torch_expr(self, dotted: str) -> cst.BaseExpression:
        """`torch.<dotted>` spelled with the module's torch name."""
        return cst.parse_expression(f"{self.names.torch}.{dotted}")

    def not_compiling(self) -> cst.UnaryOperation:
        """`not torch.compiler.is_compiling()`."""
        return cst.UnaryOperation(cst.Not(), cst.Call(self.torch_expr("compiler.is_compiling")))


class StatementGuard(Recipe):
    """Base: a statement that is exactly one call `f(...)`, which `guards` takes, is wrapped in
    `if not torch.compiler.is_compiling():` — comments above stay above the `if`, the statement's
    own trailing comment stays on it."""

    variant = "guard"

    def guards(self, call: cst.Call) -> bool:
        raise NotImplementedError

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        call = single_call_statement(node)
        if call is not None and self.on_site(node) and self.guards(call):
            body = cst.IndentedBlock(body=[node.with_changes(leading_lines=())])
            guard = cst.If(test=self.not_compiling(), body=body, leading_lines=node.leading_lines)
            self.record(node, guard, ("torch",))


# --- builders and matchers shared by several recipes ---------------------------------------------


def single_call_statement(node: cst.SimpleStatementLine) -> cst.Call | None:
    """The call of a line that is exactly one expression statement `f(...)`, else None."""
    if len(node.body) != 1 or not isinstance(node.body[0], cst.Expr):
        return None
    value = node.body[0].value
    return value if isinstance(value, cst.Call) else None


def removal(recipe: Recipe, statement: cst.BaseStatement) -> list[tuple[cst.CSTNode, Replacement]]:
    """Edits that delete `statement` and keep the comment lines above it: they move to the next
    statement, or stay on a `pass` when nothing follows (a block cannot be empty either)."""
    block = recipe.parent(statement)
    siblings = list(getattr(block, "body", ()))
    index = next((i for i, s in enumerate(siblings) if s is statement), None)
    leading = tuple(getattr(statement, "leading_lines", ()))
    keep_comments = any(line.comment is not None for line in leading)
    if index is None or len(siblings) == 1 or (keep_comments and index == len(siblings) - 1):
        return [(statement, cst.SimpleStatementLine([cst.Pass()], leading_lines=leading))]
    if not keep_comments:
        return [(statement, cst.RemovalSentinel.REMOVE)]
    following = siblings[index + 1]
    moved = following.with_changes(leading_lines=(*leading, *following.leading_lines))
    return [(statement, cst.RemovalSentinel.REMOVE), (following, moved)]


def code(text: str) -> str:
    """An example's source, written indented inside the recipe."""
    return textwrap.dedent(text).lstrip("\n")


def example(before: str, after: str) -> Example:
    return Example(code(before), code(after))
