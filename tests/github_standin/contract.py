"""GitHub's OpenAPI description (the committed subset) as a request/response checker.

The subset is made by ``tools/extract_openapi_subset.py``.  Validation is
openapi-core's, with spec validation off (validating the 13 MB description takes
~23 s, and the document is GitHub's own).  Requests are presented to it as if sent to api.github.com,
the only server the description names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from jsonschema.exceptions import ValidationError, best_match
from openapi_core import Config, OpenAPI
from openapi_core.testing import MockRequest, MockResponse
from openapi_schema_validator import OAS30Validator

SUBSET_PATH = Path(__file__).resolve().parent.parent / "data" / "github_openapi_subset.json"
DESCRIBED_HOST = "https://api.github.com"
JSON_TYPE = "application/json"
# Bounds quoted in a violation instead of the (possibly 65 KB) offending value.
BOUND_KEYWORDS = ("maxLength", "minLength", "maxItems", "minItems", "maximum", "minimum")


@dataclass(frozen=True)
class Operation:
    """One operation of the description, matched against a concrete path."""

    method: str
    template: str
    path_params: Mapping[str, str]


class Contract:
    """Matches paths to operations and lists what a request or response gets wrong."""

    def __init__(self, path: Path = SUBSET_PATH) -> None:
        self.document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        self._openapi = OpenAPI.from_dict(self.document, config=Config(spec_validator_cls=None))
        # Literal segments win: ".../issues/comments/{id}" before ".../issues/{number}/...".
        templates = sorted(self.document["paths"], key=lambda t: t.count("{"))
        self._routes = [(template_regex(t), t) for t in templates]

    @cached_property
    def operations(self) -> frozenset[tuple[str, str]]:
        """Every (METHOD, template) the subset describes."""
        return frozenset(
            (method.upper(), template)
            for template, item in self.document["paths"].items()
            for method in item
            if method != "parameters"
        )

    def match(self, method: str, path: str) -> Operation | None:
        for regex, template in self._routes:
            found = regex.fullmatch(path)
            if found and (method.upper(), template) in self.operations:
                return Operation(method.upper(), template, found.groupdict())
        return None

    def documentation_url(self, operation: Operation) -> str:
        described = self.document["paths"][operation.template][operation.method.lower()]
        return str(described.get("externalDocs", {}).get("url", "https://docs.github.com/rest"))

    def request_errors(self, method: str, path: str, query: Mapping[str, str], body: bytes | None) -> list[str]:
        request = described_request(method, path, query, body)
        return [line for error in self._openapi.iter_request_errors(request) for line in explain(error)]

    def response_errors(
        self, operation: Operation, path: str, status: int, headers: Mapping[str, str], body: bytes
    ) -> list[str]:
        if str(status) not in self._responses(operation):
            return self._undeclared_error_errors(status, body)
        request = described_request(operation.method, path, {}, None)
        response = MockResponse(body, status_code=status, headers=dict(headers), content_type=JSON_TYPE)
        errors = self._openapi.iter_response_errors(request, response)
        return [line for error in errors for line in explain(error)]

    def _responses(self, operation: Operation) -> Mapping[str, Any]:
        return self.document["paths"][operation.template][operation.method.lower()]["responses"]

    def _undeclared_error_errors(self, status: int, body: bytes) -> list[str]:
        """GitHub answers 401/403/422 where an operation declares none: check the generic shape."""
        if status < 400:
            return [f"status {status} is not declared for this operation"]
        name = "validation-error" if status == 422 else "basic-error"
        schema = self.document["components"]["schemas"][name]
        return [schema_error_line(e) for e in OAS30Validator(schema).iter_errors(json.loads(body))]


CONTENTS_PATH = re.compile(r"(/repos/[^/]+/[^/]+/contents/)(.+)")


def template_regex(template: str) -> re.Pattern[str]:
    """One segment per parameter, except a file's ``{path}``, which spans segments as on GitHub."""
    pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
    return re.compile(pattern.replace("(?P<path>[^/]+)", "(?P<path>.+)"))


def one_segment_path(path: str) -> str:
    """openapi-core matches a parameter within one segment: a file's path goes in with its
    slashes escaped (it is still the same string to validate)."""
    found = CONTENTS_PATH.fullmatch(path)
    return found.group(1) + found.group(2).replace("/", "%2F") if found else path


def described_request(method: str, path: str, query: Mapping[str, str], body: bytes | None) -> MockRequest:
    return MockRequest(
        DESCRIBED_HOST, method.lower(), one_segment_path(path), args=dict(query), data=body, content_type=JSON_TYPE
    )


def explain(error: Exception) -> Iterable[str]:
    """One line per problem; a body's schema errors are listed one by one."""
    schema_errors = getattr(error.__cause__, "schema_errors", None)
    if not schema_errors:
        yield f"{type(error).__name__}: {short(str(error))}"
        return
    yield from (schema_error_line(e) for e in schema_errors)


def schema_error_line(error: ValidationError) -> str:
    where = "/".join(str(part) for part in error.absolute_path) or "(root)"
    if error.validator in BOUND_KEYWORDS:
        return f"{where}: violates {error.validator} {error.validator_value}"
    if error.context:  # oneOf/anyOf: say why the closest alternative failed
        closest = schema_error_line(best_match(error.context))
        return f"{where}: {short(error.message)} (closest: {closest})"
    return f"{where}: {short(error.message)}"


def short(text: str, limit: int = 300) -> str:
    """Messages start with the offending value's repr; keep the verdict at the end."""
    return text if len(text) <= limit else f"...{text[-limit:]}"
