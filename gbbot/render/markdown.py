"""Report → markdown (PR comment, job summary, `--markdown`). Pure; the layout is a Jinja2
template, every untrusted string passes an escaping filter."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import jinja2

from gbbot.analysis import recompile
from gbbot.core import counts
from gbbot.core.counts import BreakCounts
from gbbot.core.model import GraphBreak, Report, Status
from gbbot.render import fixes
from gbbot.render.escape import md_code, md_code_block, md_link, md_text
from gbbot.render.findings import compile_error_words, eager_words

TEMPLATES = Path(__file__).parent / "templates"
STATUS_ICON = {"ok": "✅", "failed": "❌", "timeout": "⏱️", "crashed": "💥", "skipped": "⏭️", "no_compile": "⚠️"}

TITLE = "gbbot: torch.compile graph breaks"  # the comment's, the check run's and the summary's heading


@dataclass(frozen=True)
class Item:
    brk: GraphBreak
    entrypoints: tuple[str, ...]
    fix_lines: tuple[str, ...] = ()  # trusted markdown: what the fix step concluded for it
    counted: BreakCounts | None = None  # over every entrypoint (a fixed break: the base's record)
    note: str = ""  # markdown: why it is in its section (what hides it)

    @property
    def total(self) -> int:
        return self.counted.total if self.counted else self.brk.count

    @property
    def frame_eager(self) -> bool:
        return self.counted.frame_eager if self.counted else self.brk.frame_skipped

    @property
    def eager_note(self) -> str:
        """Markdown: which frame it makes run eagerly."""
        return eager_words(self.brk, md_code, md_text)


@dataclass(frozen=True)
class Section:
    title: str
    items: tuple[Item, ...]
    collapsed: bool = False
    brief: bool = False


@dataclass(frozen=True)
class Options:
    title: str = TITLE
    footer: tuple[str, ...] = ()
    max_items: int | None = None  # per section; the rest is counted, not shown


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=False,  # markdown, escaped by the filters below
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters.update(
        md=md_text,
        code=md_code,
        codeblock=md_code_block,
        doclink=lambda url, gb_id: md_link(f"{gb_id or 'Graph break'} documentation", url),
    )
    return env


ENV = _environment()


def items(report: Report) -> list[Item]:
    """One item per fingerprint, with every entrypoint it appeared in and its fix result, in
    impact order."""
    seen: dict[str, GraphBreak] = {}
    for brk in report.breaks:
        seen.setdefault(brk.fingerprint, brk)
    each = counts.per_break(report)
    fixed = fixes.lines_by_break(report)
    return [Item(b, each[f].entrypoints, fixed.get(f, ()), each[f]) for f, b in seen.items()]


def _limit(found: list[Item], options: Options) -> tuple[Item, ...]:
    return tuple(found if options.max_items is None else found[: options.max_items])


def sections(report: Report, options: Options) -> list[Section]:
    found = items(report)
    ignored = [i for i in found if i.brk.ignored]
    counted = [i for i in found if not i.brk.ignored]
    out: list[Section] = []
    if report.diff is None:
        out.append(Section("Graph breaks", _limit(counted, options)))
    else:
        new, persisting = set(report.diff.new), set(report.diff.persisting)
        out.append(Section("New graph breaks", _limit([i for i in counted if i.brk.fingerprint in new], options)))
        fixed_in: dict[str, list[str]] = {}
        for entry in report.diff.entrypoints:
            for fingerprint in entry.fixed:
                fixed_in.setdefault(fingerprint, []).append(entry.name)
        fixed = [Item(b, tuple(fixed_in.get(b.fingerprint, ()))) for b in report.diff.fixed_breaks]
        out.append(Section("Fixed", _limit(fixed, options), brief=True))
        out.append(Section(HIDDEN_TITLE, _limit(hidden_items(report), options), brief=True))
        shown = set(report.diff.revealed)
        revealed = [replace(i, note=REVEALED_NOTE) for i in counted if i.brk.fingerprint in shown]
        out.append(Section(REVEALED_TITLE, _limit(revealed, options), brief=True))
        kept = [i for i in counted if i.brk.fingerprint in persisting]
        out.append(Section("Persisting", _limit(kept, options), collapsed=True, brief=True))
    out.append(Section("Ignored", _limit(ignored, options), collapsed=True, brief=True))
    return [s for s in out if s.items]


HIDDEN_TITLE = "Hidden, not fixed"
REVEALED_TITLE = "Revealed, not new"
REVEALED_NOTE = "a frame it lies in ran eagerly on the base, so Dynamo did not trace it there"


def hidden_items(report: Report) -> list[Item]:
    """Base breaks the head no longer traces because a head break makes their frame run eagerly."""
    d = report.diff
    if d is None:
        return []
    by = dict(d.hidden_by)
    where = {b.fingerprint: b for b in report.breaks}
    hidden_in: dict[str, list[str]] = {}
    for entry in d.entrypoints:
        for fingerprint in entry.hidden:
            hidden_in.setdefault(fingerprint, []).append(entry.name)

    def note(fingerprint: str) -> str:
        hider = where.get(by.get(fingerprint, ""))
        place = f" at {md_code(f'{hider.file}:{hider.line}')}" if hider else ""
        hider_id = md_code(by.get(fingerprint, "?"))
        return f"its frame runs eagerly because of the break{place} ({hider_id}), so it is no longer traced"

    return [Item(b, tuple(hidden_in.get(b.fingerprint, ())), note=note(b.fingerprint)) for b in d.hidden_breaks]


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    return f"{count} {singular if count == 1 else plural_form or singular + 's'}"


def headline(report: Report) -> str:
    c = counts.counts(report)
    parts = [
        f"**{plural(c.distinct, 'graph break')}** ({plural(c.occurrences, 'occurrence')})"
        f" in {plural(c.entrypoints, 'entrypoint')}",
        plural(c.graphs, "graph"),
        f"{plural(c.frames_eager, 'frame runs', 'frames run')} eagerly",
        f"torch {md_code(report.torch_version or 'unknown')}",
        f"mode `{report.mode.value if report.mode else 'unknown'}`",
    ]
    if report.commit:
        parts.append(f"commit `{report.commit[:7]}`")
    if c.trace_problems:
        parts.append(plural(c.trace_problems, "trace problem"))
    line = " · ".join(parts)
    if report.diff is not None:
        d = report.diff
        hidden = f" · **{c.hidden} hidden**" if c.hidden else ""
        hidden += f" · {c.revealed} revealed" if c.revealed else ""
        line += (
            f"\n\n**{c.new} new** · **{c.fixed} fixed**{hidden} · {c.persisting} persisting"
            f" — compared with {md_code(d.base_ref)} at `{d.base_sha[:7]}`"
        )
    return line


def verdict(report: Report) -> str:
    """What to say when no break is listed: never a plain all-clear when some entrypoint did not
    run cleanly or compiled nothing, since then its breaks are unknown."""
    not_clean = counts.counts(report).not_clean
    if not not_clean:
        return "No graph breaks. 🎉"
    names = ", ".join(md_code(n) for n in not_clean)
    return f"No graph breaks seen, but {names} did not run cleanly or compiled nothing: its breaks are unknown."


def render(report: Report, options: Options = Options()) -> str:
    diff = report.diff
    deltas = {e.name: e for e in diff.entrypoints} if diff else {}

    def graph_delta(name: str) -> str:
        entry = deltas.get(name)
        if entry is None or entry.no_baseline or entry.graph_delta is None:
            return "—"
        return f"{entry.graph_delta:+d}" if entry.graph_delta else "0"

    template = ENV.get_template("report.md.j2")
    text = (
        template.render(
            title=options.title,
            report=report,
            diff=diff,
            headline=headline(report),
            status_icon=STATUS_ICON,
            graph_delta=graph_delta,
            baseline_notes=[
                *(diff.notes if diff else ()),
                *(e.no_baseline for e in deltas.values() if e.no_baseline),
                *(e.still_failing for e in deltas.values() if e.still_failing),
            ],
            compile_error=lambda error: compile_error_words(error, md_code, md_text),
            failed=[e for e in report.entrypoints if e.status is not Status.OK],
            sections=sections(report, options),
            recompiles=recompile.ordered(report),
            recompile_new=set(diff.recompiles.new) if diff and diff.recompiles else set(),
            recompile_doc=recompile.load_rules().doc_url,
            verdict=verdict(report),
            footer=options.footer,
        ).strip()
        + "\n"
    )
    return tidy(text)


def tidy(text: str) -> str:
    """At most one blank line in a row, outside fenced code (whose content is shown as is)."""
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        marker = re.match(r"^(`{3,})", line)
        if marker and (fence is None or marker.group(1) == fence):
            fence = None if fence else marker.group(1)
        elif fence is None and not line.strip() and out and not out[-1].strip():
            continue
        out.append(line)
    return "\n".join(out)
