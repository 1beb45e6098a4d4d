"""Where torch documents a graph break: one page per GB id. A link is built from the id alone
(whose form the report's schema fixes), never taken from a report or record: those are the
writing job's word, and a link there could point anywhere."""

from __future__ import annotations

import re

# gbbot's own documentation, for text written into a user's repository (where a relative
# docs/… path would name a file of theirs)
DOCS = "https://github.com/gbbot/gbbot/blob/main/docs"
CONFIGURATION_DOC = f"{DOCS}/configuration.md"
GRAPH_BREAK_DOC = "https://meta-pytorch.github.io/compile-graph-break-site/gb/{id}.html"
GB_ID = re.compile(r"GB\d{4,5}", re.IGNORECASE)


def graph_break_doc(gb_id: str | None) -> str | None:
    """The documentation page of `gb_id`; None without an id, or for one of another form."""
    return GRAPH_BREAK_DOC.format(id=gb_id.lower()) if gb_id and GB_ID.fullmatch(gb_id) else None
