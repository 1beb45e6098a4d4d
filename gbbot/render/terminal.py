"""Report → a readable terminal summary (rich), as text: the caller prints it."""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gbbot.analysis import recompile
from gbbot.core import counts
from gbbot.core.model import Cause, ChangeState, Diff, GraphBreak, Recompilation, RecompileReason, Report, Status
from gbbot.render import width
from gbbot.render.findings import compile_error_words

STATUS_STYLE = {
    Status.OK: "green",
    Status.FAILED: "red",
    Status.TIMEOUT: "yellow",
    Status.CRASHED: "red",
    Status.SKIPPED: "dim",
    Status.NO_COMPILE: "yellow",
}
CODE_CHARS = 80
WHERE_CHARS = 40  # a longer `file:line` loses its leading directories
WHERE_MIN = 24  # …/the_file_name.py:1234, on a narrow terminal
CODE_MIN = 24  # what the code keeps before the places give way
CODE_FLOOR = 12  # below this the terminal is too narrow to fit: rich folds what it must
NOTE_CHARS = 30  # the note column's share before the code's
BREAK_COLUMNS = ("#", "id", "category", "where", "code", "n", "note")


def shorten(code: str, limit: int = CODE_CHARS) -> str:
    return width.shorten(code, limit)


def entrypoint_table(report: Report) -> Table:
    table = Table(title="Entrypoints", title_justify="left")
    for column in ("entrypoint", "status", "graphs", "breaks", "frames eager", "time"):
        table.add_column(column, justify="right" if column in ("graphs", "breaks", "frames eager", "time") else "left")
    for e in report.entrypoints:
        table.add_row(
            escape(e.name),
            Text(e.status.value, style=STATUS_STYLE[e.status]),
            str(e.graph_count),
            str(e.break_count),
            str(e.frames_skipped),
            f"{e.duration_s:.1f}s",
        )
    return table


def break_table(report: Report, columns: int | None = None) -> Table:
    """`columns`: the terminal's width, which the table fits (code cut after a whole token,
    `file:line` never split); None leaves the code at CODE_CHARS."""
    table = Table(title="Graph breaks, highest impact first", title_justify="left")
    rows: list[tuple[GraphBreak, str, str]] = []
    seen: set[str] = set()
    each = counts.per_break(report)
    for brk in (b for b in report.breaks if b.fingerprint not in seen):
        seen.add(brk.fingerprint)
        counted = each[brk.fingerprint]
        notes = []
        if report.diff is not None and report.diff.state(brk) is ChangeState.NEW:
            notes.append("[bold]NEW[/]")
        if brk.fullgraph_failure:
            notes.append("[red]made the fullgraph compile fail[/]")
        if counted.frame_eager:
            callers = ", ".join(escape(str(f)) for f in brk.eager_callers)
            notes.append(f"[red]makes {callers} run eagerly[/]" if callers else "[red]frame runs eagerly[/]")
        elif brk.in_loop:
            notes.append("in loop")
        if brk.ignored:
            notes.append("[dim]ignored[/]")
        if brk.fix:
            notes.append(f"fix: {brk.fix}")
        if brk.ranks > 1:
            notes.append(f"{brk.ranks} ranks")
        rows.append((brk, str(counted.total), " ".join(notes)))
    fit = BreakLayout.of(rows, columns)
    for column in BREAK_COLUMNS:
        table.add_column(column, **fit.options(column))
    for number, (brk, total, notes) in enumerate(rows, 1):
        table.add_row(
            str(number),
            escape(brk.gb_id or "-"),
            escape(brk.category.value),
            escape(f"{width.place(brk.file, brk.line, fit.where)} {brk.function}" + _inside(brk, fit.where)),
            escape(shorten(brk.code, fit.code) + _library_code(brk, fit.code)),
            total,
            notes,
        )
    return table


def recompile_table(report: Report) -> Table:
    """After the breaks: frames that compiled more than once, limit hits first, then by count."""
    new = set(report.diff.recompiles.new) if report.diff and report.diff.recompiles else None
    table = Table(title="Recompilations, highest impact first", title_justify="left")
    for column in ("where", "compiles", "guard kind", "failing guard", "note"):
        table.add_column(column, overflow="fold")
    for rc in recompile.ordered(report):
        notes = ["[red]hit the recompile limit: runs eagerly[/]"] if rc.limit_hit else []
        if rc.info_only:
            notes.append("[dim]info: automatic dynamic shapes[/]")
        for reason in rc.reasons:
            is_new = new is not None and reason.fingerprint in new
            table.add_row(
                escape(f"{rc.file}:{rc.line} {rc.function}{inside(rc)}"),
                str(rc.compilations),
                escape(reason.kind) + (" (dynamic)" if reason.dynamic else ""),
                escape(reason.guard[:80]),
                " ".join([*(["[bold]NEW[/]"] if is_new else []), *notes, escape(advice(rc, reason))]),
            )
    return table


def advice(rc: Recompilation, reason: RecompileReason) -> str:
    """No advice where there is nothing to fix (automatic dynamic shapes settled it) or where the
    remedy is a new break's (the code that recompiles exists because of it)."""
    return "" if rc.info_only or reason.dynamic or rc.new_break else reason.advice


def _inside(brk: GraphBreak, where: int = WHERE_CHARS) -> str:
    """The library site under the repository line that reached it."""
    site = brk.library_site
    return f"\n→ inside {site.package}:\n  {width.place(site.path, site.line, where - 2)}" if site else ""


def _library_code(brk: GraphBreak, code: int = CODE_CHARS) -> str:
    site = brk.library_site
    return f"\n→ {shorten(site.code, code - 2)}" if site and site.code else ""


@dataclass(frozen=True)
class BreakLayout:
    """The break table's widths at a terminal's columns: the `where` column as wide as its longest
    `file:line` (up to WHERE_CHARS), the code column what is left after the others and a share
    for the notes."""

    where: int = WHERE_CHARS
    code: int = CODE_CHARS
    fixed: bool = False

    @classmethod
    def of(cls, rows: Sequence[tuple[GraphBreak, str, str]], columns: int | None) -> BreakLayout:
        """`rows`: each break with its count and note (rich markup) as the table shows them."""
        breaks = [brk for brk, _, _ in rows]
        where = min(WHERE_CHARS, max([len(f"{b.file}:{b.line}") for b in breaks] + [len("where")]))
        if columns is None:
            return cls(where=where)
        others = (
            len(str(len(rows))),
            max([len(b.gb_id or "-") for b in breaks] + [2]),
            max([len(b.category.value) for b in breaks] + [len("category")]),
            max([len(total) for _, total, _ in rows] + [1]),
            min(NOTE_CHARS, max([len(Text.from_markup(note).plain) for _, _, note in rows] + [len("note")])),
        )
        borders = 3 * len(BREAK_COLUMNS) + 1  # a rule and a space each side of every cell
        longest = max([len(b.code) for b in breaks] + [len("code")])
        wanted = min(CODE_CHARS, longest)
        room = columns - borders - sum(others) - where
        if room < min(wanted, CODE_MIN):  # the places give way first, down to WHERE_MIN
            where = max(WHERE_MIN, where - (min(wanted, CODE_MIN) - room))
            room = columns - borders - sum(others) - where
        return cls(where=where, code=max(CODE_FLOOR, min(wanted, room)), fixed=True)

    def options(self, column: str) -> dict:
        if column == "where":
            # `file:line` fits by construction; a longer function name ends in "…", not folded
            return {"overflow": "ellipsis", "min_width": self.where, "max_width": self.where if self.fixed else None}
        if column == "code" and self.fixed:
            return {"no_wrap": True, "overflow": "ellipsis", "width": self.code}
        if column in ("#", "id", "n"):
            return {"no_wrap": True}
        return {"overflow": "fold"}


def summary(c: counts.Counts) -> str:
    line = (
        f"{c.distinct} graph break{'s' * (c.distinct != 1)} ({c.occurrences} occurrence{'s' * (c.occurrences != 1)})"
        f" in {c.entrypoints} entrypoint{'s' * (c.entrypoints != 1)}"
    )
    if c.trace_problems:
        line += f", {c.trace_problems} trace problem{'s' * (c.trace_problems != 1)}"
    if c.not_clean:
        line += f"; did not run cleanly or compiled nothing: {', '.join(c.not_clean)}"
    return line


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
        parts.append(recompile_table(report))
    for e in report.entrypoints:
        if e.compile_error is not None:
            parts.append(Text(f"{e.name}: {e.status.value}: {compile_error_words(e.compile_error)}", style="red"))
        elif e.status is not Status.OK and e.error:
            parts.append(Text(f"{e.name}: {e.status.value}\n{e.error[-1500:]}", style="red"))
        for problem in e.trace_problems[:10]:
            parts.append(Text(f"{e.name}: trace: {problem}", style="yellow"))
        if e.from_base:
            parts.append(Text(f"{e.name}: not run, the base's result: {e.from_base}", style="dim"))
    c = counts.counts(report)
    if report.diff is not None:
        d = report.diff
        hidden = f", {c.hidden} hidden (their frame now runs eagerly)" if c.hidden else ""
        hidden += f", {c.revealed} revealed (their frame ran eagerly on the base)" if c.revealed else ""
        parts.append(
            Text(f"{c.new} new, {c.fixed} fixed{hidden}, {c.persisting} persisting vs {d.base_ref} ({d.base_sha[:7]})")
        )
        if d.dependencies is not None and d.dependencies.packages:
            parts.append(Text(dependency_line(d)))
    parts.append(Text(summary(c)))
    return parts


def dependency_line(d: Diff) -> str:
    """`tinydep 1.0 → 2.0: 1 fixed, 1 new; the code change: 1 new`: what each change brought."""
    found = d.dependencies
    assert found is not None

    def said(cause: Cause) -> str:
        n = Counter(c.state.value for c in d.changes if found.cause(c.fingerprint) is cause)
        breaks = [f"{n[state]} {state}" for state in ("fixed", "new", "hidden", "revealed") if n[state]]
        compared = d.recompiles
        if compared is not None:
            came = sum(1 for f in (*compared.new, *compared.new_limit) if found.cause(f) is cause)
            went = sum(1 for f in compared.fixed if found.cause(f) is cause)
            for count, word in ((went, "fixed"), (came, "new")):
                breaks += [f"{count} {word} recompilation problem{'s' * (count != 1)}"] if count else []
        return ", ".join(breaks)

    line = f"{found.summary}: {said(Cause.DEPENDENCIES) or 'no change in graph breaks'}"
    if found.code_changed:
        line += f"; the code change: {said(Cause.CODE) or 'no change'}"
    both = said(Cause.BOTH)
    return line + (f"; both changed under a changed line that calls a library: {both}" if both else "")


def inside(rc: Recompilation) -> str:
    """` → einops/einops.py:512 rearrange`: the installed function that recompiled, when it is one."""
    site = rc.library_site
    return f" → {site.path}:{site.line} {site.function}".rstrip() if site else ""
