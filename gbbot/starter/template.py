"""`gbbot init`: a commented starter .gbbot.yml from what gbbot/starter/discover.py found. Pure but `write`.

One entrypoint per likely candidate:
- a script that compiles and has `if __name__ == "__main__":` → `run: python path/to/script.py`;
- a module-level function that takes no arguments and is `@torch.compile`d, or (outside scripts)
  compiles in its body → `call: module:function`;
- a test file that compiles or imports a module that does → `pytest: path/to/test_file.py`.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gbbot.core.config import CONFIG_NAME, NAME_RE, parse_config
from gbbot.core.errors import GbbotError
from gbbot.starter.discover import FileFacts, Scan

MAX_ENTRYPOINTS = 20  # more is a suite to curate, not a starter; the rest are listed as comments
MAX_LINES_SHOWN = 4
NOT_CALLED = frozenset({"main", "cli", "run", "train"})  # zero-argument, but they parse sys.argv or run long
PLAIN_SCALAR = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./:=+, -]*")
NEXT_COMMAND = "gbbot check"


@dataclass(frozen=True)
class Candidate:
    kind: str  # run | call | pytest
    name: str
    target: str  # the value of its run:, call: or pytest: key
    why: tuple[str, ...]  # comment lines


def _lines(sites: Sequence[int]) -> str:
    shown = ", ".join(map(str, sites[:MAX_LINES_SHOWN]))
    return f"line{'s' * (len(sites) != 1)} " + shown + (", …" if len(sites) > MAX_LINES_SHOWN else "")


def _script(facts: FileFacts) -> Candidate:
    return Candidate(
        "run",
        Path(facts.path).stem,
        f"python {shlex.quote(facts.path)}",
        (
            f"{facts.path} compiles ({_lines(facts.sites)}) and runs as a script.",
            "Add the flags a short run needs, e.g. --steps 2 or --device cpu.",
        ),
    )


def _calls(facts: FileFacts) -> Iterable[Candidate]:
    for function in facts.functions:
        wanted = function.decorated or (function.compiles and not facts.main_guard)
        if not wanted or not function.zero_args or function.name.startswith("_") or function.name in NOT_CALLED:
            continue
        how = "is @torch.compile'd" if function.decorated else "compiles"
        yield Candidate(
            "call",
            function.name,
            f"{facts.module}:{function.name}",
            (f"{facts.path}:{function.line}: {function.name}() {how} and takes no arguments.",),
        )


def _reached(test: FileFacts, compiling: dict[str, FileFacts]) -> list[FileFacts]:
    return [compiling[name] for name in test.imports if name in compiling and compiling[name] is not test]


def _test(facts: FileFacts, compiling: dict[str, FileFacts]) -> Candidate | None:
    reached = _reached(facts, compiling)
    if not facts.sites and not reached:
        return None
    why = [f"{facts.path} compiles ({_lines(facts.sites)})."] if facts.sites else []
    why += [f"{facts.path} imports {r.module}, which compiles ({_lines(r.sites)})." for r in reached[:3]]
    return Candidate("pytest", Path(facts.path).stem, facts.path, tuple(why))


def candidates(scan: Scan) -> list[Candidate]:
    """Pure: scripts first, then functions, then tests, each in path order."""
    compiling = {f.module: f for f in scan.files if f.sites}
    code = [f for f in scan.files if not f.is_test and f.sites]
    found = [_script(f) for f in code if f.main_guard]
    found += [c for f in code for c in _calls(f)]
    found += [c for c in (_test(f, compiling) for f in scan.files if f.is_test) if c]
    return _unique_names(found)


def _unique_names(found: list[Candidate]) -> list[Candidate]:
    seen: set[str] = set()
    named = []
    for candidate in found:
        base = "-".join(NAME_RE.findall(candidate.name)).strip(".") or candidate.kind
        name, n = base, 2
        while name in seen:
            name, n = f"{base}-{n}", n + 1
        seen.add(name)
        named.append(Candidate(candidate.kind, name, candidate.target, candidate.why))
    return named


def _scalar(text: str) -> str:
    """A YAML scalar: plain when it reads unambiguously, else JSON's quoting (valid YAML)."""
    plain = PLAIN_SCALAR.fullmatch(text) and ": " not in text and not text.endswith(":")
    return text if plain else json.dumps(text)


def render(chosen: Sequence[Candidate], more: Sequence[Candidate], scan: Scan) -> str:
    """Pure: the starter config's text."""
    lines = [
        "# gbbot's starter config, written by `gbbot init` from the torch.compile call sites it found",
        f"# in {scan.read} Python files (read with LibCST; nothing was run). Review it, then run:",
        f"#   {NEXT_COMMAND}",
        "# Keys: docs/configuration.md. call: entrypoints take args/kwargs, e.g.",
        "#   args: [{tensor: [2, 8], dtype: long, high: 100}]",
        "version: 1",
        "entrypoints:",
    ]
    for candidate in chosen:
        lines += [f"  # {why}" for why in candidate.why]
        lines += [f"  - name: {candidate.name}", f"    {candidate.kind}: {_scalar(candidate.target)}"]
    if more:
        lines.append(f"  # {len(more)} more candidates, left out of a starter config:")
        lines += [f"  #   {c.kind}: {c.target}" for c in more]
    lines += [
        "mode: fast       # fast: the same breaks without code generation; faithful: your own backend",
        "fail_on: new     # new | any | none: what makes `gbbot check` / `gbbot diff` fail",
    ]
    return "\n".join(lines) + "\n"


def starter(scan: Scan) -> tuple[str, list[Candidate]]:
    """The config text and its entrypoints; GbbotError when there is nothing to run."""
    found = candidates(scan)
    if not found:
        more = f" (stopped after {scan.read} files: pass --root for a smaller tree)" if scan.truncated else ""
        raise GbbotError(
            f"found no torch.compile call sites to run in {scan.read} Python files{more}; "
            f"write {CONFIG_NAME} by hand (docs/configuration.md)"
        )
    chosen, more = found[:MAX_ENTRYPOINTS], found[MAX_ENTRYPOINTS:]
    text = render(chosen, more, scan)
    parse_config(text, CONFIG_NAME)  # what init writes, check reads: a ConfigError here is a bug
    return text, chosen


def write(root: Path, text: str) -> Path:
    """Create the config; never replace one (`x` mode: also safe against a file appearing now)."""
    target = root / CONFIG_NAME
    try:
        with target.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise GbbotError(
            f"{target} already exists; gbbot init never overwrites it "
            "(`gbbot init --print` shows the suggestion without writing)"
        ) from None
    return target
