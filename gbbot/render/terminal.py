"""Report → a readable terminal summary (rich), as text: the caller prints it."""

from __future__ import annotations

import io

from rich.console import Console, Group
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from gbbot.analysis import recompile
from gbbot.core import counts, words
from gbbot.core.model import (
    ChangeState,
    EntrypointReport,
    GraphBreak,
    Recompilation,
    RecompileReason,
    Report,
    Status,
)
from gbbot.render import findings, width
from gbbot.render.findings import compile_error_words

STATUS_STYLE = {
    Status.OK: "green",
    Status.FAILED: "red",
    Status.TIMEOUT: "yellow",
    Status.CRASHED: "red",
    Status.SKIPPED: "dim",
    Status.NO_COMPILE: "yellow",
    Status.INTERRUPTED: "yellow",
}
CODE_CHARS = 120  # the longest code line shown whole on a wide terminal
WHERE_CHARS = 60  # a longer `file:line` loses its leading directories
WHERE_MIN = 24  # …/the_file_name.py:1234, before the function goes on a line of its own
FAILURE_LINES = 12  # a failed entrypoint's last lines of output on screen (the report has more)
# A cell's rules and padding: "│ " before each cell and " │" after the last.
BORDER = 3
ONE_LINE: dict = {"no_wrap": True, "overflow": "ellipsis"}  # a line cut where the cell ends, not folded


def entrypoint_table(report: Report) -> Table:
    """`breaks`: distinct breaks (each once, ignored ones left out), as the summary line counts them."""
    table = Table(title="Entrypoints", title_justify="left")
    for column in ("entrypoint", "status", "graphs", "breaks", "frames eager", "time"):
        table.add_column(column, justify="left" if column in ("entrypoint", "status") else "right", overflow="fold")
    for e in report.entrypoints:
        table.add_row(
            escape(e.name),
            Text(e.status.value, style=STATUS_STYLE[e.status]),
            str(e.graph_count),
            str(counts.distinct(b for b in e.breaks if not b.ignored)),
            str(e.frames_skipped),
            f"{e.duration_s:.1f}s",
        )
    return table


def _main_width(columns: int, others: int, count: int) -> int:
    """What is left for the widest column of a table of `count` columns whose others take `others`."""
    return max(columns - BORDER * count - 1 - others, 20)


def break_table(report: Report, columns: int) -> Table:
    """One row per distinct break, highest impact first. The wide column holds, one under the
    other, where it is (`file:line` never split), its code (cut after a whole token to the width
    left), the library line that broke and the notes; so nothing is cut off at 80 columns and no
    column stays blank at 120."""
    table = Table(title="Graph breaks, highest impact first", title_justify="left", show_lines=True)
    shown = findings.impact_ordered(report)
    each = counts.per_break(report)
    number = len(str(len(shown)))
    kinds = max([len(b.gb_id or "-") for b in shown] + [len(b.category.value) for b in shown] + [len("break")])
    room = _main_width(columns, number + kinds, 3)
    table.add_column("#", no_wrap=True, justify="right")
    table.add_column("break", no_wrap=True)
    table.add_column("where, code and notes", overflow="fold", width=room)
    for n, brk in enumerate(shown, 1):
        new = report.diff is not None and report.diff.state(brk) is ChangeState.NEW
        table.add_row(
            str(n),
            f"{escape(brk.gb_id or '-')}\n{escape(brk.category.value.lower())}" + ("\n[bold]NEW[/]" if new else ""),
            _break_cell(brk, each[brk.fingerprint], room),
        )
    return table


def place_lines(file: str, line: int, function: str, room: int) -> list[Text]:
    """`file:line function` in `room` columns: the path gives way first (down to WHERE_MIN), then
    the function goes on a line of its own."""
    where = width.place(file, line, min(WHERE_CHARS, max(WHERE_MIN, room - len(function) - 1)))
    if len(where) + 1 + len(function) <= room:
        return [Text(f"{where} {function}")]
    return [Text(where), Text(f"in {function}", **ONE_LINE)]


def _break_cell(brk: GraphBreak, counted: counts.BreakCounts, room: int) -> Group:
    hits = f" ×{counted.total}" if counted.total > 1 else ""
    lines = place_lines(brk.file, brk.line, f"{brk.function}{hits}", room)
    lines.append(Text(width.shorten(brk.code, min(CODE_CHARS, room)) or "-", style="cyan", **ONE_LINE))
    site = brk.library_site
    if site:
        lines.append(Text(f"→ inside {site.package}: {width.place(site.path, site.line, room - 12)}", **ONE_LINE))
        if site.code:
            lines.append(Text(f"→ {width.shorten(site.code, room - 2)}", style="cyan", **ONE_LINE))
    lines += [Text.from_markup(note) for note in _notes(brk, counted)]
    return Group(*lines)


def _notes(brk: GraphBreak, counted: counts.BreakCounts) -> list[str]:
    """What a reader should know about a break beyond its place and code, as rich markup, one a line."""
    notes = []
    if brk.fullgraph_failure:
        notes.append("[red]made the fullgraph compile fail[/]")
    if counted.frame_eager:
        callers = ", ".join(escape(str(f)) for f in brk.eager_callers)
        notes.append(f"[red]makes {callers} run eagerly[/]" if callers else "[red]its frame runs eagerly[/]")
    elif brk.in_loop:
        notes.append("in a loop")
    if brk.ignored:
        notes.append("[dim]ignored[/]")
    if brk.fix:
        notes.append(f"gbbot fix: {escape(brk.fix)}")
    if brk.ranks > 1:
        notes.append(f"{brk.ranks} ranks")
    return notes


def recompile_table(report: Report, columns: int) -> Table:
    """After the breaks: one row per frame that compiled more than once, limit hits first, then
    by count; under its place, each failing guard with how many recompiles it caused, and what to
    do where there is something to do."""
    d = report.diff
    new = set(d.recompiled(ChangeState.NEW)) if d is not None and d.recompiles is not None else None
    breaks = {b.fingerprint: b for b in report.breaks}
    table = Table(title="Recompilations, highest impact first", title_justify="left", show_lines=True)
    room = _main_width(columns, len("compiles"), 2)
    table.add_column("frame, failing guards and what to do", overflow="fold", width=room)
    table.add_column("compiles", justify="right", no_wrap=True)
    for rc in recompile.ordered(report):
        problems = {r.fingerprint for r in rc.reasons if not r.dynamic} | {recompile.limit_fingerprint(rc)}
        notes = ["[bold]NEW[/]"] if new is not None and problems & new and not rc.new_break else []
        if rc.new_break and rc.new_break in breaks:
            made = breaks[rc.new_break]
            notes.append(f"because of the new break at {escape(f'{made.file}:{made.line}')}")
        if rc.limit_hit:
            notes.append("[red]hit the recompile limit: runs eagerly[/]")
        if rc.info_only:
            notes.append("[dim]automatic dynamic shapes at work, nothing to fix[/]")
        lines: list = place_lines(rc.file, rc.line, f"{rc.function}{inside(rc)}", room)
        lines += [Text.from_markup(" · ".join(notes))] if notes else []
        for reason in rc.reasons:
            dynamic = " (became dynamic)" if reason.dynamic else ""
            lines.append(Text(f"{reason.kind}{dynamic} ×{reason.count}: {reason.guard}", style="cyan"))
            if advice(rc, reason):
                lines.append(Padding(Text(f"→ {advice(rc, reason)}"), (0, 0, 0, 2)))
        table.add_row(Group(*lines), str(rc.compilations))
    return table


def advice(rc: Recompilation, reason: RecompileReason) -> str:
    """No advice where there is nothing to fix (automatic dynamic shapes settled it) or where the
    remedy is a new break's (the code that recompiles exists because of it)."""
    return "" if rc.info_only or reason.dynamic or rc.new_break else reason.advice


def failure(e: EntrypointReport) -> Text:
    """Why an entrypoint did not run cleanly: its status and exit code, then the last lines of what
    it wrote (the reason first: a timeout's, a signal's), saying how many were left out."""
    code = f" (exit code {e.exit_code})" if e.exit_code not in (None, 0) else ""
    lines = (e.error or "").rstrip().splitlines()
    shown = lines[-FAILURE_LINES:]
    if len(lines) > len(shown) and e.status in (Status.TIMEOUT, Status.CRASHED, Status.INTERRUPTED):
        shown = [lines[0], *lines[-(FAILURE_LINES - 1) :]]  # the reason, gbbot's, before the output
    omitted = len(lines) - len(shown)
    body = [f"  … {words.plural(omitted, 'line')} omitted (the report's `error` has them)"] if omitted else []
    body += [f"  {line}" for line in shown] or ["  (it wrote nothing)"]
    return Text("\n".join([f"{e.name}: {e.status.value}{code}", *body]), style="red")


def render(report: Report, columns: int = 160, color_system: str | None = None) -> str:
    """The summary laid out for `columns` columns; with ANSI styles of `color_system` (rich's name
    of one, as a terminal's console reports it), without any when None (a log, a file)."""
    out = io.StringIO()
    console = Console(
        file=out,
        width=columns,
        color_system=color_system,  # type: ignore[arg-type]
        force_terminal=color_system is not None,
        highlight=False,
        soft_wrap=False,
    )
    console.print(Group(*_shown(report, columns)))
    return out.getvalue()


def _shown(report: Report, columns: int) -> list:
    """What the summary shows, in order: the tables, each failure, the counts."""
    parts: list = [entrypoint_table(report)]
    if report.breaks:
        parts.append(break_table(report, columns))
    if any(e.recompiles for e in report.entrypoints):
        parts.append(recompile_table(report, columns))
    for e in report.entrypoints:
        if e.compile_error is not None:
            parts.append(Text(f"{e.name}: {e.status.value}: {compile_error_words(e.compile_error)}", style="red"))
        elif e.status not in (Status.OK, Status.SKIPPED, Status.NO_COMPILE):
            parts.append(failure(e))
        elif e.status is Status.NO_COMPILE and e.error:
            parts.append(Text(f"{e.name}: {e.error}", style="yellow"))
        for problem in e.trace_problems[:10]:
            parts.append(Text(f"{e.name}: trace: {problem}", style="yellow"))
        if e.from_base:
            parts.append(Text(f"{e.name}: not run, the base's result: {e.from_base}", style="dim"))
    c = counts.counts(report)
    if report.diff is not None:
        d = report.diff
        parts.append(Text(words.terminal_line(c, d.base_ref, d.base_sha)))
        if d.dependencies is not None and d.dependencies.packages:
            parts.append(Text(words.terminal_dependencies(d, d.dependencies.summary, d.dependencies.code_changed)))
    parts.append(Text(words.terminal_summary(c)))
    return parts


def inside(rc: Recompilation) -> str:
    """` → einops/einops.py:512 rearrange`: the installed function that recompiled, when it is one."""
    site = rc.library_site
    return f" → {site.path}:{site.line} {site.function}".rstrip() if site else ""
