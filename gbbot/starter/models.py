"""`model:` candidates: the repository's main models, ranked, for `gbbot init`'s child to build
small and call (gbbot/child/try_models.py). Pure, over discover's facts.

- A registry (functions registered with `@register_model`, timm's way) first: the smallest variant
  of each family (a file of variants), the families with the smallest, then the most, variants
  first, through the repository's `create_model(name, pretrained=False)` when it has one.
- Classes: `nn.Module` subclasses (through the repository's own bases) that no other class uses —
  whole models, not their blocks — those a package's `__init__` exports first, in its order; not
  those of a registry's files (what its variants build).
- Factories: functions that return one of those classes or an `nn.Sequential` (`DiT_S_8()`),
  the smallest of each class by the size words in their names and the sizes they pass; not the
  blocks a class builds with them.

The repository's own values go with them: the literal keywords it builds a class with (a test's
`Perceiver(num_freq_bands=3)`), and the settings of its `*Config` classes and YAML/JSON files,
for the parameters no name tells.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from gbbot.core import model_sizes as sizes
from gbbot.starter import reach
from gbbot.starter.discover import ClassFacts, FileFacts, Scan

MODULE_BASES = frozenset({"nn.Module", "torch.nn.Module", "Module"})
SEQUENTIAL = frozenset({"nn.Sequential", "torch.nn.Sequential", "Sequential"})
FACTORY_NAMES = ("create_model", "build_model", "get_model")
MAX_PROPOSED = 3  # models written active in a starter config: each costs `gbbot check` a compile
MAX_TRIED = 6  # candidates init's child builds
MAX_INNER = 3  # models a wrapper is tried with


@dataclass(frozen=True)
class ModelCandidate:
    name: str
    target: str  # module:callable
    why: str
    args: tuple = ()  # given as they are: a registry's variant name
    kwargs: tuple[tuple[str, Any], ...] = ()  # given as they are: pretrained=False
    example: tuple[tuple[str, Any], ...] = ()  # the literal keywords the repository builds it with
    inner: tuple[str, ...] = ()  # the other models, for a wrapper's model parameter

    def request(self) -> dict:
        """What init's child is sent for it."""
        return {"name": self.name, "target": self.target, "args": list(self.args), "kwargs": dict(self.kwargs),
                "example": dict(self.example), "inner": list(self.inner)}  # fmt: skip


@dataclass(frozen=True)
class Built:
    """What init's child made of a candidate: the arguments that ran, or its error and those last tried."""

    args: tuple = ()
    kwargs: tuple[tuple[str, Any], ...] = ()
    inputs: tuple = ()
    input_kwargs: tuple[tuple[str, Any], ...] = ()
    error: str | None = None  # None: built and called


def _is_module(cls: ClassFacts, modules: set[str]) -> bool:
    return any(base in MODULE_BASES or base.split(".")[-1] in modules for base in cls.bases)


def module_classes(files: tuple[FileFacts, ...]) -> list[tuple[FileFacts, ClassFacts]]:
    """nn.Module subclasses, through local base classes (by name), outside tests."""
    names: set[str] = set()
    for _ in range(4):
        names |= {c.name for f in files for c in f.classes if _is_module(c, names)}
    return [(f, c) for f in files if not f.is_test for c in f.classes if c.name in names and not c.name.startswith("_")]


def _users(files: tuple[FileFacts, ...]) -> dict[str, set[str]]:
    """Name → the classes whose methods name it: a class or builder another class uses is a
    part of it (a Unet's `Upsample` block), not a whole model."""
    found: dict[str, set[str]] = {}
    for f in files:
        for fn in f.functions if not f.is_test else ():
            if "." in fn.name:
                for use in fn.uses:
                    found.setdefault(use.split(".")[-1], set()).add(fn.name.split(".")[0])
    return found


def _used(users: dict[str, set[str]], name: str) -> bool:
    return bool(users.get(name, set()) - {name})


def settings(files: tuple[FileFacts, ...], file_settings: tuple[tuple[str, object], ...]) -> dict[str, object]:
    """The repository's configured values by name: its `*Config` classes' literal fields (the
    first class naming one winning), then its YAML and JSON files' (the first file winning)."""
    found: dict[str, object] = dict(reversed(file_settings))
    classes = {c.name for _, c in module_classes(files)}
    for cls in reversed([c for f in files for c in f.classes if c.name.endswith(sizes.CONFIG_SUFFIXES)]):
        if cls.name not in classes:
            found.update(cls.fields)
    return found


def _examples(scan: Scan) -> dict[str, dict]:
    """How the repository itself builds each class with literal keywords (its code, its README):
    the call naming the most."""
    found: dict[str, dict] = {}
    for name, keywords in [*(c for facts in scan.files for c in facts.constructions), *scan.shown]:
        name = name.rsplit(".", 1)[-1]
        if len(keywords) > len(found.get(name, {})):
            found[name] = dict(keywords)
    return found


def _public(files: tuple[FileFacts, ...]) -> dict[str, tuple[int, str]]:
    """Qualified name → (its place among the exports, the shortest module exporting it):
    `pkg.models.unet.Unet` → (0, "pkg") when `pkg/__init__.py` imports it first."""
    resolver = reach.Resolver(files)
    found: dict[str, tuple[int, str]] = {}
    for f in sorted((f for f in files if f.path.endswith("__init__.py")), key=lambda f: f.module.count(".")):
        for local, target in f.bindings:
            found.setdefault(resolver.qualified(f, set(), dict(f.bindings), local) or target, (len(found), f.module))
    return found


def _target(module: str, name: str, public: dict[str, tuple[int, str]]) -> str:
    exported = public.get(f"{module}.{name}")
    return f"{exported[1] if exported else module}:{name}"


def enough_variants(scan: Scan) -> bool:
    """Whether the registry alone gives as many candidates as init tries: the other files' classes
    then need not be read."""
    return len({module for module, _ in scan.registered}) >= MAX_TRIED


def _registry(scan: Scan, public: dict[str, tuple[int, str]]) -> list[ModelCandidate]:
    """The smallest variant of each registered family: the families with the smallest, then the
    largest families, first."""
    families = Counter(module for module, _ in scan.registered)
    smallest = {
        m: min((n for mm, n in scan.registered if mm == m), key=lambda n: (sizes.size_rank(n), n)) for m in families
    }
    factory = next(
        (f"{f.module}.{fn.name}" for f in scan.files if not f.is_test for fn in f.functions
         if fn.name in FACTORY_NAMES and any(p.name == "pretrained" for p in fn.params)),
        None,
    )  # fmt: skip
    found = []
    for module, count in sorted(families.items(), key=lambda mc: (sizes.size_rank(smallest[mc[0]]), -mc[1])):
        name = smallest[module]
        why = f"{module.replace('.', '/')}.py registers {count} models; {name} is its smallest by name"
        if factory is None:
            found.append(ModelCandidate(name, _target(module, name, public), why, kwargs=(("pretrained", False),)))
        else:
            target = _target(*factory.rsplit(".", 1), public)
            found.append(ModelCandidate(name, target, why, (name,), (("pretrained", False),)))
    return found


def _factories(
    files: tuple[FileFacts, ...], classes: set[str], users: dict[str, set[str]]
) -> dict[str, list[tuple[FileFacts, Any]]]:
    """Module-level functions that return a model, by what they build (a class, or Sequential)."""
    found: dict[str, list] = {}
    for facts in files:
        for fn in facts.functions if not facts.is_test else ():
            built = sorted({r.split(".")[-1] for r in fn.returns} & classes) or (
                ["Sequential"] if fn.returns & SEQUENTIAL else []
            )
            if built and "." not in fn.name and not fn.name.startswith("_") and not _used(users, fn.name):
                found.setdefault(built[0], []).append((facts, fn))
    return found


@functools.lru_cache(maxsize=2)
def candidates(scan: Scan) -> list[ModelCandidate]:
    """The models to build, the main ones first: a registry's variants, then the whole classes
    (not those of the registry's files: the registry builds them), each followed by its smallest
    factory, then the factories of nn.Sequential."""
    files = scan.files
    public = _public(files)
    registries = {module for module, _ in scan.registered}

    shown = list(dict.fromkeys(name for name, _ in scan.shown))

    def place(fc: tuple[FileFacts, ClassFacts]) -> tuple:
        """(its place in the README, among the exports, its path and line): the README names a
        class as it imports it (`vit_pytorch.ViT`), or bare when the block imports nothing."""
        (facts, cls), unknown = fc, (len(public), "")
        exported, module = public.get(f"{facts.module}.{cls.name}", unknown)
        names = {cls.name, f"{facts.module}.{cls.name}", f"{module}.{cls.name}"}
        readme = next((i for i, name in enumerate(shown) if name in names), len(shown))
        return readme, exported, facts.path, cls.line

    # whole models, and those the README builds or the package exports though another class uses
    # them; the README's first, then the exported ones
    users = _users(files)
    main = [fc for fc in module_classes(files) if place(fc)[:2] != (len(shown), len(public))]
    whole = [fc for fc in module_classes(files) if fc in main or not _used(users, fc[1].name)]
    classes = sorted((fc for fc in whole if fc[0].module not in registries), key=place)
    examples = _examples(scan)
    factories = _factories(files, {c.name for _, c in module_classes(files)}, users)
    targets = [_target(f.module, c.name, public) for f, c in classes]
    plain = [(f.module, t) for (f, c), t in zip(classes, targets, strict=True) if not _wraps(f, c)]
    found = _registry(scan, public)
    for (facts, cls), target in zip(classes, targets, strict=True):
        whose = "its README or package shows" if (facts, cls) in main else "no other class uses"
        why = f"{facts.path}:{cls.line}: {cls.name} is an nn.Module {whose}"
        others = sorted((mt for mt in plain if mt[1] != target), key=lambda mt: _unlike(mt, (facts.module, target)))
        inner = [t for _, t in others][:MAX_INNER]
        example = tuple(examples.get(cls.name, {}).items())
        found.append(ModelCandidate(cls.name, target, why, example=example, inner=tuple(inner)))
        found += _smallest(factories.pop(cls.name, []), public)
    for built in factories.values():
        found += _smallest(built, public)
    return _unique(found)


def _unique(found: list[ModelCandidate]) -> list[ModelCandidate]:
    """Each name once: a second `GPT` is `GPT-2` (the child's results are by name)."""
    seen: Counter[str] = Counter()
    named = []
    for candidate in found:
        seen[candidate.name] += 1
        suffix = f"-{seen[candidate.name]}" if seen[candidate.name] > 1 else ""
        named.append(replace(candidate, name=candidate.name + suffix))
    return named


def _wraps(facts: FileFacts, cls: ClassFacts) -> bool:
    """Whether its constructor takes a model (`GaussianDiffusion(model, …)`): then it is no inner model."""
    init = next((fn for fn in facts.functions if fn.name == f"{cls.name}.__init__"), None)
    return init is not None and any(sizes.MODEL_PARAMS.fullmatch(p.name) for p in init.params)


def _unlike(inner: tuple[str, str], wrapper: tuple[str, str]) -> tuple[bool, int]:
    """How unlikely a wrapper's model is, both (defining module, target): from another module,
    and sharing little of the name's end (`Unet1D` for `GaussianDiffusion1D`)."""
    shared = sizes.shared_start(inner[1].rsplit(":", 1)[-1][::-1], wrapper[1].rsplit(":", 1)[-1][::-1])
    return inner[0] != wrapper[0], -shared


def _smallest(factories: list[tuple[FileFacts, Any]], public: dict) -> list[ModelCandidate]:
    if not factories:
        return []
    facts, fn = min(factories, key=lambda ff: (sizes.size_rank(ff[1].name), sizes.cost(ff[1].literals), ff[1].line))
    why = f"{facts.path}:{fn.line}: {fn.name}() returns a model, the smallest of {len(factories)} such"
    return [ModelCandidate(fn.name, _target(facts.module, fn.name, public), why)]


def entry_lines(candidate: ModelCandidate, built: Built | None) -> list[str]:
    """The YAML lines of one model: entry (JSON flow style is valid YAML), its built arguments
    when it was built, else those given."""
    args, kwargs = (built.args, built.kwargs) if built else (candidate.args, candidate.kwargs)
    lines = [f"- name: {candidate.name}", f"  model: {candidate.target}"]
    lines += [f"  args: {json.dumps(list(args))}"] if args else []
    lines += [f"  kwargs: {json.dumps(dict(kwargs))}"] if kwargs else []
    if built and built.error is None:
        lines.append(f"  inputs: {json.dumps(list(built.inputs))}")
        lines += [f"  input_kwargs: {json.dumps(dict(built.input_kwargs))}"] if built.input_kwargs else []
    else:
        lines.append("  inputs: [{tensor: [2, 8]}]  # one literal or tensor spec per forward argument")
    return lines


TEMPLATE = """\
  # - name: my-model
  #   model: mypkg.model:MyModel        # the nn.Module class to build
  #   kwargs: {dim: 32, depth: 2}        # its constructor's arguments (args: for positional ones)
  #   inputs: [{tensor: [2, 8], dtype: long, high: 100}]   # forward's arguments: literals or tensor specs
  #   # method: generate                 # another method than forward
  #   # compile: {fullgraph: false}      # torch.compile's options
"""
