"""Where a break's entrypoints compile, so that a Dynamo setting is written where they run it and
nowhere else. Pure over the configuration's text and the repository's sources.

- A `model:` entry is compiled by gbbot, with the entry's `compile:` options: its setting goes
  there (gbbot/fix/config_edit.py), never into a line of the repository it does not run.
- A compile in a file's `if __name__ == "__main__":` block runs only for an entrypoint that runs
  that file as its script (`run: python train.py`, `python -m pkg.train`): a `call:`, `model:` or
  `pytest` entrypoint imports the file, and the block never runs.
"""

from __future__ import annotations

import ast
import shlex
from dataclasses import dataclass

from gbbot.core.config import Config, ConfigError, Entrypoint, parse_config
from gbbot.fix import config_edit
from gbbot.fix.patch import FilePatch
from gbbot.fix.sites import CompileSite
from gbbot.recipes.branches import parsed

PYTHONS = ("python", "python3")


@dataclass(frozen=True)
class ConfigFile:
    """The configuration as the repository holds it: its path there, and its text."""

    path: str
    text: str


@dataclass(frozen=True)
class Compiles:
    """How a break's entrypoints (`names`) compile: `models`, the `model:` entries among them;
    `others`, whether any is not one; `mains`, the repository files those others run as
    `__main__` (None: not known, every compile counts); `config`, where a `model:` entry's
    `compile:` option is edited (None: outside the repository, or not known)."""

    names: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    others: bool = True
    mains: frozenset[str] | None = None
    config: ConfigFile | None = None


UNKNOWN = Compiles()


def _main_file(entry: Entrypoint) -> frozenset[str] | None:
    """The repository file a `run:` entry runs as `__main__` (none for the other kinds; None: its
    command says no file gbbot can tell)."""
    if entry.run is None:
        return frozenset()
    try:
        words = shlex.split(entry.run)
    except ValueError:
        return None
    at = next((i for i, w in enumerate(words) if w.rsplit("/", 1)[-1] in PYTHONS), None)
    rest = words[at + 1 :] if at is not None else []
    if len(rest) >= 2 and rest[0] == "-m":
        module = rest[1].replace(".", "/")
        return frozenset({f"{module}.py", f"{module}/__main__.py"})
    if rest and rest[0].endswith(".py"):
        return frozenset({rest[0].removeprefix("./")})
    return None


def compiles_of(names: tuple[str, ...], config: ConfigFile | None) -> Compiles:
    """How the entrypoints `names` of the configuration compile."""
    try:
        parsed: Config | None = parse_config(config.text, config.path) if config else None
    except ConfigError:
        parsed = None
    if parsed is None:
        return Compiles(names)
    entries = [e for e in (parsed.entrypoint(n) for n in names) if e is not None]
    models = tuple(e.name for e in entries if e.kind == "model")
    mains: frozenset[str] | None = frozenset()
    for entry in (e for e in entries if e.kind != "model"):
        found = _main_file(entry)
        mains = None if found is None or mains is None else mains | found
    return Compiles(names, models, len(models) < len(entries) or not entries, mains, config)


def in_main_block(text: str, line: int) -> bool:
    """Is `line` inside a top-level `if __name__ == "__main__":` block?"""
    tree = parsed(text)
    if tree is None:
        return False
    for node in tree.body:
        if isinstance(node, ast.If) and node.lineno <= line <= (node.end_lineno or node.lineno):
            test = ast.unparse(node.test).replace("'", '"')
            if test in ('__name__ == "__main__"', '"__main__" == __name__'):
                return True
    return False


def runs(site: CompileSite, text: str, compiles: Compiles) -> bool:
    """Does one of the break's entrypoints run the compile at `site`?"""
    return compiles.mains is None or site.path in compiles.mains or not in_main_block(text, site.line)


def not_run(sites: list[CompileSite], compiles: Compiles) -> str:
    """Why none of `sites` counts: each in a `__main__` block the entrypoints do not run."""
    where = ", ".join(dict.fromkeys(f"{s.path}:{s.line}" for s in sites))
    return (
        f'the `torch.compile` that compiles it ({where}) is in an `if __name__ == "__main__":` block '
        f"that {', '.join(compiles.names) or 'its entrypoints'} never run"
    )


def entry_patch(compiles: Compiles, flag: str, value: config_edit.Value) -> FilePatch | str:
    """The setting in the `compile:` option of each of the break's `model:` entries, as one patch of
    the configuration file, or why not."""
    if compiles.config is None:
        return "the configuration file is not in the repository, so gbbot cannot add the setting to it"
    text = compiles.config.text
    for name in compiles.models:
        edited = config_edit.with_setting(text, compiles.config.path, name, flag, value)
        if edited is None:
            return f"the `compile:` option of `{name}` in {compiles.config.path} could not take `{flag}`"
        text = edited
    return FilePatch(compiles.config.path, compiles.config.text, text)
