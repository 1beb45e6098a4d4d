"""Fixing in rounds: a fix can let Dynamo trace a frame that used to run eagerly, and the breaks
in it show up only then (revealed). The next round plans fixes for those on top of the patched
text. What carries from round to round, and the final patches (original text → final text, one
per file). Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from gbbot.core.fixes import FixResult
from gbbot.core.model import GraphBreak, Report
from gbbot.fix.patch import FilePatch, original_line, rebased
from gbbot.fix.plan import Candidate
from gbbot.fix.verify import Observation, appeared_breaks

DEFAULT_ROUNDS = 4
MAX_ROUNDS = 100  # the report schema's bound on a fix result's round


@dataclass(frozen=True)
class Round:
    """One round: how many breaks it worked on, which of them earlier rounds revealed (none in
    the first), and how many fixes it put in place (`lever`: the last round's nested_graph_breaks
    settings, which leave their breaks in place)."""

    number: int
    breaks: int
    revealed: tuple[GraphBreak, ...]
    fixed: int
    lever: bool = False


def revealed_breaks(
    before: Mapping[str, Observation], after: Mapping[str, Observation]
) -> list[tuple[GraphBreak, tuple[str, ...]]]:
    """Breaks that runs in `after` show and the runs in `before` hid in a frame that ran eagerly,
    each once with the entrypoints it appeared in."""
    seen: dict[str, tuple[GraphBreak, list[str]]] = {}
    for name in sorted(n for n in after if n in before and after[n] is not before[n]):
        for brk in appeared_breaks(before[name], after[name])[1]:
            seen.setdefault(brk.fingerprint, (brk, []))[1].append(name)
    return [(brk, tuple(names)) for brk, names in seen.values()]


def merged(report: Report, standing: Mapping[str, Observation]) -> Report:
    """`report` with each entrypoint's latest run in place of its earlier one."""
    return replace(
        report, entrypoints=tuple(standing[e.name].report if e.name in standing else e for e in report.entrypoints)
    )


def final_patches(originals: Mapping[str, str], current: Mapping[str, str]) -> tuple[FilePatch, ...]:
    """One patch per file from the text the first round read to the text the last round left."""
    return tuple(p for p in (FilePatch(path, text, current[path]) for path, text in originals.items()) if p.changed)


def on_original(
    result: FixResult, candidate: Candidate | None, originals: Mapping[str, str], current: Mapping[str, str]
) -> FixResult:
    """A later round's result at the line of the file as the user has it (`originals`; `current`:
    the text the round planned on), and a fix's diff and hunks on that original text, so that a
    review suggestion lands on the lines the unpatched file has. A fix that rewrites what an
    earlier round wrote keeps its diff on top of that round's text, and has no hunks (no
    suggestion: it would not apply to the unpatched file)."""
    if result.file in originals and result.file in current:
        line = original_line(originals[result.file], current[result.file], result.line) or result.line
        result = replace(result, line=line, reason=said_at(result.reason, result.file, result.line, line))
    if candidate is None or not any(p.path in originals for p in candidate.patches):
        return result
    patches = [rebased(p, originals[p.path]) if p.path in originals else p for p in candidate.patches]
    if any(p is None for p in patches):
        return replace(result, hunks=())
    diff = "".join(p.diff for p in patches)  # type: ignore[union-attr]
    return replace(result, diff=diff, hunks=tuple(h for p in patches for h in p.hunks))  # type: ignore[union-attr]


def said_at(text: str, path: str, was: int, line: int) -> str:
    """gbbot's own words about the break's line ("line 193 is not a pattern…", "model.py:193"),
    saying the line of the file as the user has it."""
    if was == line:
        return text
    text = re.sub(rf"\bline {was}\b", f"line {line}", text)
    return re.sub(rf"{re.escape(path)}:{was}\b", f"{path}:{line}", text)


def in_original(brk: GraphBreak, originals: Mapping[str, str], current: Mapping[str, str]) -> GraphBreak:
    """A break a run of the patched copy showed, at its line in the file as the user has it."""
    if brk.file not in originals:
        return brk
    return replace(brk, line=original_line(originals[brk.file], current[brk.file], brk.line) or brk.line)


def numbered(results: Iterable[FixResult], number: int) -> list[FixResult]:
    return [replace(r, round=number) for r in results]
