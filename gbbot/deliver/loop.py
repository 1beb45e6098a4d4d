"""Loop protection: gbbot stops pushing fix commits onto a branch whose last two commits are
already gbbot's, so that two automations answering each other cannot grow a branch forever."""

from __future__ import annotations

from collections.abc import Sequence

from gbbot.edges.git import COMMITTER

AUTHOR_EMAIL = COMMITTER["GIT_AUTHOR_EMAIL"]
SUBJECT = "gbbot: fix "
IN_A_ROW_MAX = 2


def is_fix_commit(email: str, subject: str) -> bool:
    return email == AUTHOR_EMAIL and subject.startswith(SUBJECT)


def too_many(recent: Sequence[tuple[str, str]]) -> bool:
    """Whether the newest commits (author email, subject; newest first) are already as many gbbot
    fix commits in a row as gbbot makes."""
    newest = recent[:IN_A_ROW_MAX]
    return len(newest) == IN_A_ROW_MAX and all(is_fix_commit(e, s) for e, s in newest)
