"""Audit records → the tracking issue's markdown. Pure.

Top to bottom: a regression called out first (new breaks, entrypoints that stopped running),
the totals and their trend, charts of breaks and graphs per entrypoint over the last records
(Mermaid `xychart-beta`, which GitHub renders) with the same numbers as a table, what changed
since the previous record and which commit range (or torch upgrade) explains it, the breaks with
the most impact and whether a verified fix exists, and the entrypoints that do not run. Every
text that came from a record (names, files, code, errors) is escaped: records are data anyone
who can push to the data branch may have written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gbbot.audit.changes import Changes, Stopped
from gbbot.audit.record import BreakEntry, Record
from gbbot.core import limits, words
from gbbot.core.doc_links import graph_break_doc
from gbbot.core.model import Change, ChangeState, GraphBreak
from gbbot.render.escape import md_code, md_code_block, md_text

MARKER = "<!-- gbbot:audit-issue -->"
TITLE = "gbbot audit: graph breaks on the default branch"
TOP_BREAKS = 10
LISTED_CHANGES = 30
ERROR_LINES = 15


@dataclass(frozen=True)
class Where:
    """Where links point: the repository's web address (validated by the caller) and this run."""

    repo_url: str | None = None  # e.g. https://github.com/owner/repo
    run_url: str | None = None


def _short(sha: str) -> str:
    return sha[:7]


def _commit(sha: str, where: Where) -> str:
    return f"[`{_short(sha)}`]({where.repo_url}/commit/{sha})" if where.repo_url else f"`{_short(sha)}`"


def _range(changes: Changes, where: Where) -> str:
    before, now = changes.previous, changes.current
    if before is None:
        return ""
    parts = []
    if before.commit != now.commit:
        text = f"{_short(before.commit)}..{_short(now.commit)}"
        url = f"{where.repo_url}/compare/{before.commit}...{now.commit}" if where.repo_url else None
        parts.append(f"[`{text}`]({url})" if url else f"`{text}`")
    if before.torch != now.torch:
        parts.append(f"torch {md_code(before.torch or 'unknown')} → {md_code(now.torch or 'unknown')}")
    return ", ".join(parts) or "the same commit and torch (a flaky run, or the environment)"


def _break_line(names: str | Sequence[str], brk: BreakEntry | GraphBreak) -> str:
    what = md_code(brk.key) + f" {md_text(brk.gb_type)}" if brk.gb_id else md_code(brk.gb_type)
    listed = ", ".join(md_code(n) for n in ([names] if isinstance(names, str) else names))
    return f"{what} at {md_code(f'{brk.file}:{brk.line}')} in {listed}" + (f": {md_code(brk.code)}" if brk.code else "")


def _change_line(change: Change) -> str:
    line = _break_line(change.entrypoints, change.brk)
    return line + (words.hidden_by(change.hidden_by, md_code) if change.hidden_by else "")


def _doc(brk: BreakEntry) -> str:
    url = graph_break_doc(brk.gb_id)  # from the id: a record's own URL could point anywhere
    return f"[docs]({url})" if url else "—"


# --- sections ----------------------------------------------------------------------------------


def callout(changes: Changes, where: Where) -> list[str]:
    if changes.previous is None:
        return ["> [!NOTE]", "> The first audit: later ones are compared with this one.", ""]
    if not changes.regression:
        return [f"✅ No regression since the previous audit ({_range(changes, where)}).", ""]
    found = words.regression(len(changes.of(ChangeState.NEW)), [md_code(s.name) for s in changes.stopped])
    return ["> [!CAUTION]", f"> **Regression:** {found} — {_range(changes, where)}.", ""]


def totals(records: Sequence[Record], where: Where) -> list[str]:
    now = records[-1]
    ran = sum(1 for e in now.entrypoints if e.ran)
    eager = sum(e.frames_eager for e in now.entrypoints)
    breaks, graphs = now.total_breaks(), now.total_graphs()
    lines = [
        f"**{words.plural(breaks, 'graph break')}** ({len(now.breaks())} distinct) in "
        f"{words.plural(graphs, 'graph')}, "
        f"{words.plural(eager, 'frame')} running eagerly; {ran} of {len(now.entrypoints)} entrypoints ran. "
        f"Audited {_commit(now.commit, where)} on {now.date[:10]} with torch {md_code(now.torch or 'unknown')}, "
        f"{md_code(now.mode)} mode" + (f", {now.repeat} runs each" if now.repeat > 1 else "") + ".",
    ]
    if len(records) > 1:
        first = records[0]
        delta = now.total_breaks() - first.total_breaks()
        trend = "▲" if delta > 0 else "▼" if delta < 0 else "="
        lines.append(
            f"Trend over the last {len(records)} audits (since {first.date[:10]}): "
            f"{first.total_breaks()} → {now.total_breaks()} breaks ({trend} {delta:+d}), "
            f"{first.total_graphs()} → {now.total_graphs()} graphs."
        )
    return [*lines, ""]


def _names(records: Sequence[Record]) -> list[str]:
    return list(dict.fromkeys(e.name for r in records for e in r.entrypoints))


def _series(records: Sequence[Record], name: str, field: str) -> list[float]:
    """0 where the entrypoint did not run, or the record has no such figure (an older one)."""
    values = []
    for rec in records:
        entry = rec.entrypoint(name)
        values.append((getattr(entry, field) or 0) if entry is not None and entry.ran else 0)
    return values


def launches_table(records: Sequence[Record], where: Where) -> list[str]:
    """The chart's numbers: graph launches per call of each entrypoint's compiled callables."""
    names = _names(records)
    rows = ["| audit | " + " | ".join(md_code(n) for n in names) + " |", "|---|" + "---:|" * len(names)]
    for rec in records:
        cells = []
        for name in names:
            entry = rec.entrypoint(name)
            per_call = entry.launches_per_call if entry is not None and entry.ran else None
            cells.append("—" if per_call is None else f"{per_call:g}")
        rows.append(f"| {rec.date[:10]} {_commit(rec.commit, where)} | " + " | ".join(cells) + " |")
    return [
        *rows,
        "",
        "Graph launches per call: how many graphs ran, on average, each time a compiled model or function was called.",
        "",
    ]


def chart(records: Sequence[Record], field: str, title: str) -> list[str]:
    """A Mermaid xychart: one line per entrypoint, in the table's order. Labels are commit
    prefixes (hex) and numbers; entrypoint names are config names ([A-Za-z0-9_.-]), quoted."""
    names = _names(records)
    top = max([1, *(v for n in names for v in _series(records, n, field))])
    labels = ", ".join(f'"{_short(r.commit)}"' for r in records)
    lines = ["```mermaid", "xychart-beta", f'    title "{title}"', f"    x-axis [{labels}]"]
    lines.append(f'    y-axis "{field}" 0 --> {top + max(1, top // 10)}')
    lines += [f"    line [{', '.join(map(str, _series(records, n, field)))}]" for n in names]
    return [*lines, "```", ""]


def table(records: Sequence[Record], where: Where) -> list[str]:
    names = _names(records)
    head = "| audit | torch | " + " | ".join(md_code(n) for n in names) + " | total |"
    rule = "|---|---|" + "---:|" * (len(names) + 1)
    rows = []
    for rec in records:
        cells = []
        for name in names:
            entry = rec.entrypoint(name)
            if entry is None:
                cells.append("—")
            elif not entry.ran:
                cells.append(f"❌ {entry.status}")
            else:
                cells.append(f"{entry.breaks} / {entry.graphs}")
        first = f"{rec.date[:10]} {_commit(rec.commit, where)}"
        total = f"{rec.total_breaks()} / {rec.total_graphs()}"
        rows.append(f"| {first} | {md_code(rec.torch or '?')} | " + " | ".join(cells) + f" | {total} |")
    legend = "Each cell: breaks / graphs. The chart lines are the entrypoints in the table's column order."
    return [head, rule, *rows, "", legend, ""]


def changed(changes: Changes, where: Where) -> list[str]:
    if changes.previous is None:
        return []
    out = [f"### Since the previous audit ({_range(changes, where)})", ""]
    if not changes.changes:
        out += ["No break appeared or went away.", ""]
    for state, label in words.AUDIT_SECTIONS:
        items = changes.of(state)
        if items:
            out.append(f"**{label}** ({len(items)}):")
            out += [f"- {_change_line(c)}" for c in items[:LISTED_CHANGES]]
            if len(items) > LISTED_CHANGES:
                out.append(f"- … and {len(items) - LISTED_CHANGES} more")
            out.append("")
    return out


def impact_order(rec: Record) -> list[tuple[str, BreakEntry]]:
    """A frame running eagerly first, then breaks in loops, then by count (as reports order them)."""
    seen: dict[str, tuple[str, BreakEntry]] = {}
    for entry in rec.entrypoints:
        for brk in entry.counted():
            seen.setdefault(brk.fingerprint, (entry.name, brk))
    return sorted(seen.values(), key=lambda nb: (not nb[1].frame_skipped, not nb[1].in_loop, -nb[1].count))


def top_breaks(rec: Record) -> list[str]:
    ordered = impact_order(rec)
    if not ordered:
        return ["### Top breaks", "", words.ALL_CLEAR, ""]
    fixes = dict(rec.fixes)
    out = [
        "### Top breaks by impact",
        "",
        "| break | where | count | impact | docs | verified fix |",
        "|---|---|---:|---|---|---|",
    ]
    for name, brk in ordered[:TOP_BREAKS]:
        impact = "whole frame eager" if brk.frame_skipped else "in a loop" if brk.in_loop else ""
        impact = f"{impact} (flaky)".strip() if brk.flaky else impact
        fix = f"✅ {md_code(fixes[brk.fingerprint])}" if brk.fingerprint in fixes else "run `gbbot fix`"
        where_ = f"{md_code(f'{brk.file}:{brk.line}')} in {md_code(name)}"
        what = f"{md_code(brk.key)} {md_text(brk.category)}"
        out.append(f"| {what} | {where_} | {brk.count} | {impact or '—'} | {_doc(brk)} | {fix} |")
    if len(ordered) > TOP_BREAKS:
        out.append(f"\n… and {len(ordered) - TOP_BREAKS} more in the report artifact.")
    return [*out, ""]


def flaky(rec: Record) -> list[str]:
    items = [(e.name, b) for e in rec.entrypoints for b in e.counted() if b.flaky]
    if not items:
        return []
    out = [f"### Flaky breaks (seen in only some of {rec.repeat} runs; never called a regression)", ""]
    return [*out, *(f"- {_break_line(n, b)}" for n, b in items[:LISTED_CHANGES]), ""]


def _error(stopped: Stopped) -> list[str]:
    tail = "\n".join((stopped.error or "no error output").splitlines()[-ERROR_LINES:])
    return [f"- {md_code(stopped.name)}: {md_text(stopped.status)}", "", md_code_block(tail), ""]


def not_running(changes: Changes) -> list[str]:
    if not changes.failing:
        return []
    out = ["### Entrypoints that do not run", ""]
    for stopped in changes.failing:
        out += _error(stopped)
    return out


def render(records: Sequence[Record], changes: Changes, where: Where, fixes: Sequence[str] = ()) -> str:
    """The whole body, the marker first, under GitHub's limit for an issue body. `fixes`: what the
    audit's fix PR section says (trusted markdown), if anything."""
    lines = [MARKER, *callout(changes, where), *totals(records, where)]
    lines += ["### Breaks and graphs per entrypoint", ""]
    lines += chart(records, "breaks", "Graph breaks per entrypoint")
    lines += chart(records, "graphs", "Graphs per entrypoint")
    if any(e.launches_per_call is not None for r in records for e in r.entrypoints):
        lines += chart(records, "launches_per_call", "Graph launches per call")
        lines += launches_table(records, where)
    lines += table(records, where)
    lines += changed(changes, where) + top_breaks(changes.current) + flaky(changes.current) + not_running(changes)
    lines += fixes
    run = f" — [this run]({where.run_url})" if where.run_url else ""
    lines.append(f"<sub>Updated by gbbot's nightly audit{run}. History: the data branch's `records/`.</sub>")
    return limits.fit("\n".join(lines) + "\n", limits.COMMENT_BODY_MAX)
