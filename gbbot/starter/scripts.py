"""Scripts as `run:` candidates: which files are scripts that compile, the flags a short run needs,
and what they read that the repository does not hold. Pure, over discover's facts.

A script compiles when it has a `__main__` guard and a site, or a site at module level and
module-level work (a loop, a call) — nanoGPT's train.py has no guard. Its knobs are argparse
options and module-level settings with a telling name; with a configurator (`exec(open(
"configurator.py").read())`, nanoGPT's way) a setting is given as `--name=value`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from gbbot.starter.discover import FileFacts, Knob, Scan

# A short run: the fewest steps, on the CPU, with compile on
STEPS = re.compile(r"(max_|num_|n_|total_)?(iters|iterations|steps|epochs|batches|samples)|max_new_tokens|eval_iters")
SHORT = 2
DEVICE = re.compile(r"device")
COMPILE = re.compile(r"(use_|do_|torch_)?compile")
MAX_READS_SHOWN = 3
FILE_NAME = re.compile(r"([\w.-]+/)*[\w-][\w.-]*\.\w+")  # a path to one file: not a suffix, not a glob


@dataclass(frozen=True)
class ScriptPlan:
    command: str  # the run: value
    notes: tuple[str, ...]  # comment lines


def is_script(facts: FileFacts, imported: set[str]) -> bool:
    """A file that compiles when run: a guarded script, or module-level compile and work in a file
    no other file imports (a library module that compiles at import is driven by its users)."""
    if facts.is_test or not facts.sites:
        return False
    return facts.main_guard or (bool(facts.top_sites) and facts.top_work and facts.module not in imported)


def _option_name(knob: Knob) -> str:
    return knob.name.lstrip("-").replace("-", "_")


def _flags(facts: FileFacts) -> tuple[list[str], list[str]]:
    """The flags a short run needs, and notes on settings to lower by hand."""
    flags, notes = [], []
    options = [k for k in facts.knobs if k.name.startswith("--")]
    settings = [k for k in facts.knobs if not k.name.startswith("--")]
    for knob in options:
        name = _option_name(knob)
        if STEPS.fullmatch(name):
            flags += [knob.name, str(SHORT)]
        elif name in ("device", "accelerator"):
            flags += [knob.name, "cpu"]
        elif COMPILE.fullmatch(name) and knob.value == "store_true":
            flags.append(knob.name)  # off unless asked
        elif COMPILE.fullmatch(name) and knob.value == "int":
            flags += [knob.name, "1"]
    named = {_option_name(k) for k in options}
    for knob in settings:
        if knob.name in named:  # set from the option (`device = args.device` and the like)
            continue
        steps = STEPS.fullmatch(knob.name) and isinstance(knob.value, int) and not isinstance(knob.value, bool)
        if steps and knob.value > SHORT:
            if facts.configurator:
                flags.append(f"--{knob.name}={SHORT}")
            else:
                notes.append(f"line {knob.line}: {knob.name} = {knob.value}; lower it for a short run.")
        elif knob.name == "device" and knob.value != "cpu" and isinstance(knob.value, str):
            if facts.configurator:
                flags.append("--device=cpu")
            else:
                notes.append(f"line {knob.line}: device = {knob.value!r}; a CPU runner needs 'cpu'.")
        elif COMPILE.fullmatch(knob.name) and knob.value is False:
            if facts.configurator:
                flags.append(f"--{knob.name}=True")
            else:
                notes.append(f"line {knob.line}: {knob.name} = False; the compile runs only when it is True.")
    return flags, notes


def _missing_reads(facts: FileFacts, names: frozenset[str]) -> list[str]:
    """What it reads that the repository does not hold: data files by name, checkpoints by loader."""
    notes = []
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


def plan(facts: FileFacts, scan: Scan, lines: str) -> ScriptPlan:
    flags, notes = _flags(facts)
    where = "at module level" if facts.top_sites and not facts.main_guard else "and runs as a script"
    why = [f"{facts.path} compiles ({lines}) {where}."]
    if flags:
        why.append(f"Flags for a short run: {' '.join(flags)} (from its options and settings; check them).")
    elif not notes:
        why.append("Add the flags a short run needs, e.g. --steps 2 or --device cpu.")
    command = " ".join(["python", shlex.quote(facts.path), *map(shlex.quote, flags)])
    return ScriptPlan(command, (*why, *notes, *_missing_reads(facts, scan.names)))
