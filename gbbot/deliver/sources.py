"""The PR's files, read through the API as data (never checked out, never run): what the
publisher re-derives fixes on. Each file is size-capped and must be UTF-8, else it is not used."""

from __future__ import annotations

from typing import Any

import requests
from github import GithubException

from gbbot.deliver.rederive import SourceReader, Unreadable
from gbbot.publish import retry

READ_ERRORS = (GithubException, retry.PublishError, requests.exceptions.RequestException)


def _text(found: Any, path: str, max_bytes: int) -> str:
    if isinstance(found, list) or getattr(found, "type", "file") != "file":
        raise Unreadable(f"{path} is not a file at the PR's head")
    if found.size > max_bytes:
        raise Unreadable(f"{path} has {found.size} bytes at the PR's head, over the {max_bytes} gbbot reads")
    if found.encoding != "base64":  # GitHub sends no content for large blobs ("none")
        raise Unreadable(f"{path}: GitHub sent no content for it")
    try:
        return found.decoded_content.decode("utf-8")
    except (UnicodeDecodeError, ValueError):
        raise Unreadable(f"{path} is not UTF-8 text at the PR's head") from None


def pr_files(repo: Any, sha: str, max_bytes: int, retries: retry.Retries, log: retry.Log) -> SourceReader:
    """A reader of the files at commit `sha`; each path is fetched once."""
    seen: dict[str, str | Unreadable] = {}

    def fetch(path: str) -> str | Unreadable:
        try:
            found = retry.call(lambda: repo.get_contents(path, ref=sha), f"{path} at the PR's head", retries, log)
            return _text(found, path, max_bytes)
        except Unreadable as exc:
            return exc
        except READ_ERRORS as exc:
            return Unreadable(f"{path} cannot be read at the PR's head ({retry.describe(exc)})")

    def read(path: str) -> str:
        if path not in seen:
            seen[path] = fetch(path)
        got = seen[path]
        if isinstance(got, Unreadable):
            raise got
        return got

    return read
