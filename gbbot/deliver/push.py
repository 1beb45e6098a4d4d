"""Pushing a fix commit where gbbot may, and only then: to a pull request's branch without force,
while the PR's head is still the commit the fix was made on (read again through the API just
before the push); or to gbbot's own branch (the audit's fix PR), over a tip gbbot made itself and
only while the remote still has that tip (a lease). The token travels in git's environment only
(`edges.git.Remote`). What does not go through is a value that says why, for the caller to word."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gbbot.deliver.commit import is_fix_commit
from gbbot.edges import git
from gbbot.publish import retry


@dataclass(frozen=True)
class PullHead:
    number: int
    state: str
    sha: str
    ref: str
    repo_full_name: str  # the head repository ("" when the fork is gone)
    clone_url: str
    from_fork: bool
    maintainer_can_modify: bool
    base_sha: str = ""  # the base branch's tip as the API shows it


def pull_head(repo: Any, number: int, retries: retry.Retries, log: retry.Log) -> PullHead:
    """The pull request's head as the API shows it now."""

    def read() -> PullHead:
        pull = repo.get_pull(number)
        head_repo = pull.head.repo  # None when the fork was deleted
        full_name = head_repo.full_name if head_repo is not None else ""
        return PullHead(
            number=number,
            state=pull.state,
            sha=pull.head.sha,
            ref=pull.head.ref,
            repo_full_name=full_name,
            clone_url=head_repo.clone_url if head_repo is not None else "",
            from_fork=full_name != pull.base.repo.full_name,
            maintainer_can_modify=bool(pull.maintainer_can_modify),
            base_sha=pull.base.sha,
        )

    return retry.call(read, f"PR #{number}", retries, log)


def commit_url(server_url: str, repository: str, head: PullHead, commit: str) -> str:
    """The commit on the PR's head repository (this one when the API names none)."""
    return f"{server_url}/{head.repo_full_name or repository}/commit/{commit}"


# --- what a push came to --------------------------------------------------------------------------


@dataclass(frozen=True)
class Pushed:
    commit: str
    head: PullHead  # the PR as read just before the push


@dataclass(frozen=True)
class Moved:
    """The PR's head is no longer the pinned commit: a push would be refused, or wrong."""

    pinned: str
    now: str

    @property
    def reason(self) -> str:
        return f"the PR's head moved from {self.pinned[:7]} to {self.now[:7]}"


@dataclass(frozen=True)
class NotHere:
    """The PR is not open, or its head is not a branch of this repository."""

    reason: str


@dataclass(frozen=True)
class PushRefused:
    ref: str
    said: str  # git's last line

    @property
    def reason(self) -> str:
        return f"the push to {self.ref} was refused ({self.said})"


NotPushed = Moved | NotHere | PushRefused


def _held(head: PullHead, pinned: str, same_repository: bool) -> NotPushed | None:
    if same_repository and head.from_fork:
        return NotHere("the API says this PR's head is in another repository")
    if same_repository and head.state != "open":
        return NotHere(f"the pull request is {head.state}")
    return Moved(pinned, head.sha) if head.sha != pinned else None


def push_if_head_is(
    root: Path,
    repo: Any,
    number: int,
    pinned: str,
    commit: str,
    token: str,
    retries: retry.Retries,
    log: retry.Log,
    same_repository: bool = False,
) -> Pushed | NotPushed:
    """Read PR `number` again and push `commit` to its branch without force, only while its head is
    still `pinned`; with `same_repository`, also only while it is open and its head is a branch of
    this repository. A failed API read raises (GithubException, retry.PublishError)."""
    head = pull_head(repo, number, retries, log)
    held = _held(head, pinned, same_repository)
    if held:
        return held
    refused = git.push(root, git.Remote(head.clone_url, token), commit, head.ref)
    return PushRefused(head.ref, refused) if refused else Pushed(commit, head)


# --- gbbot's own branch --------------------------------------------------------------------------


@dataclass(frozen=True)
class OnBranch:
    commit: str  # the branch's tip now: `commit`, or gbbot's tip kept because it held the same
    pushed: bool


@dataclass(frozen=True)
class NotOurs:
    """The branch has a tip that gbbot did not make: never pushed over."""

    branch: str
    tip: str

    @property
    def reason(self) -> str:
        return (
            f"the branch {self.branch} exists and its tip {self.tip[:7]} is not a commit gbbot made; "
            "gbbot never pushes over it (delete the branch to let gbbot use it)"
        )


def replace_own_branch(
    root: Path, remote: git.Remote, branch: str, fetched: str, commit: str
) -> OnBranch | NotOurs | PushRefused:
    """Make `commit` the tip of gbbot's own `branch` (the remote tip is fetched to the local ref
    `fetched`). A tip gbbot made is replaced, with a lease on it; one with the same tree on the same
    parent is kept (nothing to push); anyone else's tip is left alone."""
    tip = git.fetch_branch(root, remote, branch, fetched)
    if tip is not None:
        recent = git.recent_commits(root, tip, 1)
        if not recent or not is_fix_commit(*recent[0]):
            return NotOurs(branch, tip)
        if git.tree_and_parents(root, tip) == git.tree_and_parents(root, commit):
            return OnBranch(tip, pushed=False)
    refused = git.push(root, remote, commit, branch, tip)
    return PushRefused(branch, refused) if refused else OnBranch(commit, pushed=True)
