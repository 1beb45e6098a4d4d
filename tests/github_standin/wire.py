"""What travels between the HTTP layer and the REST handlers: calls, replies, errors, pages."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import urlencode

from .model import Identity

DOCS_URL = "https://docs.github.com/rest"
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100


@dataclass(frozen=True)
class Call:
    """One authenticated request, as a handler sees it."""

    identity: Identity
    url: str
    path_params: Mapping[str, str]
    query: Mapping[str, str]
    body: Any
    documentation_url: str = DOCS_URL

    def number(self, name: str) -> int:
        return int(self.path_params[name])


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)


class ApiError(Exception):
    """An answer GitHub gives instead of doing the thing (404, 403, 422, ...).

    ``details`` are what a violation record says about a 422: the client sent
    something GitHub refuses.
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        errors: Sequence[Any] | None = None,
        documentation_url: str = DOCS_URL,
        details: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors
        self.documentation_url = documentation_url
        self.details = tuple(details) or (message,)

    def reply(self) -> Reply:
        body = error_body(self.status, self.message, self.documentation_url, self.errors)
        return Reply(self.status, body)


def error_body(
    status: int, message: str | None = None, documentation_url: str = DOCS_URL, errors: Any = None
) -> dict[str, Any]:
    """GitHub's error shape: message, documentation_url, status (a string), maybe errors."""
    body: dict[str, Any] = {
        "message": message or HTTPStatus(status).phrase,
        "documentation_url": documentation_url,
        "status": str(status),
    }
    if errors is not None:
        body["errors"] = list(errors)
    return body


def not_found(call: Call) -> ApiError:
    return ApiError(404, "Not Found", documentation_url=call.documentation_url)


def paginate(call: Call, items: Sequence[Any]) -> Reply:
    """One page of ``items`` with GitHub's ``Link`` header (next/last, prev/first)."""
    per_page = min(int(call.query.get("per_page", DEFAULT_PER_PAGE)), MAX_PER_PAGE)
    per_page = max(per_page, 1)
    page = max(int(call.query.get("page", 1)), 1)
    last = max(math.ceil(len(items) / per_page), 1)
    chunk = list(items[(page - 1) * per_page : page * per_page])
    relations = {}
    if page < last:
        relations.update(next=page + 1, last=last)
    if page > 1:
        relations.update(prev=page - 1, first=1)
    links = [f'<{page_url(call, per_page, n)}>; rel="{rel}"' for rel, n in relations.items()]
    return Reply(200, chunk, {"Link": ", ".join(links)} if links else {})


def page_url(call: Call, per_page: int, page: int) -> str:
    query = {**call.query, "per_page": str(per_page), "page": str(page)}
    return f"{call.url}?{urlencode(query)}"
