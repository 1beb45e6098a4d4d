"""The sticky PR comment: one per PR and `header`, found by a hidden marker AND author == the bot
AND not minimized, edited in place.

The marker carries what the next run needs to decide without re-reading the body: the header, a
hash of the content (`comment-mode: changes` leaves the comment alone when it is unchanged), and
whether this PR ever had new breaks (so that when all are fixed the comment says so).
"""

from __future__ import annotations

import enum
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from gbbot.analysis import report as report_
from gbbot.core import counts, limits, words
from gbbot.core.model import ChangeState, Report
from gbbot.publish.content import Texts, fitted
from gbbot.render.markdown import Options

MARKER_RE = re.compile(
    r"<!-- gbbot:sticky-comment header=([A-Za-z0-9_.-]{1,64}) had-new=([01]) hash=([0-9a-f]{16}) -->"
)
HEADER_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
DEFAULT_HEADER = "gbbot"


class CommentMode(str, enum.Enum):
    ALWAYS = "always"  # create or update on every run
    CHANGES = "changes"  # create when there is news; update only when the content changed
    OFF = "off"


class Action(str, enum.Enum):
    CREATE = "created"
    UPDATE = "updated"
    LEAVE = "unchanged"


def header_key(header: str) -> str:
    """The header as it goes into the marker: a safe token (it is also shown, escaped, in the title)."""
    return HEADER_UNSAFE.sub("-", header.strip()).strip("-")[:64] or DEFAULT_HEADER


@dataclass(frozen=True)
class Marker:
    header: str
    had_new: bool
    content_hash: str

    def __str__(self) -> str:
        fields = f"header={self.header} had-new={int(self.had_new)} hash={self.content_hash}"
        return f"<!-- gbbot:sticky-comment {fields} -->"

    @classmethod
    def find(cls, body: str) -> Marker | None:
        match = MARKER_RE.search(body or "")
        return cls(match.group(1), match.group(2) == "1", match.group(3)) if match else None


def content_hash(texts: Texts, content: Options) -> str:
    """Hash of what a reader sees, without the parts that change on every run (commits, links)."""
    stable = texts.stable.markdown(content.for_comment().stable())
    return hashlib.sha256(stable.encode("utf-8")).hexdigest()[:16]


def has_news(report: Report) -> bool:
    """Something a PR author should hear about: new, fixed or hidden breaks, new or fixed
    recompilation problems, an entrypoint that failed or lost its baseline."""
    diff = report.diff
    failed = any(e.status not in counts.CLEAN for e in report.entrypoints)
    recompiled = bool(diff and diff.recompiled(ChangeState.NEW, ChangeState.FIXED))
    gone = bool(diff and any(c.state in (ChangeState.FIXED, ChangeState.HIDDEN) for c in diff.changes))
    lost = bool(diff and any(e.lost_baseline for e in diff.entrypoints))
    return bool(report_.new_breaks(report)) or gone or recompiled or failed or lost


def body(texts: Texts, content: Options, header: str, previous: Marker | None) -> tuple[str, Marker]:
    """The full comment body (marker first, within GitHub's limit) and its marker."""
    content = content.for_comment()
    now_new = bool(report_.new_breaks(texts.report))
    marker = Marker(header_key(header), now_new or bool(previous and previous.had_new), content_hash(texts, content))
    lead = f"{marker}\n" + (f"{words.ALL_FIXED}\n\n" if marker.had_new and not now_new else "")
    return lead + fitted(texts, content, limits.COMMENT_BODY_MAX - len(lead)), marker


def decide(mode: CommentMode, wanted: Marker, existing: Marker | None, news: bool) -> Action:
    if mode is CommentMode.OFF:
        return Action.LEAVE
    if existing is None:
        return Action.CREATE if mode is CommentMode.ALWAYS or news else Action.LEAVE
    if mode is CommentMode.CHANGES and existing.content_hash == wanted.content_hash:
        return Action.LEAVE
    return Action.UPDATE


# --- GitHub ------------------------------------------------------------------------------------


def raw(obj: Any) -> dict[str, Any]:
    # PyGithub's public `raw_data` "completes" a listed object with one GET each; the listing
    # already carries every field, `minimized` included (which PyGithub does not model).
    return obj._rawData


def is_sticky(comment: Any, header: str, bot_login: str) -> bool:
    """Ours: our marker for this header, written by the bot, not minimized (hidden by a person)."""
    marker = Marker.find(comment.body)
    return (
        marker is not None
        and marker.header == header_key(header)
        and comment.user is not None
        and comment.user.login == bot_login
        and not raw(comment).get("minimized")
    )


def find(pull: Any, header: str, bot_login: str) -> Any | None:
    """The sticky comment on this PR (the oldest, if an earlier bug left several), or None."""
    return next((c for c in pull.get_issue_comments() if is_sticky(c, header, bot_login)), None)


@dataclass(frozen=True)
class Posted:
    action: Action
    url: str | None


def upsert(pull: Any, texts: Texts, content: Options, header: str, bot_login: str, mode: CommentMode) -> Posted:
    """One idempotent step: find the comment, then create, edit or leave it. Retried as a whole,
    so a create that reached GitHub before an error is found, not repeated (and the text, already
    rendered, is not rendered again)."""
    existing = find(pull, header, bot_login)
    previous = Marker.find(existing.body) if existing is not None else None
    text, marker = body(texts, content, header, previous)
    action = decide(mode, marker, previous, has_news(texts.report))
    if action is Action.CREATE:
        return Posted(action, pull.create_issue_comment(text).html_url)
    if action is Action.UPDATE:
        existing.edit(text)
    return Posted(action, existing.html_url if existing is not None else None)
