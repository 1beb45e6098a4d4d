"""The markdown report as published (PR comment, check-run summary, job summary), fitted under a
size limit: fewer items per section first, then a cut with a pointer to the full report."""

from __future__ import annotations

import functools
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


class Texts:
    """One report's markdown for one publish: each text (one set of options) rendered once, however
    many places show it (the comment, the check run, the job summary), size budgets try it or
    retries ask for it again."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self._made: dict[markdown.Options, str] = {}

    def markdown(self, options: markdown.Options) -> str:
        if options not in self._made:
            self._made[options] = markdown.render(self.report, options)
        return self._made[options]

    @functools.cached_property
    def stable(self) -> Texts:
        """The report as a reader sees it from commit to commit (no commits): the comment's hash."""
        diff = replace(self.report.diff, base_sha="") if self.report.diff else None
        return Texts(replace(self.report, commit=None, diff=diff))


def fitted(texts: Texts, content: Content, limit: int, measure: Callable[[str], int] = len) -> str:
    """The fullest rendering within `limit` (as `measure` counts), else the last one cut to fit."""
    for budget in ITEM_BUDGETS:
        text = texts.markdown(content.options(budget))
        if measure(text) <= limit:
            return text
    if measure is len:
        return limits.fit(text, limit, content.pointer)
    return limits.fit_bytes(text, limit, content.pointer)
