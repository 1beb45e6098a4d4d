"""Report → a readable terminal summary (rich)."""

from __future__ import annotations

from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gbbot import recompile
from gbbot.model import GraphBreak, Report, Status

STATUS_STYLE = {
    Status.OK: "green",
    Status.FAILED: "red",
    Status.TIMEOUT: "yellow",
    Status.CRASHED: "red",
    Status.SKIPPED: "dim",
}


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


def break_table(report: Report) -> Table:
    new = set(report.diff.new) if report.diff else None
    table = Table(title="Graph breaks, highest impact first", title_justify="left")
    for column in ("#", "id", "category", "where", "code", "n", "note"):
        table.add_column(column, overflow="fold")
    seen: set[str] = set()
    for brk in (b for b in report.breaks if b.fingerprint not in seen):
        seen.add(brk.fingerprint)
        notes = []
        if new is not None and brk.fingerprint in new:
            notes.append("[bold]NEW[/]")
        if brk.frame_skipped:
            notes.append("[red]frame runs eagerly[/]")
        elif brk.in_loop:
            notes.append("in loop")
        if brk.ignored:
            notes.append("[dim]ignored[/]")
        if brk.fix:
            notes.append(f"fix: {brk.fix}")
        if brk.ranks > 1:
            notes.append(f"{brk.ranks} ranks")
        table.add_row(
            str(len(seen)),
            escape(brk.gb_id or "-"),
            escape(brk.category.value),
            escape(f"{brk.file}:{brk.line} {brk.function}" + _inside(brk)),
            escape(brk.code[:80] + _library_code(brk)),
            str(brk.count),
            " ".join(notes),
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
                escape(f"{rc.file}:{rc.line} {rc.function}"),
                str(rc.compilations),
                escape(reason.kind) + (" (dynamic)" if reason.dynamic else ""),
                escape(reason.guard[:80]),
                " ".join([*(["[bold]NEW[/]"] if is_new else []), *notes, escape(reason.advice)]),
            )
    return table


def _inside(brk: GraphBreak) -> str:
    """The library site under the repository line that reached it."""
    site = brk.library_site
    return f"\n→ inside {site.package}: {site.path}:{site.line}" if site else ""


def _library_code(brk: GraphBreak) -> str:
    site = brk.library_site
    return f"\n→ {site.code[:80]}" if site and site.code else ""


def render(report: Report, console: Console) -> None:
    parts: list = [entrypoint_table(report)]
    if report.breaks:
        parts.append(break_table(report))
    if any(e.recompiles for e in report.entrypoints):
        parts.append(recompile_table(report))
    for e in report.entrypoints:
        if e.status is not Status.OK and e.error:
            parts.append(Text(f"{e.name}: {e.status.value}\n{e.error[-1500:]}", style="red"))
        for problem in e.trace_problems[:10]:
            parts.append(Text(f"{e.name}: trace: {problem}", style="yellow"))
    if report.diff is not None:
        d = report.diff
        parts.append(
            Text(
                f"{len(d.new)} new, {len(d.fixed)} fixed, {len(d.persisting)} persisting"
                f" vs {d.base_ref} ({d.base_sha[:7]})"
            )
        )
    console.print(Group(*parts))
