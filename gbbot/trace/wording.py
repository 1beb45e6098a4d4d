"""How a torch release words a graph-break message: the one place that knows the format.

The parser splits a message on `FORMAT`'s markers. The format declares the torch releases it was
checked against; a trace from a release outside that range is still read with it, and
`support_note` says so in words for the report's trace problems (a silent misread would be worse
than a visible caveat). A release that words its messages otherwise gets a format of its own here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Version = tuple[int, int]


@dataclass(frozen=True)
class MessageFormat:
    first: Version  # oldest torch release this format was checked against
    last: Version  # newest
    reason_header: str = "Graph Break Reason:"
    traceback_header: str = "User code traceback:"
    stack_attribution_header: str = "Stack variable source attribution:"
    chain_separator: str = "*** While handling this graph break, another graph break occurred: ***"
    eager_fallback_marker: str = "Skipping the function and falling back to eager"
    # A break Dynamo could not resume from: the frame compiles up to the last resumable point and
    # runs the rest of itself eagerly.
    unresumable_marker: str = "Encountered graph break that we cannot resume from"
    # A compile's fail_type when it raised a graph break (fullgraph=True, error_on_graph_break);
    # any other (TorchRuntimeError, UserError, …) is an error that stopped the program.
    graph_break_fail_types: frozenset[str] = frozenset({"Unsupported"})
    doc_link_marker: str = "please visit:"
    # The documentation link carries the registry id: …/gb/gb0059.html
    doc_url_re: re.Pattern[str] = re.compile(r"https?://\S+/gb/(gb\d+)\.html", re.IGNORECASE)

    @property
    def section_ends(self) -> tuple[str, ...]:
        return (self.stack_attribution_header, self.traceback_header)

    def covers(self, version: Version) -> bool:
        return self.first <= version <= self.last


# 2.12, 2.13 and 2.14 are checked by recorded fixtures (tests/fixtures/small*.trace.log) and 2.14 by
# the real-torch patterns in CI; 2.15 by running the same patterns and models on it (the same record
# kinds, artifact names, breaks and fingerprints as 2.13; only torch's own hint texts moved), without
# a recorded fixture here: pip on the machines that record them stops at 2.14.
FORMAT = MessageFormat(first=(2, 6), last=(2, 15))


def release(version: str | None) -> Version | None:
    """Text such as 2.13.0+cpu → (2, 13); None when the text names no release."""
    match = re.match(r"\s*(\d+)\.(\d+)", version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def support_note(version: str | None) -> str | None:
    """In words, when a trace comes from a torch release outside what gbbot was checked against."""
    found = release(version)
    if found is None or FORMAT.covers(found):
        return None
    first, last = (".".join(map(str, v)) for v in (FORMAT.first, FORMAT.last))
    return (
        f"torch {version} is outside the releases gbbot reads ({first}–{last}): its messages were "
        "read with the nearest known format, so some breaks may be missed or misread"
    )
