"""What the stand-in remembers: one repository, its pulls, comments, checks and people.

These are the server's mutable records, not API objects; ``render`` turns them
into GitHub's JSON.  All access happens under the server's lock.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Literal

UserType = Literal["Bot", "User"]
ACTIONS_BOT = "github-actions[bot]"
# GitHub's real ids, so payloads look like the ones gbbot will meet.
KNOWN_USER_IDS = {ACTIONS_BOT: 41898282}
# A collaborator's role -> the legacy permission the REST endpoint reports beside it.
LEGACY_PERMISSION = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}
HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class Identity:
    """Who a token speaks for.

    ``read_only`` models a fork PR's ``pull_request`` token: every write is 403.
    ``can_read_user`` False models an installation token (the Actions
    ``GITHUB_TOKEN``): ``GET /user`` is 403.
    """

    login: str
    type: UserType = "User"
    read_only: bool = False
    can_read_user: bool = True


@dataclass
class Reaction:
    id: int
    login: str
    content: str
    created_at: str


@dataclass
class IssueComment:
    id: int
    issue_number: int
    body: str
    login: str
    created_at: str
    updated_at: str
    minimized_reason: str | None = None
    reactions: list[Reaction] = field(default_factory=list)


@dataclass
class Issue:
    """An issue with a body (the audit's tracking issue); ``deleted`` answers 410 Gone, as
    GitHub does for an issue an admin deleted; ``locked`` refuses edits by anyone but admins."""

    number: int
    title: str
    body: str
    login: str
    labels: list[str]
    created_at: str
    updated_at: str
    state: str = "open"
    state_reason: str | None = None
    closed_at: str | None = None
    deleted: bool = False
    locked: bool = False


@dataclass(frozen=True)
class PullFile:
    """One file of a pull's diff; ``patch`` is the unified-diff text GitHub returns."""

    filename: str
    patch: str
    status: str = "modified"

    @property
    def additions(self) -> int:
        return sum(1 for line in self.patch.splitlines() if line.startswith("+"))

    @property
    def deletions(self) -> int:
        return sum(1 for line in self.patch.splitlines() if line.startswith("-"))


@dataclass
class Pull:
    number: int
    head_sha: str
    base_ref: str
    head_ref: str
    head_repo_fork: bool
    maintainer_can_modify: bool
    author: str
    title: str
    state: str = "open"
    base_sha: str = "0" * 40
    created_at: str = ""
    files: list[PullFile] = field(default_factory=list)
    body: str | None = None
    updated_at: str = ""


@dataclass
class CheckRun:
    id: int
    name: str
    head_sha: str
    app_login: str
    status: str
    conclusion: str | None
    started_at: str
    completed_at: str | None
    details_url: str | None
    external_id: str
    output: dict[str, str | None]
    annotations: list[dict[str, object]] = field(default_factory=list)


@dataclass
class Review:
    id: int
    pull_number: int
    login: str
    body: str
    state: str
    commit_id: str
    submitted_at: str | None


@dataclass
class ReviewComment:
    id: int
    review_id: int
    pull_number: int
    path: str
    body: str
    login: str
    commit_id: str
    diff_hunk: str
    created_at: str
    line: int | None = None
    side: str | None = None
    start_line: int | None = None
    start_side: str | None = None
    position: int | None = None


@dataclass(frozen=True)
class DiffLine:
    """A line of a file's patch: its diff position and its line numbers on each side."""

    position: int
    left: int | None
    right: int | None
    diff_hunk: str


class Clock:
    """Deterministic time: every reading is one second after the previous one."""

    def __init__(self, start: datetime | None = None) -> None:
        self._start = start or datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
        self._ticks = itertools.count()

    def now(self) -> str:
        moment = self._start + timedelta(seconds=next(self._ticks))
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class RepoState:
    owner: str
    name: str
    repo_id: int = 1296269
    default_branch: str = "main"
    clone_url: str | None = None  # None: the example's, moved onto the stand-in's address
    pulls: dict[int, Pull] = field(default_factory=dict)
    issues: set[int] = field(default_factory=set)
    issue_records: dict[int, Issue] = field(default_factory=dict)
    comments: dict[int, IssueComment] = field(default_factory=dict)
    check_runs: dict[int, CheckRun] = field(default_factory=dict)
    reviews: dict[int, Review] = field(default_factory=dict)
    review_comments: dict[int, ReviewComment] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    files: dict[tuple[str, str], bytes] = field(default_factory=dict)  # (commit sha, path) -> bytes
    user_ids: dict[str, int] = field(default_factory=lambda: dict(KNOWN_USER_IDS))
    # A branch's tip as the repository's git remote has it (None: no such branch); a test that
    # serves a real remote reads it from there, so that a pull opens on what was pushed.
    branch_sha: Callable[[str], str | None] = field(default=lambda _branch: None)
    clock: Clock = field(default_factory=Clock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1_000_001))

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def next_id(self) -> int:
        return next(self._ids)

    def user_id(self, login: str) -> int:
        return self.user_ids.setdefault(login, 5_000 + len(self.user_ids))

    def issue_exists(self, number: int) -> bool:
        live = number in self.issue_records and not self.issue_records[number].deleted
        return number in self.issues or number in self.pulls or live

    def next_issue_number(self) -> int:
        return max([0, *self.issues, *self.pulls, *self.issue_records]) + 1

    def comments_on(self, issue_number: int) -> list[IssueComment]:
        return [c for c in self.comments.values() if c.issue_number == issue_number]

    def author_association(self, login: str) -> str:
        if login == self.owner:
            return "OWNER"
        return "COLLABORATOR" if self.roles.get(login, "none") != "none" else "NONE"


def user_type(login: str) -> UserType:
    return "Bot" if login.endswith("[bot]") else "User"


def diff_lines(patch: str) -> list[DiffLine]:
    """Positions as GitHub counts them: the line under the first ``@@`` is position 1,
    and later ``@@`` headers count too."""
    texts = patch.splitlines()
    lines: list[DiffLine] = []
    left = right = hunk_start = 0
    for position, text in enumerate(texts):
        header = HUNK_HEADER.match(text)
        if header:
            left, right, hunk_start = int(header.group(1)), int(header.group(2)), position
            continue
        kind = text[:1]
        if kind == "\\":  # "\ No newline at end of file"
            continue
        hunk = "\n".join(texts[hunk_start : position + 1])
        lines.append(DiffLine(position, None if kind == "+" else left, None if kind == "-" else right, hunk))
        left += kind != "+"
        right += kind != "-"
    return lines
