"""A GitHub stand-in: a real HTTP server on 127.0.0.1 that keeps state and checks the contract.

Every request is recorded; an injected failure answers first; then the token is
authenticated, writes by a read-only token are refused, the request is checked
against GitHub's OpenAPI description (an invalid one gets GitHub's 422), the
operation runs, and its response is checked against the description too.  Any
422 the client provoked and any response that breaks the description land in
``violations``; the ``github_standin`` fixture fails a test that leaves some.
"""

from __future__ import annotations

import functools
import json
import re
import socket
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from github import Auth, Github

from .api import RestApi
from .contract import Contract, Operation
from .model import (
    ACTIONS_BOT,
    CheckRun,
    Identity,
    Issue,
    IssueComment,
    Pull,
    PullFile,
    RepoState,
    Review,
    ReviewComment,
)
from .render import Renderer
from .wire import ApiError, Call, Reply, error_body

ACTIONS_TOKEN = "ghs_standin_actions"
FORK_PR_TOKEN = "ghs_standin_fork_pr_read_only"
MAINTAINER_TOKEN = "ghp_standin_maintainer"
DEFAULT_TOKENS: Mapping[str, Identity] = {
    ACTIONS_TOKEN: Identity(ACTIONS_BOT, "Bot", can_read_user=False),
    FORK_PR_TOKEN: Identity(ACTIONS_BOT, "Bot", read_only=True, can_read_user=False),
    MAINTAINER_TOKEN: Identity("maintainer", "User"),
}
WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
ROLES = ("admin", "maintain", "write", "triage", "read", "none")
RATE_LIMIT_DOCS = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
PRIMARY_LIMIT_MESSAGE = "API rate limit exceeded for installation ID 1."
SECONDARY_LIMIT_MESSAGE = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
RATE_LIMIT_RESET = 4_102_444_800  # 2100-01-01: never reached by a test


@dataclass(frozen=True)
class RecordedRequest:
    """A request as it arrived: what handlers see, and what tests read back from `requests`."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    json: Any = None
    raw_body: bytes = b""


@dataclass(frozen=True)
class Violation:
    """A request GitHub would refuse (``request``) or a response off the contract (``response``)."""

    kind: Literal["request", "response"]
    method: str
    path: str
    status: int
    errors: tuple[str, ...]

    def __str__(self) -> str:
        listed = "; ".join(self.errors)
        return f"{self.kind} {self.method} {self.path} -> {self.status}: {listed}"


@dataclass
class InjectedFailure:
    method: str
    path_pattern: re.Pattern[str]
    reply: Reply
    remaining: int
    after_serving: bool = False  # the request is carried out, then answered with the failure

    def matches(self, method: str, path: str) -> bool:
        method_ok = self.method in ("*", method)
        return self.remaining > 0 and method_ok and bool(self.path_pattern.search(path))


@functools.lru_cache(maxsize=1)
def shared_contract() -> Contract:
    """Loaded once per process: every stand-in checks against the same description."""
    return Contract()


class GitHubStandin:
    """One repository (``owner/repo``) served at ``url`` for the tokens in ``tokens``."""

    def __init__(
        self,
        *,
        owner: str = "octo-org",
        repo: str = "octo-repo",
        tokens: Mapping[str, Identity] | None = None,
    ) -> None:
        self.state = RepoState(owner, repo)
        self.tokens: dict[str, Identity] = dict(DEFAULT_TOKENS if tokens is None else tokens)
        self.contract = shared_contract()
        self._lock = threading.RLock()
        self._requests: list[RecordedRequest] = []
        self._violations: list[Violation] = []
        self._failures: list[InjectedFailure] = []
        self._httpd = _Server(("127.0.0.1", 0), self._exchange)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self.renderer = Renderer(self.url, self.state, self.contract.document)
        self._api = RestApi(self.state, self.renderer)
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> GitHubStandin:
        # A short poll keeps close() (and so every test's teardown) quick.
        serve = functools.partial(self._httpd.serve_forever, poll_interval=0.02)
        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
        self._httpd.server_close()

    def __enter__(self) -> GitHubStandin:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- what happened ----------------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, method: str, path_regex: str) -> list[RecordedRequest]:
        pattern = re.compile(path_regex)
        return [r for r in self.requests if r.method == method and pattern.search(r.path)]

    @property
    def violations(self) -> list[Violation]:
        with self._lock:
            return list(self._violations)

    def take_violations(self) -> list[Violation]:
        """Return and forget the violations, for tests that provoke them on purpose."""
        with self._lock:
            taken, self._violations = self._violations, []
            return taken

    # -- failure injection ------------------------------------------------------------------------
    def fail_next(
        self,
        method: str,
        path_regex: str,
        status: int,
        headers: Mapping[str, str] | None = None,
        body: Any = None,
        times: int = 1,
        after_serving: bool = False,
    ) -> None:
        """Answer the next ``times`` matching requests with this instead (method ``*`` = any).

        ``after_serving``: carry the request out first (a 5xx after the write went through,
        which a client cannot tell from one that did not).
        """
        reply = Reply(status, error_body(status) if body is None else body, dict(headers or {}))
        failure = InjectedFailure(method.upper(), re.compile(path_regex), reply, times, after_serving)
        with self._lock:
            self._failures.append(failure)

    def fail_rate_limited(
        self,
        method: str,
        path_regex: str,
        *,
        status: int = 403,
        reset: int = RATE_LIMIT_RESET,
        times: int = 1,
    ) -> None:
        """The primary rate limit: ``x-ratelimit-remaining: 0`` until ``reset`` (epoch seconds)."""
        headers = {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": "0",
            "x-ratelimit-used": "5000",
            "x-ratelimit-reset": str(reset),
        }
        body = error_body(status, PRIMARY_LIMIT_MESSAGE, RATE_LIMIT_DOCS)
        self.fail_next(method, path_regex, status, headers, body, times)

    def fail_secondary_rate_limited(
        self, method: str, path_regex: str, *, retry_after: int = 1, times: int = 1
    ) -> None:
        """A secondary (abuse) limit: 403 with ``retry-after``."""
        body = error_body(403, SECONDARY_LIMIT_MESSAGE, RATE_LIMIT_DOCS)
        self.fail_next(method, path_regex, 403, {"retry-after": str(retry_after)}, body, times)

    # -- seeding ----------------------------------------------------------------------------------
    def add_token(self, token: str, identity: Identity) -> None:
        with self._lock:
            self.tokens[token] = identity

    def set_permission(self, login: str, permission: str) -> None:
        """``permission`` is the role: admin, maintain, write, triage, read or none."""
        if permission not in ROLES:
            raise ValueError(f"unknown role {permission!r}; expected one of {ROLES}")
        with self._lock:
            self.state.roles[login] = permission

    def add_pull(
        self,
        number: int,
        head_sha: str,
        base_ref: str = "main",
        head_repo_fork: bool = False,
        maintainer_can_modify: bool = False,
        *,
        head_ref: str | None = None,
        author: str = "contributor",
        title: str | None = None,
        state: str = "open",
    ) -> Pull:
        """A pull request by ``author``, from their fork when ``head_repo_fork``."""
        pull = Pull(
            number=number,
            head_sha=head_sha,
            base_ref=base_ref,
            head_ref=head_ref or f"feature-{number}",
            head_repo_fork=head_repo_fork,
            maintainer_can_modify=maintainer_can_modify,
            author=author,
            title=title or f"Pull request {number}",
            state=state,
        )
        with self._lock:
            pull.created_at = self.state.clock.now()
            self.state.pulls[number] = pull
        return pull

    def set_pull_files(self, number: int, files: Sequence[PullFile] | Mapping[str, str]) -> None:
        """The pull's diff: ``PullFile``s, or a mapping of filename to unified-diff patch text."""
        if isinstance(files, Mapping):
            files = [PullFile(name, patch) for name, patch in files.items()]
        with self._lock:
            self.state.pulls[number].files = list(files)

    def set_file(self, sha: str, path: str, content: str | bytes) -> None:
        """The file ``path`` as it is at commit ``sha`` (served by repos/get-content with ``ref``)."""
        data = content.encode("utf-8") if isinstance(content, str) else content
        with self._lock:
            self.state.files[(sha, path)] = data

    def add_issue(self, number: int) -> None:
        with self._lock:
            self.state.issues.add(number)

    def add_comment(self, issue: int, body: str, login: str, minimized: bool | str = False) -> IssueComment:
        """A comment already there; ``minimized`` True (reason "outdated") or a reason string."""
        reason = "outdated" if minimized is True else (minimized or None)
        with self._lock:
            if not self.state.issue_exists(issue):
                self.state.issues.add(issue)
            now = self.state.clock.now()
            comment = IssueComment(self.state.next_id(), issue, body, login, now, now, reason)
            self.state.comments[comment.id] = comment
            return comment

    def add_issue_record(
        self, title: str, body: str, login: str, labels: Sequence[str] = (), state: str = "open"
    ) -> Issue:
        """An issue already there (e.g. a tracking issue someone closed)."""
        with self._lock:
            now = self.state.clock.now()
            issue = Issue(self.state.next_issue_number(), title, body, login, list(labels), now, now)
            if state == "closed":
                issue.state, issue.state_reason, issue.closed_at = "closed", "completed", now
            self.state.issue_records[issue.number] = issue
            return issue

    def issue(self, number: int) -> Issue:
        with self._lock:
            return self.state.issue_records[number]

    def issues(self) -> list[Issue]:
        with self._lock:
            return sorted(self.state.issue_records.values(), key=lambda i: i.number)

    def set_branch_resolver(self, resolve: Callable[[str], str | None]) -> None:
        """How a pull finds its branch's tip: from the real git remote a test serves."""
        with self._lock:
            self.state.branch_sha = resolve

    def pulls(self) -> list[Pull]:
        with self._lock:
            return sorted(self.state.pulls.values(), key=lambda p: p.number)

    def set_clone_url(self, url: str) -> None:
        """Where the repository's git remote is served (a local smart-HTTP server in tests)."""
        with self._lock:
            self.state.clone_url = url

    # -- reading state back -----------------------------------------------------------------------
    def comments(self, issue: int) -> list[IssueComment]:
        with self._lock:
            return list(self.state.comments_on(issue))

    def check_runs(self) -> list[CheckRun]:
        with self._lock:
            return list(self.state.check_runs.values())

    def reviews(self, pull: int) -> list[Review]:
        with self._lock:
            return [r for r in self.state.reviews.values() if r.pull_number == pull]

    def review_comments(self, pull: int) -> list[ReviewComment]:
        with self._lock:
            return [c for c in self.state.review_comments.values() if c.pull_number == pull]

    def github_client(self, token: str = ACTIONS_TOKEN) -> Github:
        """PyGithub pointed here, without its throttling (0.25 s between requests, 1 s
        between writes) and its retries (a 500 would end in RetryError after ten tries)."""
        return Github(
            base_url=self.url,
            auth=Auth.Token(token),
            retry=None,
            seconds_between_requests=0,
            seconds_between_writes=0,
        )

    # -- one exchange -----------------------------------------------------------------------------
    def _exchange(self, incoming: RecordedRequest) -> Reply:
        with self._lock:
            self._requests.append(incoming)
            failure = self._take_failure(incoming)
            if failure is None or failure.after_serving:
                served = self._serve(incoming)
            reply = served if failure is None else failure.reply
            return with_standard_headers(reply)

    def _take_failure(self, incoming: RecordedRequest) -> InjectedFailure | None:
        for failure in self._failures:
            if failure.matches(incoming.method, incoming.path):
                failure.remaining -= 1
                return failure
        return None

    def _serve(self, incoming: RecordedRequest) -> Reply:
        operation = self.contract.match(incoming.method, incoming.path)
        if operation is None:
            return Reply(404, error_body(404, "Not Found"))
        try:
            reply = self._run(operation, incoming)
        except ApiError as error:
            reply = error.reply()
            if error.status in (400, 422):
                self._record("request", incoming, error.status, error.details)
        except Exception:  # a bug in the stand-in: answer 500 and fail the test
            self._record("response", incoming, 500, [traceback.format_exc()])
            return Reply(500, error_body(500, "stand-in bug: see violations"))
        self._check_response(operation, incoming, reply)
        return reply

    def _run(self, operation: Operation, incoming: RecordedRequest) -> Reply:
        docs = self.contract.documentation_url(operation)
        identity = self._authenticate(incoming, docs)
        if incoming.method in WRITE_METHODS and identity.read_only:
            raise ApiError(403, "Resource not accessible by integration", documentation_url=docs)
        self._check_request(incoming, docs)
        url = f"{self.url}{incoming.path}"
        call = Call(identity, url, operation.path_params, incoming.query, incoming.json, docs)
        return self._api.handle(operation.method, operation.template, call)

    def _authenticate(self, incoming: RecordedRequest, docs: str) -> Identity:
        scheme, _, token = incoming.headers.get("authorization", "").partition(" ")
        if not token:
            raise ApiError(401, "Requires authentication", documentation_url=docs)
        identity = self.tokens.get(token.strip()) if scheme.lower() in ("token", "bearer") else None
        if identity is None:
            raise ApiError(401, "Bad credentials", documentation_url=docs)
        return identity

    def _check_request(self, incoming: RecordedRequest, docs: str) -> None:
        if incoming.raw_body and incoming.json is None:
            raise ApiError(400, "Problems parsing JSON", documentation_url=docs)
        body = incoming.raw_body or None
        errors = self.contract.request_errors(incoming.method, incoming.path, incoming.query, body)
        if errors:
            message = "Invalid request.\n\n" + "\n".join(errors)
            raise ApiError(422, message, documentation_url=docs, details=errors)

    def _check_response(self, operation: Operation, incoming: RecordedRequest, reply: Reply) -> None:
        payload = encode(reply.body)
        headers = dict(reply.headers)
        errors = self.contract.response_errors(operation, incoming.path, reply.status, headers, payload)
        if errors:
            self._record("response", incoming, reply.status, errors)

    def _record(
        self,
        kind: Literal["request", "response"],
        incoming: RecordedRequest,
        status: int,
        errors: Sequence[str],
    ) -> None:
        violation = Violation(kind, incoming.method, incoming.path, status, tuple(errors))
        self._violations.append(violation)


def with_standard_headers(reply: Reply) -> Reply:
    headers = {
        "x-ratelimit-limit": "5000",
        "x-ratelimit-remaining": "4999",
        "x-ratelimit-used": "1",
        "x-ratelimit-reset": str(RATE_LIMIT_RESET),
        "x-ratelimit-resource": "core",
        **reply.headers,
    }
    return Reply(reply.status, reply.body, headers)


def encode(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, (bytes, str)):
        return body.encode() if isinstance(body, str) else body
    return json.dumps(body).encode()


def parse_json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 drops concurrent connects (a 1 s SYN retry).
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], exchange: Callable[[RecordedRequest], Reply]) -> None:
        super().__init__(address, _Handler)
        self.exchange = exchange


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without this, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every keep-alive request PyGithub makes.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        self._respond()

    do_POST = do_PATCH = do_PUT = do_DELETE = do_GET

    def _respond(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        headers = {name.lower(): value for name, value in self.headers.items()}
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        incoming = RecordedRequest(self.command, url.path, query, headers, parse_json(raw), raw)
        reply = self.server.exchange(incoming)
        payload = encode(reply.body)
        self.send_response(reply.status)
        for name, value in reply_headers(reply, payload):
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the test's own output is what matters."""


def reply_headers(reply: Reply, payload: bytes) -> Iterator[tuple[str, str]]:
    if payload:
        content_type = "application/json" if not isinstance(reply.body, str) else "text/html"
        yield "Content-Type", f"{content_type}; charset=utf-8"
    yield "Content-Length", str(len(payload))
    yield from reply.headers.items()
