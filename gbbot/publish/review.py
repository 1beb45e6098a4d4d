"""Verified fixes as one PR review of ```suggestion comments (at most 30, only on lines the PR
changed), posted once: a hidden marker with a hash of the suggestions finds an earlier identical
review, so a re-run (or a retry after a write that went through) does not post it again.

The fixes are the report's, which may be untrusted (workflow_run): their text is escaped, their
replacement lines go into a fence longer than any backtick run inside."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from gbbot.core.fixes import FixResult, FixStatus, Suggestion
from gbbot.core.limits import REVIEW_COMMENTS_MAX
from gbbot.publish import retry
from gbbot.publish.client import written_by
from gbbot.publish.comment import header_key
from gbbot.render.escape import md_text
from gbbot.render.fixes import recipe_note

HUNK_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
MARKER_RE = re.compile(r"<!-- gbbot:review header=([A-Za-z0-9_.-]{1,64}) hash=([0-9a-f]{16}) -->")


def added_lines(patch: str) -> set[int]:
    """Head-side line numbers of the lines a unified-diff patch adds."""
    added, line = set(), 0
    for text in patch.splitlines():
        header = HUNK_HEADER.match(text)
        if header:
            line = int(header.group(1))
        elif text.startswith("+"):
            added.add(line)
            line += 1
        elif not text.startswith(("-", "\\")):
            line += 1
    return added


def changed_lines(files: Iterable[Any]) -> dict[str, AbstractSet[int]]:
    """path → lines the PR added or changed, from `GET /pulls/{n}/files` (PyGithub `File`s)."""
    return {f.filename: added_lines(f.patch or "") for f in files}


def suggestion_block(lines: Sequence[str]) -> str:
    """A ```suggestion fence longer than any backtick run inside; no lines = delete the range."""
    longest = max((len(run) for line in lines for run in re.findall(r"`{3,}", line)), default=2)
    fence = "`" * (longest + 1)
    inside = "".join(f"{line}\n" for line in lines)
    return f"{fence}suggestion\n{inside}{fence}"


def _inside_diff(result: FixResult, changed: Mapping[str, AbstractSet[int]]) -> bool:
    lines = [(h.path, n) for h in result.hunks for n in range(h.start_line, h.end_line + 1)]
    return bool(lines) and all(n in changed.get(path, ()) for path, n in lines)


def review_suggestions(
    results: Iterable[FixResult], changed: Mapping[str, AbstractSet[int]], limit: int = REVIEW_COMMENTS_MAX
) -> tuple[Suggestion, ...]:
    """Verified patches whose every replaced line is among the PR's added or changed lines, as
    review comments (at most `limit`). A patch is posted whole or not at all: half a patch could
    break the code. The rest stays in the PR comment."""
    out: list[Suggestion] = []
    for result in results:
        if result.status is not FixStatus.VERIFIED or not _inside_diff(result, changed):
            continue
        if len(out) + len(result.hunks) > limit:
            break
        note = f"gbbot verified fix{recipe_note(result)}: {md_text(result.summary)}. {md_text(result.description)}"
        for hunk in result.hunks:
            body = f"{note}\n\n{suggestion_block(hunk.replacement)}"
            out.append(Suggestion(hunk.path, hunk.start_line, hunk.end_line, body))
    return tuple(out)


def review_comment(suggestion: Suggestion) -> dict[str, Any]:
    placed: dict[str, Any] = {
        "path": suggestion.path,
        "body": suggestion.body,
        "line": suggestion.end_line,
        "side": "RIGHT",
    }
    if suggestion.start_line < suggestion.end_line:
        placed.update(start_line=suggestion.start_line, start_side="RIGHT")
    return placed


def marker(header: str, suggestions: Sequence[Suggestion]) -> str:
    blob = "\n".join(f"{s.path}:{s.start_line}-{s.end_line}\n{s.body}" for s in suggestions)
    digest = hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
    return f"<!-- gbbot:review header={header_key(header)} hash={digest} -->"


@dataclass(frozen=True)
class ReviewPosted:
    posted: bool
    comments: int
    url: str | None


def _existing(pull: Any, wanted: str, bot_login: str) -> Any | None:
    return next((r for r in pull.get_reviews() if written_by(r, wanted, bot_login)), None)


def post_review(
    pull: Any,
    commit: Any,
    suggestions: Sequence[Suggestion],
    header: str,
    bot_login: str,
    retries: retry.Retries,
    log: retry.Log,
) -> ReviewPosted:
    chosen = list(suggestions)[:REVIEW_COMMENTS_MAX]
    tag = marker(header, chosen)
    found = retry.call(lambda: _existing(pull, tag, bot_login), "earlier reviews", retries, log)
    if found is not None:
        return ReviewPosted(False, len(chosen), found.html_url)
    body = f"{tag}\ngbbot verified these fixes by re-running the entrypoints: each removes a graph break."
    comments = [review_comment(s) for s in chosen]
    review = retry.write(
        lambda: pull.create_review(commit=commit, body=body, event="COMMENT", comments=comments),
        lambda: _existing(pull, tag, bot_login),
        "review with suggestions",
        retries,
        log,
    )
    return ReviewPosted(True, len(chosen), review.html_url)
