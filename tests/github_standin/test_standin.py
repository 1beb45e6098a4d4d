"""Tests of the GitHub stand-in itself, mostly through PyGithub as the project uses it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from github import Auth, Github, GithubException
from github.GithubException import (
    BadCredentialsException,
    RateLimitExceededException,
    UnknownObjectException,
)
from openapi_spec_validator import validate

from . import fixtures
from .api import OPERATIONS
from .contract import SUBSET_PATH
from .fixtures import checked_standin
from .model import ACTIONS_BOT, Identity
from .server import ACTIONS_TOKEN, FORK_PR_TOKEN, MAINTAINER_TOKEN, GitHubStandin

# The fixture under test, as tests/conftest.py exposes it to the whole suite.
github_standin = fixtures.github_standin

WEBHOOKS_DIR = Path(__file__).resolve().parent.parent / "data" / "webhooks"
REPO = "octo-org/octo-repo"
HEAD_SHA = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
PATCH = "@@ -1,3 +1,4 @@\n import torch\n-x = 1\n+x = 2\n+print(x)\n y = 3"
ANNOTATION = {
    "path": "model.py",
    "start_line": 2,
    "end_line": 2,
    "annotation_level": "warning",
    "message": "graph break",
}


def raw(
    server: GitHubStandin, method: str, path: str, token: str | None = ACTIONS_TOKEN, **kwargs: Any
) -> requests.Response:
    headers = {"Authorization": f"token {token}"} if token else {}
    return requests.request(method, f"{server.url}{path}", headers=headers, timeout=10, **kwargs)


def api_path(suffix: str) -> str:
    return f"/repos/{REPO}{suffix}"


def strings(value: Any) -> Iterator[tuple[str, str]]:
    """Every (key, string) pair in a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str):
                yield key, item
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


@pytest.fixture
def pull_seven(github_standin: GitHubStandin) -> GitHubStandin:
    github_standin.add_pull(7, HEAD_SHA, head_ref="speedup")
    github_standin.set_pull_files(7, {"model.py": PATCH})
    return github_standin


# -- the data -------------------------------------------------------------------------------------
def test_subset_is_valid_openapi_and_small() -> None:
    document = json.loads(SUBSET_PATH.read_text())
    validate(document)
    assert document["openapi"] == "3.0.3"
    assert SUBSET_PATH.stat().st_size < 2_000_000


def test_every_described_operation_is_served(github_standin: GitHubStandin) -> None:
    assert github_standin.contract.operations == set(OPERATIONS)


def test_issue_comment_webhook_is_on_a_pull_request() -> None:
    payload = json.loads((WEBHOOKS_DIR / "issue_comment.created.json").read_text())
    assert payload["action"] == "created"
    assert payload["issue"]["pull_request"]["url"].endswith("/pulls/1")


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("pull_request.opened", "pull_request"),
        ("pull_request.synchronize", "after"),
        ("workflow_run.completed", "workflow_run"),
        ("push", "head_commit"),
        ("workflow_dispatch", "workflow"),
    ],
)
def test_webhook_payloads_are_there(name: str, key: str) -> None:
    assert key in json.loads((WEBHOOKS_DIR / f"{name}.json").read_text())


# -- tokens ---------------------------------------------------------------------------------------
def test_unknown_and_missing_tokens_get_401(github_standin: GitHubStandin) -> None:
    with pytest.raises(BadCredentialsException):
        github_standin.github_client("nope").get_repo(REPO)
    answer = raw(github_standin, "GET", api_path(""), token=None)
    assert answer.status_code == 401
    assert answer.json()["message"] == "Requires authentication"


def test_read_only_token_cannot_write(pull_seven: GitHubStandin) -> None:
    pull = pull_seven.github_client(FORK_PR_TOKEN).get_repo(REPO).get_pull(7)
    with pytest.raises(GithubException) as raised:
        pull.create_issue_comment("hello")
    assert raised.value.status == 403
    assert raised.value.data["message"] == "Resource not accessible by integration"
    assert pull_seven.comments(7) == []


def test_user_endpoint_refuses_installation_tokens(github_standin: GitHubStandin) -> None:
    with pytest.raises(GithubException) as raised:
        _ = github_standin.github_client(ACTIONS_TOKEN).get_user().login
    assert raised.value.status == 403
    assert github_standin.github_client(MAINTAINER_TOKEN).get_user().login == "maintainer"


def test_custom_tokens_and_repository() -> None:
    tokens = {"t1": Identity("gbbot[bot]", "Bot", can_read_user=False)}
    with checked_standin(owner="me", repo="proj", tokens=tokens) as server:
        server.add_pull(3, HEAD_SHA)
        comment = server.github_client("t1").get_repo("me/proj").get_pull(3).create_issue_comment("hi")
        assert (comment.user.login, comment.user.type) == ("gbbot[bot]", "Bot")
        assert comment.html_url == f"{server.url}/me/proj/pull/3#issuecomment-{comment.id}"
        assert raw(server, "GET", "/repos/me/proj", token=ACTIONS_TOKEN).status_code == 401


# -- issue comments -------------------------------------------------------------------------------
def test_comment_lifecycle_through_pygithub(pull_seven: GitHubStandin) -> None:
    pull = pull_seven.github_client().get_repo(REPO).get_pull(7)
    comment = pull.create_issue_comment("<!-- gbbot -->\nfirst")
    assert (comment.user.login, comment.user.type) == (ACTIONS_BOT, "Bot")
    assert comment.raw_data["minimized"] is None
    comment.edit("<!-- gbbot -->\nsecond")
    assert [c.body for c in pull.get_issue_comments()] == ["<!-- gbbot -->\nsecond"]
    comment.delete()
    assert pull_seven.comments(7) == []
    assert len(pull_seven.requests_to("POST", r"/issues/7/comments$")) == 1


def test_comment_list_is_paginated_with_link_headers(pull_seven: GitHubStandin) -> None:
    for n in range(75):
        pull_seven.add_comment(7, f"comment {n}", "someone")
    client = Github(
        base_url=pull_seven.url,
        auth=Auth.Token(ACTIONS_TOKEN),
        retry=None,
        seconds_between_requests=0,
        seconds_between_writes=0,
        per_page=30,
    )
    bodies = [c.body for c in client.get_repo(REPO).get_pull(7).get_issue_comments()]
    assert bodies == [f"comment {n}" for n in range(75)]
    assert len(pull_seven.requests_to("GET", r"/issues/7/comments$")) == 3
    link = raw(pull_seven, "GET", api_path("/issues/7/comments"), params={"per_page": 30}).headers["Link"]
    assert link == (
        f'<{pull_seven.url}{api_path("/issues/7/comments")}?per_page=30&page=2>; rel="next", '
        f'<{pull_seven.url}{api_path("/issues/7/comments")}?per_page=30&page=3>; rel="last"'
    )


def test_seeded_comments_carry_author_and_minimized(pull_seven: GitHubStandin) -> None:
    pull_seven.set_permission("maintainer", "write")
    pull_seven.add_comment(7, "old report", ACTIONS_BOT, minimized=True)
    pull_seven.add_comment(7, "/gb-fix", "maintainer")
    listed = raw(pull_seven, "GET", api_path("/issues/7/comments")).json()
    assert [c["minimized"] for c in listed] == [{"reason": "outdated"}, None]
    assert [c["user"]["type"] for c in listed] == ["Bot", "User"]
    assert [c["author_association"] for c in listed] == ["NONE", "COLLABORATOR"]


def test_too_long_comment_is_refused_like_github(pull_seven: GitHubStandin) -> None:
    answer = raw(pull_seven, "POST", api_path("/issues/7/comments"), json={"body": "x" * 65_537})
    assert answer.status_code == 422
    body = answer.json()
    assert body["message"] == "Validation Failed"
    assert body["errors"][0]["message"] == "Body is too long (maximum is 65536 characters)"
    assert body["documentation_url"].startswith("https://docs.github.com/rest/issues/comments")
    assert pull_seven.comments(7) == []
    assert [v.kind for v in pull_seven.take_violations()] == ["request"]


def test_comment_at_the_limit_is_accepted(pull_seven: GitHubStandin) -> None:
    answer = raw(pull_seven, "POST", api_path("/issues/7/comments"), json={"body": "x" * 65_536})
    assert answer.status_code == 201


def test_invalid_body_gets_422_and_is_recorded(pull_seven: GitHubStandin) -> None:
    answer = raw(pull_seven, "POST", api_path("/issues/7/comments"), json={"text": "hi"})
    assert answer.status_code == 422
    assert answer.json()["message"].startswith("Invalid request.")
    violations = pull_seven.take_violations()
    assert violations[0].kind == "request"
    assert "'body' is a required property" in violations[0].errors[0]


def test_comments_on_unknown_issue_or_repo_are_404(github_standin: GitHubStandin) -> None:
    assert raw(github_standin, "GET", api_path("/issues/99/comments")).status_code == 404
    assert raw(github_standin, "GET", "/repos/other/repo/issues/1/comments").status_code == 404
    assert raw(github_standin, "GET", "/nothing/here").status_code == 404


# -- pull requests opened through the API ---------------------------------------------------------
def test_a_pull_opens_once_per_branch_and_is_edited(github_standin: GitHubStandin) -> None:
    github_standin.set_branch_resolver({"fixes": HEAD_SHA, "main": "1" * 40}.get)
    repo = github_standin.github_client().get_repo(REPO)
    with pytest.raises(GithubException) as missing:
        repo.create_pull(base="main", head="nope", title="t", body="b")
    assert missing.value.status == 422
    pull = repo.create_pull(base="main", head="fixes", title="Fixes", body="<!-- m -->\nfirst")
    assert (pull.user.login, pull.head.ref, pull.head.sha) == (ACTIONS_BOT, "fixes", HEAD_SHA)
    assert pull.body == "<!-- m -->\nfirst"
    with pytest.raises(GithubException) as twice:
        repo.create_pull(base="main", head="octo-org:fixes", title="again", body="b")
    assert twice.value.status == 422 and "already exists" in str(twice.value.data)
    listed = list(repo.get_pulls(state="open", head="octo-org:fixes", base="main"))
    assert [p.number for p in listed] == [pull.number]
    listed[0].edit(body="second", title="Fixes 2")
    assert github_standin.pulls()[0].body == "second" and repo.get_pull(pull.number).title == "Fixes 2"
    assert len(github_standin.take_violations()) == 2  # the two refused creations, nothing else


# -- reactions ------------------------------------------------------------------------------------
def test_reactions_are_created_once_per_user_and_content(github_standin: GitHubStandin) -> None:
    github_standin.add_pull(7, HEAD_SHA)
    comment = github_standin.add_comment(7, "/gb-fix", "maintainer")
    path = api_path(f"/issues/comments/{comment.id}/reactions")
    assert raw(github_standin, "POST", path, json={"content": "eyes"}).status_code == 201
    assert raw(github_standin, "POST", path, json={"content": "eyes"}).status_code == 200
    pygithub_comment = github_standin.github_client().get_repo(REPO).get_pull(7).get_issue_comment(comment.id)
    pygithub_comment.create_reaction("rocket")
    assert [r.content for r in pygithub_comment.get_reactions()] == ["eyes", "rocket"]
    assert raw(github_standin, "POST", path, json={"content": "party"}).status_code == 422
    github_standin.take_violations()


# -- check runs -----------------------------------------------------------------------------------
def test_check_run_annotations_accumulate(github_standin: GitHubStandin) -> None:
    repo = github_standin.github_client().get_repo(REPO)
    run = repo.create_check_run(
        "gbbot",
        HEAD_SHA,
        status="in_progress",
        output={"title": "t", "summary": "s", "annotations": [ANNOTATION] * 50},
    )
    assert run.conclusion is None
    run.edit(
        conclusion="failure",
        output={"title": "t", "summary": "done", "annotations": [ANNOTATION] * 3},
    )
    fetched = repo.get_check_run(run.id)
    assert (fetched.status, fetched.conclusion, fetched.output.summary) == (
        "completed",
        "failure",
        "done",
    )
    assert fetched.output.annotations_count == 53
    assert len(list(fetched.get_annotations())) == 53
    assert fetched.app.slug == "github-actions"


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ({"title": "t", "summary": "s", "annotations": [ANNOTATION] * 51}, "maxItems 50"),
        ({"title": "t", "summary": "s" * 65_536}, "maxLength 65535"),
        ({"title": "t", "summary": "s", "text": "s" * 65_536}, "maxLength 65535"),
        (
            {"title": "t", "summary": "s", "annotations": [{**ANNOTATION, "message": "m" * 4097}]},
            "maximum is 4096",
        ),
    ],
)
def test_check_run_limits_answer_422(github_standin: GitHubStandin, output: dict[str, Any], expected: str) -> None:
    repo = github_standin.github_client().get_repo(REPO)
    with pytest.raises(GithubException) as raised:
        repo.create_check_run("gbbot", HEAD_SHA, output=output)
    assert raised.value.status == 422
    assert expected in str(github_standin.take_violations()[0])
    assert github_standin.check_runs() == []


def test_check_runs_need_an_app_token(github_standin: GitHubStandin) -> None:
    answer = raw(
        github_standin,
        "POST",
        api_path("/check-runs"),
        token=MAINTAINER_TOKEN,
        json={"name": "gbbot", "head_sha": HEAD_SHA},
    )
    assert answer.status_code == 403


# -- pulls, reviews, permissions ------------------------------------------------------------------
def test_pulls_are_found_by_number_head_and_commit(github_standin: GitHubStandin) -> None:
    github_standin.add_pull(
        3,
        HEAD_SHA,
        head_ref="fix",
        author="forker",
        head_repo_fork=True,
        maintainer_can_modify=True,
    )
    github_standin.add_pull(4, "f" * 40, state="closed")
    repo = github_standin.github_client().get_repo(REPO)
    pull = repo.get_pull(3)
    assert (pull.head.repo.full_name, pull.head.repo.fork, pull.maintainer_can_modify) == (
        "forker/octo-repo",
        True,
        True,
    )
    assert [p.number for p in repo.get_pulls(state="open", head="forker:fix")] == [3]
    assert [p.number for p in repo.get_pulls(state="all")] == [4, 3]
    by_commit = raw(github_standin, "GET", api_path(f"/commits/{HEAD_SHA}/pulls")).json()
    assert [p["number"] for p in by_commit] == [3]


def test_pull_files_carry_patches(pull_seven: GitHubStandin) -> None:
    files = list(pull_seven.github_client().get_repo(REPO).get_pull(7).get_files())
    assert [(f.filename, f.additions, f.deletions, f.patch) for f in files] == [("model.py", 2, 1, PATCH)]


def test_review_with_comments_on_diff_lines(pull_seven: GitHubStandin) -> None:
    pull = pull_seven.github_client().get_repo(REPO).get_pull(7)
    review = pull.create_review(
        body="gbbot found 1 new graph break",
        event="COMMENT",
        comments=[
            {"path": "model.py", "line": 3, "side": "RIGHT", "body": "print() breaks the graph"},
            {"path": "model.py", "position": 2, "body": "by position"},
        ],
    )
    assert review.state == "COMMENTED"
    assert [r.id for r in pull.get_reviews()] == [review.id]
    placed = [(c.path, c.line, c.position, c.body) for c in pull.get_review_comments()]
    assert placed == [
        ("model.py", 3, 4, "print() breaks the graph"),
        ("model.py", 2, 2, "by position"),
    ]


@pytest.mark.parametrize(
    ("comment", "error"),
    [
        ({"path": "model.py", "line": 40, "body": "b"}, "Line could not be resolved"),
        ({"path": "other.py", "line": 1, "body": "b"}, "Path could not be resolved"),
    ],
)
def test_review_comment_outside_the_diff_is_422(pull_seven: GitHubStandin, comment: dict[str, Any], error: str) -> None:
    answer = raw(
        pull_seven,
        "POST",
        api_path("/pulls/7/reviews"),
        json={"event": "COMMENT", "body": "b", "comments": [comment]},
    )
    assert (answer.status_code, answer.json()["errors"]) == (422, [error])
    assert pull_seven.reviews(7) == []
    pull_seven.take_violations()


def test_collaborator_permission(github_standin: GitHubStandin) -> None:
    github_standin.set_permission("maintainer", "maintain")
    repo = github_standin.github_client().get_repo(REPO)
    assert repo.get_collaborator_permission("maintainer") == "write"
    body = raw(github_standin, "GET", api_path("/collaborators/maintainer/permission")).json()
    assert (body["role_name"], body["user"]["role_name"]) == ("maintain", "maintain")
    with pytest.raises(UnknownObjectException):
        repo.get_collaborator_permission("stranger")


# -- failures, validation, concurrency ------------------------------------------------------------
def test_injected_server_error_surfaces_once(pull_seven: GitHubStandin) -> None:
    pull = pull_seven.github_client().get_repo(REPO).get_pull(7)
    pull_seven.fail_next("POST", r"/issues/\d+/comments$", 502)
    with pytest.raises(GithubException) as raised:
        pull.create_issue_comment("report")
    assert raised.value.status == 502
    pull.create_issue_comment("report")
    assert len(pull_seven.requests_to("POST", r"/issues/7/comments$")) == 2
    assert [c.body for c in pull_seven.comments(7)] == ["report"]


def test_rate_limits_surface_with_their_headers(github_standin: GitHubStandin) -> None:
    repo = github_standin.github_client().get_repo(REPO)
    github_standin.fail_secondary_rate_limited("GET", r"/pulls/\d+$", retry_after=7)
    with pytest.raises(RateLimitExceededException) as raised:
        repo.get_pull(1)
    assert raised.value.headers["retry-after"] == "7"
    github_standin.fail_rate_limited("*", r"/pulls", status=429, reset=1_900_000_000)
    answer = raw(github_standin, "GET", api_path("/pulls"))
    assert answer.status_code == 429
    assert (answer.headers["x-ratelimit-remaining"], answer.headers["x-ratelimit-reset"]) == (
        "0",
        "1900000000",
    )
    assert raw(github_standin, "GET", api_path("/pulls")).status_code == 200


def test_a_response_off_the_contract_is_a_violation(
    github_standin: GitHubStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    comment = github_standin.add_comment(1, "hi", "someone")
    monkeypatch.setattr(github_standin.renderer, "issue_comment", lambda _: {"id": "not a number"})
    raw(github_standin, "GET", api_path(f"/issues/comments/{comment.id}"))
    [violation] = github_standin.take_violations()
    assert violation.kind == "response"
    assert any("'node_id' is a required property" in e for e in violation.errors)


def test_checked_standin_fails_the_test_on_leftover_violations() -> None:
    with (
        pytest.raises(pytest.fail.Exception, match="1 contract violation"),
        checked_standin() as server,
    ):
        server.add_issue(1)
        raw(server, "POST", api_path("/issues/1/comments"), json={})


def test_every_url_points_back_at_the_standin(pull_seven: GitHubStandin) -> None:
    comment = pull_seven.add_comment(7, "hi", "someone")
    run = raw(
        pull_seven,
        "POST",
        api_path("/check-runs"),
        json={
            "name": "n",
            "head_sha": HEAD_SHA,
            "output": {"title": "t", "summary": "s", "annotations": [ANNOTATION]},
        },
    ).json()
    raw(
        pull_seven,
        "POST",
        api_path("/pulls/7/reviews"),
        json={"event": "COMMENT", "comments": [{"path": "model.py", "line": 3, "body": "b"}]},
    )
    paths = [
        "",
        "/pulls/7",
        "/pulls",
        "/pulls/7/files",
        "/pulls/7/reviews",
        "/pulls/7/comments",
        f"/issues/comments/{comment.id}",
        f"/check-runs/{run['id']}",
        f"/check-runs/{run['id']}/annotations",
    ]
    for path in paths:
        for key, value in strings(raw(pull_seven, "GET", api_path(path)).json()):
            assert "api.github.com" not in value and not value.startswith("https://github.com"), key
            if key.endswith(("url", "href")) and value.startswith("http"):
                assert value.startswith(pull_seven.url), (key, value)


def test_concurrent_writes_keep_every_comment(pull_seven: GitHubStandin) -> None:
    def post(n: int) -> None:
        for i in range(5):
            raw(pull_seven, "POST", api_path("/issues/7/comments"), json={"body": f"{n}.{i}"})

    threads = [threading.Thread(target=post, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    comments = pull_seven.comments(7)
    assert len(comments) == 40
    assert len({c.id for c in comments}) == 40


def test_a_file_is_served_at_a_commit_and_a_large_one_is_refused(github_standin: GitHubStandin) -> None:
    sha = "c" * 40
    github_standin.set_file(sha, "pkg/model.py", "print('é')\n")
    github_standin.set_file(sha, "pkg/big.py", "#" * 1_100_000)
    repo = github_standin.github_client().get_repo("octo-org/octo-repo")
    found = repo.get_contents("pkg/model.py", ref=sha)
    assert (found.path, found.size, found.decoded_content) == ("pkg/model.py", 12, "print('é')\n".encode())
    with pytest.raises(GithubException) as too_large:
        repo.get_contents("pkg/big.py", ref=sha)
    with pytest.raises(GithubException) as elsewhere:
        repo.get_contents("pkg/model.py", ref="d" * 40)
    assert (too_large.value.status, elsewhere.value.status) == (403, 404)
