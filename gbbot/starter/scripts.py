"""Scripts as `run:` candidates: which files are scripts that compile, the flags a short run needs,
and what they read that the repository does not hold. Pure, over discover's facts.

A script compiles when it has a `__main__` guard and a site, or a site at module level and
module-level work (a loop, a call) — nanoGPT's train.py has no guard. Its knobs are argparse
options and module-level settings with a telling name; with a configurator (`exec(open(
"configurator.py").read())`, nanoGPT's way) a setting is given as `--name=value`.

A script is proposed active only when the flags found make it compile and short, and it reads
no data set and downloads nothing; else it is written commented out, with why.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from gbbot.starter.discover import POSITIONAL, FileFacts, Knob, Scan

# A short run: the fewest steps and the smallest batch, the smallest model, on the CPU, with compile on
STEPS = re.compile(r"((max|num|n|total|train|val|eval|bench|warm)_)*(iters?|iterations|steps|epochs|batches|samples)"
                   r"|max_new_tokens")  # fmt: skip
BATCH = re.compile(r"(\w+_)?batch_size|bs")
MODEL = re.compile(r"model|model_name|arch")
SHORT = 5  # steps, iterations, epochs: enough for a loop that logs every fifth (`n // 5`)
SMALL_BATCH = 2
COMPILE = re.compile(r"(use_|do_|torch_?)?compile")
DATA = re.compile(r"(\w+_)?data(set)?(_(dir|path|root|file|url))?|input_bin|(train|val)_(dir|file|bin)")
MAX_READS_SHOWN = 3
FILE_NAME = re.compile(r"([\w.-]+/)*[\w-][\w.-]*\.\w+")  # a path to one file: not a suffix, not a glob


@dataclass(frozen=True)
class ScriptPlan:
    command: str  # the run: value
    notes: tuple[str, ...]  # comment lines
    active: bool = True  # short, compiled, and needing nothing the repository lacks


def is_script(facts: FileFacts, imported: set[str]) -> bool:
    """A file that compiles when run: a guarded script, or module-level compile and work in a file
    no other file imports (a library module that compiles at import is driven by its users)."""
    if facts.is_test or not facts.sites:
        return False
    return facts.main_guard or (bool(facts.top_sites) and facts.top_work and facts.module not in imported)


def _option_name(knob: Knob) -> str:
    return knob.name.lstrip("-").replace("-", "_")


def _option_flags(knob: Knob, model: str | None) -> list[str]:
    """What one argparse option is given for a short compiled run."""
    name = _option_name(knob)
    if STEPS.fullmatch(name):
        return [knob.name, str(SHORT)]
    if BATCH.fullmatch(name) and knob.value == "int":
        return [knob.name, str(SMALL_BATCH)]
    if name in ("device", "accelerator"):
        return [knob.name, "cpu"]
    if MODEL.fullmatch(name) and model and knob.value in (None, "str"):
        return [knob.name, model]
    if COMPILE.fullmatch(name) and knob.value in ("store_true", "const"):
        return [knob.name]  # off unless asked
    if COMPILE.fullmatch(name) and knob.value == "int":
        return [knob.name, "1"]
    return []


def _setting_flag(knob: Knob, configurator: bool) -> tuple[str | None, str | None]:
    """A module-level setting: (its `--name=value` flag, or a note to change it by hand)."""
    value = knob.value
    short = SHORT if STEPS.fullmatch(knob.name) else SMALL_BATCH if BATCH.fullmatch(knob.name) else None
    if short is not None and type(value) is int and value > short:
        flag, note = f"--{knob.name}={short}", f"{knob.name} = {value}; lower it for a short run"
    elif knob.name == "device" and isinstance(value, str) and value != "cpu":
        flag, note = "--device=cpu", f"device = {value!r}; a CPU runner needs 'cpu'"
    elif COMPILE.fullmatch(knob.name) and value is False:
        flag, note = f"--{knob.name}=True", f"{knob.name} = False; the compile runs only when it is True"
    else:
        return None, None
    return (flag, None) if configurator else (None, f"line {knob.line}: {note}.")


def _flags(facts: FileFacts, model: str | None) -> tuple[list[str], list[str]]:
    """The flags a short compiled run needs, and what to change by hand."""
    flags, notes = [], []
    options = [k for k in facts.knobs if k.name.startswith("--")]
    for knob in options:
        flags += _option_flags(knob, model)
    named = {_option_name(k) for k in options}
    for knob in facts.knobs:
        if knob.name.startswith("--") or knob.name in named or knob.value == POSITIONAL:
            continue  # an option, or a setting made from one (`device = args.device`)
        flag, note = _setting_flag(knob, facts.configurator)
        flags += [flag] if flag else []
        notes += [note] if note else []
    return flags, notes


def _missing_reads(facts: FileFacts, names: frozenset[str]) -> list[str]:
    """What it reads that the repository does not hold: a data set by option, data files by name,
    data and weights by loader."""
    notes = [f"line {k.line}: it takes a data set ({k.name})" for k in facts.knobs
             if DATA.fullmatch(_option_name(k)) and (k.name.startswith("--") or k.value == POSITIONAL)]  # fmt: skip
    for read in facts.reads:
        if not read.loader and FILE_NAME.fullmatch(read.what) and read.what.rsplit("/", 1)[-1] not in names:
            notes.append(f"line {read.line}: reads {read.what}, which is not in the repository")
        elif read.loader:
            notes.append(f"line {read.line}: {read.what}(...) loads data or weights from outside the repository")
    unique = list(dict.fromkeys(notes))
    shown = unique[:MAX_READS_SHOWN] + (
        [f"… and {len(unique) - MAX_READS_SHOWN} more"] if len(unique) > MAX_READS_SHOWN else []
    )
    if shown:
        shown[0] = "It may need what the repository lacks — " + shown[0]
        shown.append("Prepare it first (env: or a setup step), or point the script at a small stand-in.")
    return shown


def plan(facts: FileFacts, scan: Scan, lines: str, model: str | None = None) -> ScriptPlan:
    """Its run, and whether it is proposed active. `model`: a registry's smallest variant, for a
    `--model` option."""
    flags, notes = _flags(facts, model)
    where = "at module level" if facts.top_sites and not facts.main_guard else "and runs as a script"
    why = [f"{facts.path} compiles ({lines}) {where}."]
    if flags:
        why.append(f"Flags for a short run: {' '.join(flags)} (from its options and settings; check them).")
    elif not notes:
        why.append("Add the flags a short run needs, e.g. --steps 2 or --device cpu.")
    lacks = _missing_reads(facts, scan.names)
    if notes or lacks:
        why.append("Written commented out: it needs what the repository lacks or a change by hand.")
    command = " ".join(["python", shlex.quote(facts.path), *map(shlex.quote, flags)])
    return ScriptPlan(command, (*why, *notes, *lacks), not notes and not lacks)
