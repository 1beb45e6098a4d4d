"""`gbbot init`: a commented starter .gbbot.yml from what gbbot/starter/discover.py found. Pure but `write`.

One entrypoint per likely candidate:
- a script that compiles, behind `if __name__ == "__main__":` or at module level →
  `run: python path/to/script.py` with the flags a short run needs (gbbot/starter/scripts.py);
- a module-level function that takes no arguments and is `@torch.compile`d, or (outside scripts)
  compiles in its body → `call: module:function`; not a factory that only returns the compiled
  object (calling it compiles nothing);
- the tests that reach a compile, by node id, one entrypoint per test file
  (`pytest: tests/test_x.py::test_compiled`; gbbot/starter/reach.py);
- when none of those exist: the repository's nn.Module classes as `model:` entrypoints, small
  sizes guessed from parameter names, and commented templates for those it cannot fill
  (gbbot/starter/models.py).
`gbbot init` builds and calls each proposed `model:` entrypoint once before writing it
(gbbot/checks/build.py); the ones that failed are passed back here and written commented out, with
their error.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gbbot.core.config import CONFIG_NAME, NAME_RE, parse_config
from gbbot.core.doc_links import CONFIGURATION_DOC
from gbbot.core.errors import GbbotError
from gbbot.starter import models, reach, scripts
from gbbot.starter.discover import FileFacts, Scan
from gbbot.starter.environment import EnvironmentFiles, setup_lines

MAX_ENTRYPOINTS = 20  # more is a suite to curate, not a starter; the rest are listed as comments
MAX_LINES_SHOWN = 4
MAX_TESTS_PER_FILE = 10  # node ids in one pytest: entrypoint
NOT_CALLED = frozenset({"main", "cli", "run", "train"})  # zero-argument, but they parse sys.argv or run long
PLAIN_SCALAR = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./:=+, -]*")
NEXT_COMMAND = "gbbot check"


@dataclass(frozen=True)
class Candidate:
    kind: str  # run | call | pytest | model
    name: str
    target: str  # the value of its run:, call:, pytest: or model: key
    why: tuple[str, ...]  # comment lines
    extra: tuple[str, ...] = ()  # more keys of the entry, as YAML lines (a model's kwargs: and inputs:)
    active: bool = True  # else written commented out (a script that needs a data set)


def _lines(sites: Sequence[int]) -> str:
    shown = ", ".join(map(str, sites[:MAX_LINES_SHOWN]))
    return f"line{'s' * (len(sites) != 1)} " + shown + (", …" if len(sites) > MAX_LINES_SHOWN else "")


def _script(facts: FileFacts, scan: Scan, model: str | None) -> Candidate:
    plan = scripts.plan(facts, scan, _lines(facts.sites), model)
    return Candidate("run", Path(facts.path).stem, plan.command, plan.notes, active=plan.active)


def _calls(facts: FileFacts) -> Iterable[Candidate]:
    for function in facts.functions:
        # a factory returns the compiled object: calling it compiles nothing; its callers are the candidates
        compiles = function.compiles and not function.factory and not facts.main_guard
        wanted = function.decorated or compiles
        if not wanted or not function.zero_args or function.name.startswith("_") or function.name in NOT_CALLED:
            continue
        if "." in function.name:  # a method: it needs its object
            continue
        how = "is @torch.compile'd" if function.decorated else "compiles"
        yield Candidate(
            "call",
            function.name,
            f"{facts.module}:{function.name}",
            (f"{facts.path}:{function.line}: {function.name}() {how} and takes no arguments.",),
        )


def _tests(tests: Sequence[reach.ReachingTest]) -> Iterable[Candidate]:
    """One pytest: entrypoint per test file, naming the tests that reach a compile."""
    by_file: dict[str, list[reach.ReachingTest]] = {}
    for test in tests:
        by_file.setdefault(test.node_id.split("::", 1)[0], []).append(test)
    for path, found in by_file.items():
        shown = found[:MAX_TESTS_PER_FILE]
        why = [f"{t.node_id.split('::', 1)[1]} (line {t.line}) reaches a compile: {t.why}." for t in shown[:3]]
        if len(found) > 3:
            why.append(f"… and {len(found) - 3} more of its tests do; the rest of {path} does not.")
        if len(found) > MAX_TESTS_PER_FILE:
            why.append(f"{len(found) - MAX_TESTS_PER_FILE} more such tests are left out: add their node ids here.")
        yield Candidate("pytest", Path(path).stem, " ".join(shlex.quote(t.node_id) for t in shown), tuple(why))


def _compiled_names(scan: Scan) -> set[str]:
    """The classes and functions something of the repository compiles."""
    found = {
        name.split(".")[-1] for f in scan.files for fn in f.functions if fn.compiles or fn.decorated for name in fn.uses
    }
    found |= {c.name for f in scan.files for c in f.classes if c.compiles}
    return found | {fn.name.split(".")[0] for f in scan.files for fn in f.functions if fn.decorated and "." in fn.name}


def model_candidates(scan: Scan) -> tuple[list[models.ModelCandidate], int]:
    """The models init builds, in order, and how many that ran it writes: the repository's main
    ones but those it compiles already (a helper, a benchmark): the models are what a pull
    request most often changes."""
    return _uncompiled(scan)[: models.MAX_TRIED], models.MAX_PROPOSED


def _uncompiled(scan: Scan) -> list[models.ModelCandidate]:
    compiled = _compiled_names(scan)
    return [c for c in models.candidates(scan) if c.name not in compiled]


def _models(scan: Scan, built: Mapping[str, Mapping] | None) -> tuple[list[Candidate], list[str]]:
    """The models that ran when built, as entries, and the others tried as commented ones: what
    failed with its error, or, with nothing built, each to build."""
    tried, wanted = model_candidates(scan)
    results = {name: models.Built(**fields) for name, fields in (built or {}).items()}
    ran = [c for c in tried if c.name in results and results[c.name].error is None][:wanted]
    proposed = [
        Candidate("model", c.name, c.target, (f"{c.why}; built small and called once, it ran.",),
                  tuple(line.strip() for line in models.entry_lines(c, results[c.name])[2:]))
        for c in ran
    ]  # fmt: skip
    lines, shown = [], set(ran)
    for c in tried if built is None else (c for c in tried if c.name in results and c not in ran):
        shown.add(c)
        result = results.get(c.name)
        why = (
            f"Tried small, it did not run: {result.error}"
            if result
            else "Not built (--no-build): init builds it to find its arguments and inputs."
        )
        lines += [f"  # {c.why}.", f"  # {why}", *(f"  # {line}" for line in models.entry_lines(c, result))]
    rest = len(_uncompiled(scan)) - len(shown)
    if rest > 0:
        lines.append(f"  # {rest} more models could be model: entrypoints the same way.")
    return proposed, lines


def candidates(scan: Scan) -> list[Candidate]:
    """Pure: scripts first, then functions, then tests, each in path order; scripts to finish by
    hand among them, not active."""
    return _unique_names(_compile_candidates(scan))


@functools.lru_cache(maxsize=2)
def _compile_candidates(scan: Scan) -> list[Candidate]:
    imported = {name for f in scan.files for name in f.imports}
    code = [f for f in scan.files if not f.is_test and f.sites]
    smallest = models.candidates(scan)[0].name if scan.registered else None  # a registry's, for --model
    found = [_script(f, scan, smallest) for f in code if scripts.is_script(f, imported)]
    found += [c for f in code for c in _calls(f)]
    found += list(_tests(reach.reaching_tests(scan.files)))
    return found


def _unique_names(found: list[Candidate]) -> list[Candidate]:
    seen: set[str] = set()
    named = []
    for candidate in found:
        base = "-".join(NAME_RE.findall(candidate.name)).strip(".") or candidate.kind
        name, n = base, 2
        while name in seen:
            name, n = f"{base}-{n}", n + 1
        seen.add(name)
        named.append(replace(candidate, name=name))
    return named


def _scalar(text: str) -> str:
    """A YAML scalar: plain when it reads unambiguously, else JSON's quoting (valid YAML)."""
    plain = PLAIN_SCALAR.fullmatch(text) and ": " not in text and not text.endswith(":")
    return text if plain else json.dumps(text)


def render(
    chosen: Sequence[Candidate],
    more: Sequence[Candidate],
    scan: Scan,
    environment: EnvironmentFiles,
    templates: Sequence[str] = (),
    built: bool = False,
) -> str:
    """Pure: the starter config's text."""
    how = "parsed; its model: entries were built and called once" if built else "parsed, nothing was run"
    lines = [
        "# gbbot's starter config, written by `gbbot init` from the torch.compile call sites it found",
        f"# in {scan.read} Python files ({how}). Review it, then run:",
        f"#   {NEXT_COMMAND}",
        f"# Every key: {CONFIGURATION_DOC}",
        "# call: and model: entrypoints take args/kwargs, e.g.",
        "#   args: [{tensor: [2, 8], dtype: long, high: 100}]",
        "version: 1",
        *setup_lines(environment, any(c.kind == "pytest" for c in chosen)),
        "entrypoints:",
    ]
    for candidate in chosen:
        lines += [f"  # {why}" for why in candidate.why]
        lines += [f"  - name: {candidate.name}", f"    {candidate.kind}: {_scalar(candidate.target)}"]
        lines += [f"    {line}" for line in candidate.extra]
    if more:
        lines.append(f"  # {len(more)} more candidates, left out of a starter config:")
        lines += [f"  #   {c.kind}: {c.target}" for c in more]
    lines += templates
    lines += [
        "mode: fast       # fast: the same breaks without code generation; faithful: your own backend",
        "fail_on: new     # new | any | none: what makes `gbbot check` / `gbbot diff` fail",
    ]
    return "\n".join(lines) + "\n"


NOTHING_TO_INSTALL = EnvironmentFiles()


def _commented(candidate: Candidate) -> list[str]:
    return [*(f"  # {why}" for why in candidate.why), f"  # - name: {candidate.name}",
            f"  #   {candidate.kind}: {_scalar(candidate.target)}"]  # fmt: skip


def starter(
    scan: Scan,
    environment: EnvironmentFiles = NOTHING_TO_INSTALL,
    built: Mapping[str, Mapping] | None = None,
) -> tuple[str, list[Candidate]]:
    """The config text and its entrypoints; GbbotError when there is nothing to run. `built`: by
    name, what init's child made of each model candidate (None: nothing was built)."""
    found = candidates(scan)
    proposed, templates = _models(scan, built)
    templates = [line for c in found if not c.active for line in _commented(c)] + templates
    found = _unique_names([*(c for c in found if c.active), *proposed])
    if not found:
        more = f" (stopped after {scan.read} files: pass --root for a smaller tree)" if scan.truncated else ""
        shown = "\n".join(templates) + "\n" if templates else ""
        raise GbbotError(
            "found no torch.compile call sites to run, and no model that ran when built small, "
            f"in {scan.read} Python files{more}. "
            f"A {CONFIG_NAME} with a model: entrypoint compiles a model of yours without a wrapper "
            f"({CONFIGURATION_DOC}):\n\nversion: 1\nentrypoints:\n{shown}{models.TEMPLATE}"
        )
    chosen, more = found[:MAX_ENTRYPOINTS], found[MAX_ENTRYPOINTS:]
    text = render(chosen, more, scan, environment, templates, built is not None)
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
