"""`audit: {open_fix_pr: true}`: the audit's fix pull request, as GitHub shows it. The branch is
gbbot's own (`gbbot/fixes`), one commit on the audited commit; the one PR from it is found by head
branch, a hidden marker in its body and its author (the token's user), opened once, then edited.
What the PR and the tracking issue say is pure; finding, opening and editing the PR is one
idempotent step. The commit and the branch are `deliver`'s; the action composes the rest."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gbbot.core.fixes import Counts, FixResult
from gbbot.core.model import Report
from gbbot.core.words import plural
from gbbot.deliver.commit import dropped_lines, fixed_lines
from gbbot.deliver.patchcheck import Dropped
from gbbot.publish import retry
from gbbot.publish.client import written_by
from gbbot.render.escape import md_code, md_text

BRANCH = "gbbot/fixes"
MARKER = "<!-- gbbot:audit-fix-pr -->"
TITLE = "gbbot: verified fixes for graph breaks"
FETCHED_REF = "refs/gbbot/fixes-tip"  # where the remote fix branch is fetched to, in the clone
DEFAULT_REF = "refs/gbbot/default-tip"  # and the default branch, to see the audited commit is on it


def body(
    fixes: Sequence[FixResult],
    report: Report,
    audited: str,
    before: Counts,
    after: Counts,
    dropped: Sequence[Dropped] = (),
) -> str:
    """The PR's body: marker first, each fix (GB id, file:line, recipe), the verified fixes left
    out and why, the counts before → after as the fix runs measured them."""
    n = len(fixes)
    lines = [
        MARKER,
        f"gbbot's nightly audit of {md_code(audited[:12])} found {plural(n, 'graph break')} "
        "with a verified fix. This branch is gbbot's own: each night's audit replaces its one commit "
        "with the fixes for the commit it audited, so push nothing to it.",
        "",
        *fixed_lines(fixes, report),
        "",
        *(["Verified fixes left out of the commit:", *dropped_lines(dropped, report), ""] if dropped else []),
        f"Graph breaks {before.breaks} → {after.breaks}; graphs {before.graphs} → {after.graphs}.",
    ]
    if before.frames_skipped != after.frames_skipped:
        lines.append(f"Frames running eagerly {before.frames_skipped} → {after.frames_skipped}.")
    return "\n".join(lines) + "\n"


def find_open(repo: Any, owner: str, base: str, login: str) -> Any | None:
    """The open fix PR from gbbot's branch (the oldest, should a past failure have left two)."""
    pulls = repo.get_pulls(state="open", head=f"{owner}:{BRANCH}", base=base)
    ours = sorted((p for p in pulls if p.head.ref == BRANCH and written_by(p, MARKER, login)), key=lambda p: p.number)
    return ours[0] if ours else None


class Action(str, enum.Enum):
    OPENED = "opened"
    UPDATED = "updated"  # the open one edited (and its branch moved)
    STALE = "stale"  # no fix verified tonight; an earlier night's PR is left open
    NONE = "none"  # nothing to say: no fix, no PR
    NOT_DONE = "not done"  # fixes exist but no PR could be opened or updated; `reason` says why


@dataclass(frozen=True)
class Outcome:
    action: Action
    fixed: int = 0
    number: int | None = None
    url: str = ""
    reason: str = ""  # plain text (escaped when shown)

    def _breaks(self) -> str:
        return f"{self.fixed} break{'s have' if self.fixed != 1 else ' has'}"

    def issue_lines(self) -> list[str]:
        """What the tracking issue says about the fix PR (nothing when there is none)."""
        if self.action is Action.NONE:
            return []
        link = f"[#{self.number}]({self.url})" if self.number else ""
        if self.action is Action.STALE:
            said = (
                f"This audit verified no fix. {link} is from an earlier audit and may be stale: "
                "review it against the default branch, or close it."
            )
        elif self.action is Action.NOT_DONE and not self.fixed:
            said = f"gbbot did not open or update its fix PR: {md_text(self.reason)}"
        elif self.action is Action.NOT_DONE:
            said = f"{self._breaks()} a verified fix, but gbbot did not open its fix PR: {md_text(self.reason)}"
        else:
            said = f"{self._breaks()} a verified fix: {link}"
        return ["### Verified fixes", "", said, ""]


def upsert(repo: Any, owner: str, base: str, login: str, text: str) -> tuple[Action, Any]:
    """One idempotent step (a retry finds what an earlier try opened)."""
    found = find_open(repo, owner, base, login)
    if found is not None:
        found.edit(title=TITLE, body=text)
        return Action.UPDATED, found
    return Action.OPENED, repo.create_pull(base=base, head=BRANCH, title=TITLE, body=text)


def publish(
    repo: Any, owner: str, base: str, login: str, text: str, fixed: int, retries: retry.Retries, log: retry.Log
) -> Outcome:
    """Open the fix PR, or edit the open one, to say `text` about `fixed` fixes."""
    update = lambda: upsert(repo, owner, base, login, text)  # noqa: E731
    action, pull = retry.call(update, "open or update the fix PR", retries, log)
    return Outcome(action, fixed, pull.number, pull.html_url)


def earlier(repo: Any, owner: str, base: str, login: str, retries: retry.Retries, log: retry.Log) -> Outcome:
    """With no fix tonight: an earlier night's PR, still open, is stale; else there is nothing to say."""
    found = retry.call(lambda: find_open(repo, owner, base, login), "find the fix PR", retries, log)
    return Outcome(Action.STALE, number=found.number, url=found.html_url) if found else Outcome(Action.NONE)
