"""A finished override for a break inside a library method: the scaffold's subclass, with the
breaking line rewritten by the recipe that rewrites such a line in the user's own code, written
into the user's file that builds the model, and used there (`Checked()` → `CompilableChecked()`),
under a comment saying where the copy came from (package, version, file:line). Verified like any
fix; where no recipe rewrites the line, or the copied method calls what no graph break needs (a
process, the network, files, code from a string: scaffold.reaches_out), the scaffold stays, to
finish by hand. Pure: files through a reader, the library's source through a lookup."""

from __future__ import annotations

import ast
from typing import ClassVar

import libcst as cst

from gbbot.core.model import GraphBreak
from gbbot.fix import scaffold
from gbbot.recipes import by_id, chosen, engine, variants
from gbbot.recipes.base import BreakSite, Recipe, SourceError
from gbbot.recipes.branches import parsed

MARK = "gbbot: the rewritten line"


def _copied_class(brk: GraphBreak, library: scaffold.LibraryFrame, owner: str) -> tuple[str, int] | None:
    """`class Compilable<owner>(<owner>):` with the library method copied, as a module that imports
    what it needs, and the line of the breaking statement in it."""
    body = scaffold.copied_definition(library, MARK)
    origin = f"# Copied from {library.origin}, its breaking line rewritten by gbbot."
    head = [f"from {library.module} import {owner}", "", "", origin, f"class Compilable{owner}({owner}):"]
    text = "\n".join([*head, *("    " + line if line else "" for line in body.splitlines()), ""])
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if line.strip() == f"# {MARK}"), None)
    if at is None:
        return None
    del lines[at]
    return "\n".join(lines) + "\n", at + 1  # the breaking line now sits where the mark was


def rewritten_class(
    brk: GraphBreak, lookup: scaffold.SourceLookup
) -> tuple[str, type[Recipe], str, scaffold.LibraryFrame] | None:
    """The subclass's source with the breaking line rewritten, the recipe that rewrote it, the
    class it subclasses, and the library frame it copies; None when the method cannot be copied or
    no recipe of the break's kind rewrites its line."""
    library = scaffold.locate(brk, lookup)
    owner = scaffold._owner(library.qualname) if library else None
    site = brk.library_site
    if library is None or owner is None or site is None or scaffold.reaches_out(library):
        return None
    if (library.frame.file, library.frame.line) != (site.path, site.line):
        return None
    copied = _copied_class(brk, library, owner)
    own = by_id(brk.gb_id)
    if copied is None or own is None:
        return None
    text, line = copied
    for recipe in variants(chosen(own, library.source, site.line, site.code)):
        if recipe.at_compile_site:
            continue
        try:
            outcome = engine.apply(text, [engine.Request("override", recipe, BreakSite(line))])
        except SourceError:
            return None
        if outcome.applied:
            sound, _why = scaffold.sound_text(brk, library)  # the copy names nothing it cannot import
            return (outcome.after, recipe, owner, library) if sound else None
    return None


class UseOverride(Recipe):
    """Base of the recipe made for one override: on the line that makes the library's class
    (`model = compiled(Checked())`), the class becomes the subclass, whose definition goes before
    the top-level statement holding that line. `owner`, `name`, `definition`: made per break."""

    variant = "override"
    title = "a subclass that overrides the library method, its breaking line rewritten"
    owner: ClassVar[str]
    name: ClassVar[str]
    definition: ClassVar[str]  # module text: imports, then the class

    def visit_Module(self, node: cst.Module) -> None:
        for statement in node.body:
            if self.edits or not self.on_site(statement):
                continue
            renamed = statement.visit(_Rename(self.owner, self.name))
            if renamed.deep_equals(statement):
                return
            module = cst.parse_module(self.definition)  # a comment above its first statement is its header
            added = module.body
            lines = (*statement.leading_lines, *module.header, *added[0].leading_lines)
            first = added[0].with_changes(leading_lines=lines)
            spacing = [cst.EmptyLine(), cst.EmptyLine()]
            after = renamed.with_changes(leading_lines=spacing)  # type: ignore[union-attr]
            self.record(statement, cst.FlattenSentinel([first, *added[1:], after]), ("torch",))


class _Rename(cst.CSTTransformer):
    """`Owner(...)` → `Name(...)` (calls only: an import or an isinstance check keeps the name)."""

    def __init__(self, owner: str, name: str) -> None:
        super().__init__()
        self.owner, self.name = owner, name

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if isinstance(updated_node.func, cst.Name) and updated_node.func.value == self.owner:
            return updated_node.with_changes(func=cst.Name(self.name))
        return updated_node


def made_at(owner: str, module: str, texts: dict[str, str]) -> list[tuple[str, int]]:
    """(file, line) of every call `Owner(...)` in the repository's files that import `Owner` from
    the library's module (or its package)."""
    package = module.split(".")[0]
    found: list[tuple[str, int]] = []
    for path, text in texts.items():
        tree = parsed(text)
        if tree is None:
            continue
        imported = any(
            isinstance(n, ast.ImportFrom)
            and (n.module or "").split(".")[0] == package
            and any(a.name == owner and a.asname is None for a in n.names)
            for n in tree.body
        )
        if imported:
            calls = (n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name))
            found += [(path, c.lineno) for c in calls if c.func.id == owner]  # type: ignore[attr-defined]
    return found


def override_recipe(
    brk: GraphBreak, lookup: scaffold.SourceLookup, texts: dict[str, str]
) -> tuple[type[UseOverride], tuple[str, int]] | None:
    """The recipe that writes and uses the finished subclass, and where (the one place the
    repository's files, `texts`, make the library's class); None when there is none, or more than
    one place."""
    made = rewritten_class(brk, lookup)
    if made is None:
        return None
    definition, recipe, owner, library = made
    name = f"Compilable{owner}"
    places = made_at(owner, library.module, texts)
    if len(places) != 1:
        return None
    body = _with_imports(definition, library, texts[places[0][0]])
    if body is None:
        return None
    attributes = {
        "id": recipe.id,
        "gb_ids": recipe.gb_ids,
        "owner": owner,
        "name": name,
        "definition": body,
        "with_setting": getattr(recipe, "with_setting", None),
        "description": (
            f"`{name}` subclasses the library's `{owner}` in your code and overrides the method whose "
            f"line breaks the graph, that line rewritten by the {recipe.id} recipe ({recipe.title}): "
            f"{recipe.description} The line that makes a `{owner}` makes a `{name}` instead. The "
            "installed library is not touched."
        ),
    }
    return type(f"UseOverride_{name}", (UseOverride,), attributes), places[0]


def _with_imports(definition: str, library: scaffold.LibraryFrame, user_text: str) -> str | None:
    """The subclass as the user's file gets it: without the import of the class it subclasses (the
    file imports it already), with an import from the library's module of every other name the
    copied method reads that the file does not bind (a decorator, a helper, an output class);
    None when the copy would read a name the library's module does not bind either."""
    rest = "\n".join(line for line in definition.splitlines() if not line.startswith(("from ", "import ")))
    try:
        bound = scaffold.module_bindings(user_text)
        needed = scaffold.unbound_names(definition) - {"torch"}  # the recipe imports torch
    except SyntaxError:
        return None
    if needed - scaffold.module_bindings(library.source):
        return None
    wanted = sorted(needed - bound)
    line = f"from {library.module} import {', '.join(wanted)}  # what the copied method uses\n\n\n" if wanted else ""
    return line + rest.strip("\n") + "\n"
