"""Report → the breaks to point at in code (check-run annotations, workflow commands, SARIF), each
with where it is, how loud it is, and a plain-text message. Pure."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from gbbot.analysis import advice
from gbbot.analysis import report as report_
from gbbot.analysis.policy import Policy
from gbbot.core import counts
from gbbot.core.doc_links import graph_break_doc
from gbbot.core.model import BreakCost, CompileError, GraphBreak, Report

# Repo-relative POSIX path: no leading slash or drive, no `..` segment, no control characters.
# The report schema says the same; a report from an untrusted run is checked again here.
SAFE_PATH = re.compile(r"^(?!/)(?![A-Za-z]:)(?!.*(^|/)\.\.(/|$))[^\x00-\x1f\\]+$")


class Level(str, enum.Enum):
    NOTICE = "notice"
    WARNING = "warning"
    FAILURE = "failure"  # the policy counts it: it fails the check


class State(str, enum.Enum):
    NEW = "new"  # not on the base (or there was no base to compare with)
    PERSISTING = "persisting"


class AtLine:
    """What a finding is annotated at: its `place` (file, line) as the report gives it."""

    place: tuple[str, int]

    @property
    def path(self) -> str | None:
        """Where to annotate, or None when the report's path is not a safe repo-relative one."""
        return self.place[0] if SAFE_PATH.match(self.place[0]) else None

    @property
    def line(self) -> int:
        return max(self.place[1], 1)  # GitHub and SARIF count lines from 1


@dataclass(frozen=True)
class Finding(AtLine):
    brk: GraphBreak
    entrypoints: tuple[str, ...]
    state: State
    level: Level
    total: int = 1  # occurrences over every entrypoint
    frame_eager: bool = False  # in any entrypoint

    @property
    def place(self) -> tuple[str, int]:
        return self.brk.file, self.brk.line

    @property
    def title(self) -> str:
        return f"{self.brk.gb_id or 'Graph break'}: {' '.join(self.brk.gb_type.split())}"

    @property
    def message(self) -> str:
        return message(self)


def library_lines(brk: GraphBreak) -> list[str]:
    """Where a break outside the repository happened, and the repository line that reached it."""
    site = brk.library_site
    if site is None:
        return []
    lines = [f"Inside {site.package}: {site.path}:{site.line}" + (f" in {site.function}" if site.function else "")]
    if site.code:
        lines.append(f"    {site.code}")
    lines.append(f"Reached from {brk.file}:{brk.line}" + (f": {brk.code}" if brk.code else ""))
    return lines


def _times(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def cost_text(cost: BreakCost | None, name_as: Callable[[str], str] = str) -> str:
    """What the break costs, in one short phrase, from what the run measured: "forward runs eagerly
    on each of 128 calls", "splits forward into 3 graphs of 41 / 2 / 37 ops: 3 graph launches per
    call, 128 calls". Empty when nothing was measured. `name_as` shows the function's name (the
    only text in it that comes from the program: markdown passes its code-span escaper)."""
    if cost is None:
        return ""
    name = name_as(cost.function)
    if cost.runs_eagerly:
        return f"{name} runs eagerly{_on_each(cost.entries)}"
    if len(cost.graph_ops) < 2:
        ops = f" of {_times(cost.graph_ops[0], 'op', 'ops')}" if cost.graph_ops else ""
        text = f"{name} runs as {_times(len(cost.graph_ops), 'graph', 'graphs')}{ops} and the rest eagerly"
    else:
        sizes = " / ".join(f"{n:,}" for n in cost.graph_ops)
        text = f"splits {name} into {len(cost.graph_ops)} graphs of {sizes} ops"
    launches = cost.launches_per_call
    if not cost.entries or len(cost.graph_ops) < 2 or launches is None:
        return text + _on_each(cost.entries)
    return f"{text}: {launches:g} graph launches and eager code between{_on_each(cost.entries)}"


def _on_each(entries: int | None) -> str:
    if not entries:
        return ""
    return " on its one call" if entries == 1 else f" on each of {entries:,} calls"


def eager_words(brk: GraphBreak, code: Callable[[str], str] = str, text: Callable[[str], str] = str) -> str:
    """What the break makes run eagerly: "the whole frame runs eagerly" when that is its own
    function's frame, else "makes `generate` (wrapper.py:480) run eagerly". `code` and `text`
    escape a name and plain text for where the words go."""
    callers = brk.eager_callers
    if not callers:
        return "the whole frame runs eagerly"
    named = ", ".join(f"{code(f.name)} {text(f'({PurePosixPath(f.file).name}:{f.line})')}" for f in callers)
    return f"makes {named} run eagerly"


def compile_error_words(
    error: CompileError, code: Callable[[str], str] = str, text: Callable[[str], str] = str, explained: bool = True
) -> str:
    """The compile error that ended a run, in one line: "compile error GB4315 (USER_ERROR) at
    entry.py:4 in project: RuntimeError when making fake tensor call. Dynamo failed to …" (without
    torch's explanation unless `explained`)."""
    where = f"{code(f'{error.file}:{error.line}')} in {code(error.function)}"
    explanation = error.explanation if explained else ""
    what = text(f"{error.gb_type}. {explanation}" if explanation else error.gb_type)
    return f"compile error {code(error.gb_id or '-')} ({text(error.category.value)}) at {where}: {what}"


# A traceback's last line, the exception: `torch._dynamo.exc.TorchRuntimeError: ...`, `KeyError`.
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*\w*(?:Error|Exception|Unsupported|Exit|Interrupt)\b(?::|$)")
FRAME_LINE = re.compile(r'^\s*File "(?P<path>[^"]+)", line \d+')
NOT_USER_CODE = re.compile(r"(?:^|/)(?:site-packages|dist-packages|torch|functorch)/|^<frozen |^<string>$")


def user_failure(text: str) -> str | None:
    """A failed run's output cut to what its author can act on: the frames of their code (the
    traceback's outside torch and installed packages, then those torch records for a compile
    error under "from user code:"), and the exception. None: no exception in it. The whole
    output stays in the report and the log."""
    lines = text.splitlines()
    raised = [i for i, line in enumerate(lines) if EXCEPTION_LINE.match(line)]
    if not raised:
        return None
    frames = [*_user_frames(lines[: raised[-1]]), *_from_user_code(lines)]
    return "\n".join([*frames, lines[raised[-1]]])


def _from_user_code(lines: list[str]) -> list[str]:
    start = next((i for i, line in enumerate(lines) if line.strip() == "from user code:"), None)
    if start is None:
        return []
    block = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        block.append(line)
    return block


def _user_frames(lines: list[str]) -> list[str]:
    """`File ...` lines outside torch and installed packages, each with the code line under it."""
    out = []
    for i, line in enumerate(lines):
        match = FRAME_LINE.match(line)
        if match and not NOT_USER_CODE.search(match.group("path")):
            code = lines[i + 1] if i + 1 < len(lines) and not FRAME_LINE.match(lines[i + 1]) else ""
            out += [line, *([code] if code.strip() and not EXCEPTION_LINE.match(code) else [])]
    return out


def ranks_text(brk: GraphBreak) -> str:
    return f" on {brk.ranks} ranks" if brk.ranks > 1 else ""


def message(finding: Finding) -> str:
    """Plain text, several lines: what broke, why, what to do, where to read more."""
    brk = finding.brk
    lines = [f"{'New graph break' if finding.state is State.NEW else 'Graph break'}: {brk.gb_type}"]
    if brk.library_site is not None:
        lines.extend(library_lines(brk))
    elif brk.statement:
        lines.append("Code:")
        lines.extend(f"    {line}" for line in brk.statement.splitlines())
    elif brk.code:
        lines.append(f"Code: {brk.code}")
    if brk.fullgraph_failure:
        lines.append("This break made the fullgraph=True compile fail.")
    if finding.frame_eager:
        lines.append(f"{eager_words(brk).capitalize()} (Dynamo skipped it).")
    elif brk.in_loop:
        lines.append("Inside a loop.")
    if cost := cost_text(brk.cost):
        lines.append(f"Cost: {cost}.")
    explanation = advice.curated_explanation(brk)
    if explanation:
        lines.append(explanation)
    lines.extend(f"Hint: {hint.text}" for hint in advice.reading(brk))  # gbbot's advice first
    times = f" (×{finding.total})" if finding.total > 1 else ""
    lines.append(f"Entrypoints: {', '.join(finding.entrypoints)}{times}{ranks_text(brk)}")
    if graph_break_doc(brk.gb_id):
        lines.append(graph_break_doc(brk.gb_id))
    return "\n".join(lines)


def impact_ordered(report: Report) -> list[GraphBreak]:
    """Each distinct break once (its first record), highest impact first, as every view lists
    them: one that makes a whole frame run eagerly (in any entrypoint), then by how many times its
    cost was paid (its frame's entries, when measured), then in the report's order (loops first,
    then by count: gbbot/analysis/classify.py)."""
    seen: dict[str, GraphBreak] = {}
    paid: dict[str, int] = {}
    for brk in report.breaks:
        seen.setdefault(brk.fingerprint, brk)
        if brk.cost and brk.cost.entries:
            paid[brk.fingerprint] = paid.get(brk.fingerprint, 0) + brk.cost.entries
    each = counts.per_break(report)
    return sorted(seen.values(), key=lambda b: (not each[b.fingerprint].frame_eager, -paid.get(b.fingerprint, 0)))


def findings(report: Report, policy: Policy, states: frozenset[State] = frozenset(State)) -> list[Finding]:
    """One finding per distinct break that is not ignored, in impact order; those the policy
    counts are failures."""
    each = counts.per_break(report)
    out = []
    for brk in (b for b in impact_ordered(report) if not b.ignored):
        state = State.NEW if report_.is_new(report, brk) else State.PERSISTING
        if state not in states:
            continue
        if policy.counts_break(state is State.NEW):
            level = Level.FAILURE
        else:
            level = Level.WARNING if state is State.NEW else Level.NOTICE
        counted = each[brk.fingerprint]
        out.append(Finding(brk, counted.entrypoints, state, level, counted.total, counted.frame_eager))
    return out


@dataclass(frozen=True)
class FailureFinding(AtLine):
    """An entrypoint that a compile error ended: annotated at the error's repository line, as the
    entrypoint's failure (never as a graph break)."""

    entrypoint: str
    error: CompileError

    level = Level.FAILURE

    @property
    def place(self) -> tuple[str, int]:
        return self.error.file, self.error.line

    @property
    def title(self) -> str:
        return f"{self.error.gb_id or 'Compile error'}: {self.entrypoint} failed to compile"

    @property
    def message(self) -> str:
        return f"The entrypoint {self.entrypoint} stopped on a {compile_error_words(self.error)}"


def failure_findings(report: Report) -> list[FailureFinding]:
    """Each entrypoint a compile error ended, in report order."""
    return [FailureFinding(e.name, e.compile_error) for e in report.entrypoints if e.compile_error is not None]
