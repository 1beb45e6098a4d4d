"""Which code reaches a compile, across the repository's files: pure, over discover's facts.

A name reaches a compile when calling or using it compiles something or runs compiled code: a
function with a compile site in its body (a factory that returns `torch.compile(fn)` too: its
caller holds the compiled object), a `@torch.compile`d function, a module-level name assigned
`torch.compile(...)`, a class with a compile site in its body, and, to a fixed point, any function
that uses one of those — by its own name, through an import (`from pkg import layers` then
`layers.scale`), through a package's re-export, or, for a test, through a fixture it asks for.

A test reaches a compile when its own body or something it uses does: those are the tests worth
running, as node ids, rather than the whole file around them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gbbot.starter.discover import FileFacts, Function

MAX_ROUNDS = 8  # helper chains deeper than this are not followed
MAX_ALIAS_HOPS = 4  # re-exports through __init__ files


@dataclass(frozen=True)
class ReachingTest:
    node_id: str  # path::test or path::Class::test
    line: int
    why: str  # what it reaches, for the config's comment


def _own_names(facts: FileFacts) -> set[str]:
    return {f.name.split(".")[0] for f in facts.functions} | {c.name for c in facts.classes} | set(facts.compiled)


def _aliases(files: Iterable[FileFacts]) -> dict[str, str]:
    """`pkg.Name` → where `pkg/__init__.py` imported it from."""
    return {
        f"{f.module}.{local}": target
        for f in files
        if f.path.endswith("__init__.py")
        for local, target in f.bindings
        if target != f"{f.module}.{local}"
    }


class Resolver:
    """Qualified names for the names a file uses."""

    def __init__(self, files: tuple[FileFacts, ...]) -> None:
        self.aliases = _aliases(files)
        self.fixtures = {
            f.name: f"{c.module}.{f.name}" for c in files if c.is_conftest for f in c.functions if f.fixture
        }

    def _expand(self, name: str) -> str:
        for _ in range(MAX_ALIAS_HOPS):
            parts = name.split(".")
            hit = next((i for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in self.aliases), None)
            if hit is None:
                return name
            name = ".".join([self.aliases[".".join(parts[:hit])], *parts[hit:]])
        return name

    def qualified(self, facts: FileFacts, own: set[str], bindings: dict[str, str], use: str) -> str | None:
        root, _, rest = use.partition(".")
        if root in own:
            base = f"{facts.module}.{root}"
        elif root in bindings:
            base = bindings[root]
        else:
            return None
        return self._expand(f"{base}.{rest}" if rest else base)


def _prefixes(name: str) -> Iterable[str]:
    parts = name.split(".")
    return (".".join(parts[:i]) for i in range(len(parts), 0, -1))


def _seeds(files: tuple[FileFacts, ...]) -> dict[str, str]:
    """Qualified name → why it reaches a compile, before following uses."""
    found: dict[str, str] = {}
    for f in files:
        for name in f.compiled:
            found[f"{f.module}.{name}"] = f"{f.path}: {name} = torch.compile(...)"
        for fn in f.functions:
            if fn.decorated or fn.compiles:
                how = "is @torch.compile'd" if fn.decorated else "compiles"
                found[f"{f.module}.{fn.name}"] = f"{f.path}:{fn.line}: {fn.name} {how}"
        for cls in f.classes:
            if cls.compiles:
                found[f"{f.module}.{cls.name}"] = f"{f.path}:{cls.line}: {cls.name} compiles"
    return found


def _used(resolver: Resolver, facts: FileFacts, fn: Function, own: set[str], bindings: dict[str, str]) -> set[str]:
    names = set(fn.uses)
    if fn.name.split(".")[-1].startswith("test"):
        names |= {p.name for p in fn.params}  # fixtures
    qualified = set()
    klass = fn.name.split(".")[0] if "." in fn.name else None
    for use in names:
        if klass and use.startswith("self."):
            use = f"{klass}.{use[len('self.') :]}"
        q = resolver.qualified(facts, own, bindings, use)
        if q is None and use in resolver.fixtures:
            q = resolver.fixtures[use]
        if q:
            qualified.update(_prefixes(q))
    return qualified


def reaching(files: tuple[FileFacts, ...]) -> dict[str, str]:
    """Every qualified name that reaches a compile, with why."""
    resolver = Resolver(files)
    reached = _seeds(files)
    context = [(f, _own_names(f), dict(f.bindings)) for f in files]
    uses = {f"{f.module}.{fn.name}": _used(resolver, f, fn, own, b) for f, own, b in context for fn in f.functions}
    for _ in range(MAX_ROUNDS):
        grew = False
        for name, used in uses.items():
            if name in reached:
                continue
            hit = next((u for u in sorted(used) if u in reached), None)
            if hit is not None:
                reached[name] = reached[hit]
                grew = True
        if not grew:
            break
    return reached


def _is_test(fn: Function) -> bool:
    parts = fn.name.split(".")
    return parts[-1].startswith("test") and (len(parts) == 1 or parts[0].startswith("Test"))


def reaching_tests(files: tuple[FileFacts, ...], reached: dict[str, str] | None = None) -> list[ReachingTest]:
    """The tests, in path and line order, whose body or whose helpers and fixtures compile."""
    reached = reaching(files) if reached is None else reached
    tests = []
    for f in files:
        if not f.is_test:
            continue
        for fn in sorted(f.functions, key=lambda fn: fn.line):
            why = reached.get(f"{f.module}.{fn.name}")
            if _is_test(fn) and why is not None:
                tests.append(ReachingTest(f"{f.path}::{fn.name.replace('.', '::')}", fn.line, why))
    return tests
