"""Report → a readable terminal summary (rich)."""

from __future__ import annotations

from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gbbot.analysis import recompile
from gbbot.core import counts
from gbbot.core.model import GraphBreak, Recompilation, RecompileReason, Report, Status
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


def shorten(code: str, limit: int = CODE_CHARS) -> str:
    """At most `limit` characters, cut after a whole token (at a space or before punctuation),
    with "…" saying that something was cut."""
    if len(code) <= limit:
        return code
    head = code[: limit - 1]
    cut = max(head.rfind(" "), *(head.rfind(c) for c in "([{,.=:"))
    return (head[:cut] if cut > limit // 2 else head).rstrip() + "…"


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
    each = counts.per_break(report)
    for brk in (b for b in report.breaks if b.fingerprint not in seen):
        seen.add(brk.fingerprint)
        counted = each[brk.fingerprint]
        notes = []
        if new is not None and brk.fingerprint in new:
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
        table.add_row(
            str(len(seen)),
            escape(brk.gb_id or "-"),
            escape(brk.category.value),
            escape(f"{brk.file}:{brk.line} {brk.function}" + _inside(brk)),
            escape(shorten(brk.code) + _library_code(brk)),
            str(counted.total),
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
                escape(f"{rc.file}:{rc.line} {rc.function}{inside(rc)}"),
                str(rc.compilations),
                escape(reason.kind) + (" (dynamic)" if reason.dynamic else ""),
                escape(reason.guard[:80]),
                " ".join([*(["[bold]NEW[/]"] if is_new else []), *notes, escape(advice(rc, reason))]),
            )
    return table


def advice(rc: Recompilation, reason: RecompileReason) -> str:
    """No advice where there is nothing to fix (automatic dynamic shapes settled it)."""
    return "" if rc.info_only or reason.dynamic else reason.advice


def _inside(brk: GraphBreak) -> str:
    """The library site under the repository line that reached it."""
    site = brk.library_site
    return f"\n→ inside {site.package}: {site.path}:{site.line}" if site else ""


def _library_code(brk: GraphBreak) -> str:
    site = brk.library_site
    return f"\n→ {site.code[:80]}" if site and site.code else ""


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


def render(report: Report, console: Console) -> None:
    parts: list = [entrypoint_table(report)]
    if report.breaks:
        parts.append(break_table(report))
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
    parts.append(Text(summary(c)))
    console.print(Group(*parts))


def inside(rc: Recompilation) -> str:
    """` → einops/einops.py:512 rearrange`: the installed function that recompiled, when it is one."""
    site = rc.library_site
    return f" → {site.path}:{site.line} {site.function}".rstrip() if site else ""
