"""Report → markdown (PR comment, job summary, `--markdown`). Pure; the layout is a Jinja2
template, every untrusted string passes an escaping filter."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from gbbot import recompile
from gbbot.model import GraphBreak, Report, Status
from gbbot.render.escape import md_code, md_code_block, md_link, md_text

TEMPLATES = Path(__file__).parent / "templates"
STATUS_ICON = {"ok": "✅", "failed": "❌", "timeout": "⏱️", "crashed": "💥", "skipped": "⏭️"}


@dataclass(frozen=True)
class Item:
    brk: GraphBreak
    entrypoints: tuple[str, ...]
    extra: tuple[str, ...] = ()  # trusted markdown lines added by other steps (verified fixes)


@dataclass(frozen=True)
class Section:
    title: str
    items: tuple[Item, ...]
    collapsed: bool = False
    brief: bool = False


@dataclass(frozen=True)
class Options:
    title: str = "gbbot: torch.compile graph breaks"
    footer: tuple[str, ...] = ()
    extra: Callable[[GraphBreak], Iterable[str]] = field(default=lambda _b: ())
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


def items(report: Report, options: Options) -> list[Item]:
    """One item per fingerprint, with every entrypoint it appeared in, in impact order."""
    seen: dict[str, tuple[GraphBreak, list[str]]] = {}
    for entrypoint in report.entrypoints:
        for brk in entrypoint.breaks:
            seen.setdefault(brk.fingerprint, (brk, []))[1].append(entrypoint.name)
    return [Item(b, tuple(names), tuple(options.extra(b))) for b, names in seen.values()]


def _limit(found: list[Item], options: Options) -> tuple[Item, ...]:
    return tuple(found if options.max_items is None else found[: options.max_items])


def sections(report: Report, options: Options) -> list[Section]:
    found = items(report, options)
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
        kept = [i for i in counted if i.brk.fingerprint in persisting]
        out.append(Section("Persisting", _limit(kept, options), collapsed=True, brief=True))
    out.append(Section("Ignored", _limit(ignored, options), collapsed=True, brief=True))
    return [s for s in out if s.items]


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    return f"{count} {singular if count == 1 else plural_form or singular + 's'}"


def headline(report: Report) -> str:
    counted = [b for b in report.breaks if not b.ignored]
    graphs = sum(e.graph_count for e in report.entrypoints)
    eager = sum(e.frames_skipped for e in report.entrypoints)
    parts = [
        f"**{plural(sum(b.count for b in counted), 'graph break')}** ({len({b.fingerprint for b in counted})} distinct)"
        f" in {plural(len(report.entrypoints), 'entrypoint')}",
        plural(graphs, "graph"),
        f"{plural(eager, 'frame runs', 'frames run')} eagerly",
        f"torch {md_code(report.torch_version or 'unknown')}",
        f"mode `{report.mode.value}`",
    ]
    if report.commit:
        parts.append(f"commit `{report.commit[:7]}`")
    line = " · ".join(parts)
    if report.diff is not None:
        d = report.diff
        line += (
            f"\n\n**{len(d.new)} new** · **{len(d.fixed)} fixed** · {len(d.persisting)} persisting"
            f" — compared with {md_code(d.base_ref)} at `{d.base_sha[:7]}`"
        )
    return line


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
            baseline_notes=[*(diff.notes if diff else ()), *(e.no_baseline for e in deltas.values() if e.no_baseline)],
            failed=[e for e in report.entrypoints if e.status is not Status.OK],
            sections=sections(report, options),
            recompiles=recompile.ordered(report),
            recompile_new=set(diff.recompiles.new) if diff and diff.recompiles else set(),
            recompile_doc=recompile.load_rules().doc_url,
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
