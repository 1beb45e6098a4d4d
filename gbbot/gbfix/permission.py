"""Who may ask for a fix commit: a collaborator whose role on the repository is at least the
required one. Anything the API does not clearly grant — an error, a 404, a role gbbot does not
know — is no."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import requests
from github import GithubException

from gbbot.publish import retry

ROLES = ("read", "triage", "write", "maintain", "admin")  # weakest first
REQUIRED = ("write", "maintain", "admin")  # what the `fix-permission` input may ask for


def allows(role: str | None, required: str) -> bool:
    """Whether `role` is at least `required`; an unknown role never is."""
    if role not in ROLES or required not in ROLES:
        return False
    return ROLES.index(role) >= ROLES.index(required)


def role_from(answer: Any) -> str | None:
    """The role in a collaborator-permission answer: `role_name` when it is a built-in role, else
    the legacy `permission` (a custom role reports its base permission there)."""
    if not isinstance(answer, dict):
        return None
    name, legacy = answer.get("role_name"), answer.get("permission")
    return name if name in ROLES else legacy if legacy in ROLES else None


def role_of(repo: Any, login: str, retries: retry.Retries, log: retry.Log) -> str | None:
    """`login`'s role on `repo` (GET collaborators/{login}/permission), None when it cannot be had."""
    url = f"{repo.url}/collaborators/{quote(login, safe='')}/permission"

    def ask() -> Any:
        return repo._requester.requestJsonAndCheck("GET", url)[1]  # PyGithub drops role_name

    try:
        return role_from(retry.call(ask, f"the permission of {login}", retries, log))
    except (GithubException, retry.PublishError, requests.exceptions.RequestException) as exc:
        log(f"the permission of {login} could not be read ({retry.describe(exc)}): treated as none")
        return None
