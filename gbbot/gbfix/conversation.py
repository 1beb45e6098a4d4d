"""The GitHub calls `/gb-fix` makes on the conversation: reactions on the command's comment and
the one reply (the PR's head is read with `deliver.push.pull_head`). Reactions are courtesy: one
that fails is logged, not fatal."""

from __future__ import annotations

from typing import Any

from github import GithubException

from gbbot.publish import retry

EYES, ROCKET, CONFUSED, THUMBS_UP = "eyes", "rocket", "confused", "+1"


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
