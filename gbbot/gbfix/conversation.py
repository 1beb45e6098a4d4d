"""The GitHub calls `/gb-fix` makes: the pull request's head as it is now, reactions on the
command's comment and the one reply. Reactions are courtesy: one that fails is logged, not fatal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from github import GithubException

from gbbot.publish import retry

EYES, ROCKET, CONFUSED = "eyes", "rocket", "confused"


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


def pull_head(repo: Any, number: int, retries: retry.Retries, log: retry.Log) -> PullHead:
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
        )

    return retry.call(read, f"PR #{number}", retries, log)


def react(repo: Any, number: int, comment_id: int, content: str, retries: retry.Retries, log: retry.Log) -> None:
    try:
        comment = repo.get_issue(number).get_comment(comment_id)
        retry.call(lambda: comment.create_reaction(content), f"the {content} reaction", retries, log)
    except (GithubException, retry.PublishError) as exc:
        log(f"could not react {content} to the command: {retry.describe(exc)}")


def reply(repo: Any, number: int, body: str, retries: retry.Retries, log: retry.Log) -> str:
    """Post the reply; its URL."""
    issue = repo.get_issue(number)
    return retry.call(lambda: issue.create_comment(body), "the /gb-fix reply", retries, log).html_url
