"""Apply what recipes recorded: one pass over the module, imports added, the new text. Pure on text.

Recipes look at one break site (a line) each and record `Edit`s; the engine checks that the edits of
several sites do not overlap, replaces the recorded nodes (by identity), adds the imports the
replacements name (reusing an existing `import torch as T`), and returns the new source.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import libcst as cst
import libcst.matchers as m
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import MetadataWrapper, PositionProvider

from gbbot.recipes.base import BreakSite, Edit, Names, Recipe, wrapped


@dataclass(frozen=True)
class Request:
    """Apply `recipe` at `site`; `key` names the request in the outcome (a fingerprint)."""

    key: str
    recipe: type[Recipe]
    site: BreakSite


@dataclass(frozen=True)
class Outcome:
    after: str
    applied: tuple[str, ...]  # request keys whose edits are in `after`
    missed: tuple[tuple[str, str], ...]  # (key, why not)


def torch_names(module: cst.Module) -> Names:
    """The name `torch` is bound to at the top of the module: `import torch as T` → T."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.Import):
                continue
            for alias in small.names:
                dotted = cst.helpers.get_full_name_for_node(alias.name) or ""
                if dotted == "torch" and alias.asname is not None:
                    return Names(cst.helpers.get_full_name_for_node(alias.asname.name) or "torch", True)
                if dotted == "torch" or (dotted.startswith("torch.") and alias.asname is None):
                    return Names("torch", True)
    return Names("torch", False)


class _Replace(cst.CSTTransformer):
    def __init__(self, edits: Sequence[Edit]) -> None:
        super().__init__()
        self.replacements = {id(edit.node): edit.replacement for edit in edits}

    def on_leave(self, original_node, updated_node):  # type: ignore[no-untyped-def] - libcst's signature
        return self.replacements.get(id(original_node), updated_node)


def _span(wrapper_positions: dict, edit: Edit) -> tuple[int, int, int, int]:
    where = wrapper_positions[edit.node]
    return where.start.line, where.start.column, where.end.line, where.end.column


def _comments(nodes: Sequence[cst.CSTNode]) -> Counter[str]:
    return Counter(c.value for node in nodes for c in m.findall(node, m.Comment()))


def drops_comments(edit: Edit) -> bool:
    """Would the replacement lose a comment of the code it replaces? (Then it is not offered:
    comments survive a fix, or there is no fix.)"""
    if not edit.keeps_comments:
        return False
    replacement = edit.replacement
    if isinstance(replacement, cst.RemovalSentinel):
        return bool(_comments([edit.node]))
    nodes = list(replacement.nodes) if isinstance(replacement, cst.FlattenSentinel) else [replacement]
    return bool(_comments([edit.node]) - _comments(nodes))


def _code(replacement: object) -> str:
    """A replacement as source text, to tell two recipes' identical edits from different ones."""
    if isinstance(replacement, cst.FlattenSentinel):
        return "\n".join(_code(n) for n in replacement.nodes)
    if isinstance(replacement, cst.CSTNode):
        return cst.Module([]).code_for_node(replacement)
    return repr(replacement)  # RemovalSentinel


def _inserted(edit: Edit) -> list[cst.CSTNode] | None:
    """The statements an edit only inserts before its node (the node itself kept as it was, its
    comment lines moved up to the first one), else None."""
    replacement = edit.replacement
    if not isinstance(replacement, cst.FlattenSentinel) or len(replacement.nodes) < 2:
        return None
    *before, last = replacement.nodes
    kept = getattr(edit.node, "leading_lines", None) is not None and last.deep_equals(
        edit.node.with_changes(leading_lines=())  # type: ignore[attr-defined]
    )
    return list(before) if kept else None


def _joined_before(taken: list[Edit], new: Sequence[Edit]) -> bool:
    """When `new` only inserts statements before a statement a taken edit also only inserts
    before, one edit inserts both (each setting turned on before the same compile, once however
    many breaks it is for); True then."""
    if len(new) != 1 or (added := _inserted(new[0])) is None:
        return False
    for i, edit in enumerate(taken):
        earlier = _inserted(edit) if edit.node is new[0].node else None
        if earlier is not None:
            there = {_code(s.with_changes(leading_lines=())) for s in earlier}  # type: ignore[attr-defined]
            fresh = [s.with_changes(leading_lines=()) for s in added]  # type: ignore[attr-defined]
            fresh = [s for s in fresh if _code(s) not in there]
            last = edit.replacement.nodes[-1]  # type: ignore[union-attr]
            imports = tuple(dict.fromkeys((*edit.imports, *new[0].imports)))
            taken[i] = replace(edit, replacement=cst.FlattenSentinel([*earlier, *fresh, last]), imports=imports)
            return True
    return False


def _wrapping_patch(edit: Edit) -> cst.Call | None:
    """The `torch._dynamo.config.patch(...)` of an edit that only wraps its statement in a `with`."""
    with_node = edit.replacement
    if not isinstance(with_node, cst.With) or len(with_node.items) != 1:
        return None
    body = with_node.body.body if isinstance(with_node.body, cst.IndentedBlock) else ()
    kept = len(body) == 1 and body[0].deep_equals(edit.node.with_changes(leading_lines=()))  # type: ignore[attr-defined]
    call = with_node.items[0].item
    return call if kept and isinstance(call, cst.Call) else None


def _joined_with(taken: list[Edit], new: Sequence[Edit]) -> bool:
    """When `new` wraps a statement in `with torch._dynamo.config.patch(...)` that a taken edit
    wraps so too, one `with` takes both settings (two settings around one call); True then."""
    added = _wrapping_patch(new[0]) if len(new) == 1 else None
    if added is None:
        return False
    for i, edit in enumerate(taken):
        there = _wrapping_patch(edit) if edit.node is new[0].node else None
        if there is None:
            continue
        named = {a.keyword.value for a in there.args if a.keyword}
        extra = [a for a in added.args if a.keyword and a.keyword.value not in named]
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        args = [*there.args[:-1], there.args[-1].with_changes(comma=comma), *extra] if extra else list(there.args)
        with_node = edit.replacement  # a With, as _wrapping_patch found
        item = with_node.items[0].with_changes(item=there.with_changes(args=args))  # type: ignore[union-attr]
        taken[i] = replace(edit, replacement=with_node.with_changes(items=[item]))  # type: ignore[union-attr]
        return True
    return False


def _overlaps(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return (a[0], a[1]) <= (b[2], b[3]) and (b[0], b[1]) <= (a[2], a[3])


def _unusable(request: Request, edits: Sequence[Edit]) -> str | None:
    """Why the edits a request's recipe recorded cannot be taken, whatever else the file gets."""
    recipe = request.recipe
    if not edits:
        return f"line {request.site.line} is not a pattern the {recipe.id} recipe rewrites ({recipe.title})"
    if any(drops_comments(e) for e in edits):
        return f"the {recipe.id} recipe ({recipe.variant}) would drop a comment there; rewrite that line by hand"
    return None


def _collect(
    wrapper: MetadataWrapper, names: Names, requests: Sequence[Request]
) -> tuple[list[Edit], list[str], list[tuple[str, str]]]:
    positions = wrapper.resolve(PositionProvider)
    edits: list[Edit] = []
    made: set[tuple[tuple[int, int, int, int], str]] = set()  # (span, replacement code) of the edits taken
    applied: list[str] = []
    missed: list[tuple[str, str]] = []
    for request in requests:
        recipe = request.recipe(request.site, names)
        wrapper.visit(recipe)
        why_not = _unusable(request, recipe.edits)
        if why_not is not None:
            missed.append((request.key, why_not))
            continue
        spans = [_span(positions, e) for e in recipe.edits]
        written = {(span, _code(e.replacement)) for span, e in zip(spans, recipe.edits, strict=True)}
        # two breaks on one statement, one guard: the same edit, made once; two settings, one place
        if written <= made or _joined_before(edits, recipe.edits) or _joined_with(edits, recipe.edits):
            applied.append(request.key)
            continue
        if any(_overlaps(s, t) for s in spans for t, _ in made):
            missed.append((request.key, "overlaps another fix in the same file; apply that one first"))
            continue
        edits.extend(recipe.edits)
        made |= written
        applied.append(request.key)
    return edits, applied, missed


def _with_imports(module: cst.Module, names: Sequence[str]) -> cst.Module:
    context = CodemodContext()
    for name in names:
        AddImportsVisitor.add_needed_import(context, name)
    return AddImportsVisitor(context).transform_module(module)


def apply(source: str, requests: Sequence[Request]) -> Outcome:
    """Run every request's recipe on `source` and apply the edits that do not collide."""
    wrapper = wrapped(source)
    names = torch_names(wrapper.module)
    edits, applied, missed = _collect(wrapper, names, requests)
    if not edits:
        return Outcome(source, (), tuple(missed))
    module = wrapper.module.visit(_Replace(edits))
    if any("torch" in e.imports for e in edits) and not names.torch_imported:
        module = _with_imports(module, ["torch"])
    others = sorted({name for e in edits for name in e.imports} - {"torch"})
    if others:  # `logging` for a logger setting; nothing when the module imports it already
        module = _with_imports(module, others)
    released = {r for e in edits for r in e.released}
    if released:  # a patch must not leave an import that linters then flag as unused
        context = CodemodContext()
        for module_name, name, alias in sorted(released, key=str):
            RemoveImportsVisitor.remove_unused_import(context, module_name, name, alias)
        module = RemoveImportsVisitor(context).transform_module(module)
    return Outcome(module.code, tuple(applied), tuple(missed))
