"""The markdown report as published (PR comment, check-run summary, job summary), fitted under a
size limit: fewer items per section first, then a cut with a pointer to the full report."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace

from gbbot.core import limits
from gbbot.core.model import Report
from gbbot.render import markdown

# Items per section tried, in order, until the text fits; 0 still shows the entrypoint table.
ITEM_BUDGETS = (None, 100, 50, 20, 10, 5, 0)


def title_for(header: str) -> str:
    return markdown.TITLE if not header else f"{markdown.TITLE} · {header}"


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


def fitted(texts: Texts, content: markdown.Options, limit: int, measure: Callable[[str], int] = len) -> str:
    """The fullest rendering within `limit` (as `measure` counts), else the last one cut to fit."""
    for budget in ITEM_BUDGETS:
        text = texts.markdown(replace(content, max_items=budget))
        if measure(text) <= limit:
            return text
    if measure is len:
        return limits.fit(text, limit, content.pointer)
    return limits.fit_bytes(text, limit, content.pointer)
