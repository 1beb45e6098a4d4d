"""A review suggestion as a value: `gbbot.fix.present` makes them from verified fixes and
`gbbot.publish.review` posts them. Neither package depends on the other through it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Suggestion:
    """One review comment: the range is exactly the lines the suggestion replaces."""

    path: str
    start_line: int
    end_line: int
    body: str
