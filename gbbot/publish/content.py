"""The markdown report as published (PR comment, check-run summary, job summary), fitted under a
size limit: fewer items per section first, then a cut with a pointer to the full report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from gbbot.core import limits
from gbbot.core.model import Report
from gbbot.render import markdown

# Items per section tried, in order, until the text fits; 0 still shows the entrypoint table.
ITEM_BUDGETS = (None, 100, 50, 20, 10, 5, 0)
DEFAULT_TITLE = markdown.TITLE


@dataclass(frozen=True)
class Content:
    """How the report is titled and where its full version is."""

    title: str = DEFAULT_TITLE
    pointer: str = ""  # trusted markdown: where the full report is (workflow run, artifact)
    notes: tuple[str, ...] = ()  # trusted markdown lines at the end: where figures come from, what was left out
    links: markdown.SourceLinks | None = None  # where `file:line` links point
    gb_fix: bool = False  # the repository answers `/gb-fix` comments
    # How the comparison was made (base reused, dirty tree): for the job summary and the log; the
    # PR comment keeps only what changes the reading of the result.
    process_notes: bool = True
    entrypoint_table: bool = True  # the comment leaves it out unless it changes the reading

    def noted(self, line: str) -> Content:
        return replace(self, notes=(*self.notes, line))

    def for_comment(self) -> Content:
        return replace(self, process_notes=False, entrypoint_table=False)

    def options(self, max_items: int | None = None, footer: bool = True) -> markdown.Options:
        """`footer=False`: what a reader sees that stays the same from commit to commit (no
        pointer to this run, no links at this commit)."""
        notes = [] if max_items is None else [f"_Showing at most {max_items} breaks per section (size limit)._"]
        notes += self.notes
        if footer and self.pointer:
            notes.append(self.pointer)
        return markdown.Options(
            title=self.title,
            footer=tuple(notes),
            max_items=max_items,
            links=self.links if footer else None,
            gb_fix=self.gb_fix,
            process_notes=self.process_notes,
            entrypoint_table=self.entrypoint_table,
        )


def title_for(header: str) -> str:
    return DEFAULT_TITLE if not header else f"{DEFAULT_TITLE} · {header}"


def fitted(report: Report, content: Content, limit: int, measure: Callable[[str], int] = len) -> str:
    """The fullest rendering within `limit` (as `measure` counts), else the last one cut to fit."""
    for budget in ITEM_BUDGETS:
        text = markdown.render(report, content.options(budget))
        if measure(text) <= limit:
            return text
    if measure is len:
        return limits.fit(text, limit, content.pointer)
    return limits.fit_bytes(text, limit, content.pointer)
