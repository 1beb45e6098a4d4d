"""The REST operations the stand-in serves, one method each, with GitHub's own rules.

Request bodies reach a handler only after they passed the OpenAPI schema, which
already enforces two of GitHub's limits (``output.summary``/``text`` at most
65,535 chars, at most 50 annotations per request).  The limits the schema does
not state are checked here and answered as GitHub does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from .model import (
    CheckRun,
    DiffLine,
    Issue,
    IssueComment,
    Pull,
    Reaction,
    RepoState,
    Review,
    ReviewComment,
    diff_lines,
)
from .render import Renderer
from .wire import ApiError, Call, Reply, not_found, paginate

COMMENT_BODY_MAX = 65_536
CONTENT_API_MAX_BYTES = 1_048_576  # repos/get-content sends blobs up to 1 MB
ANNOTATION_MESSAGE_MAX = 4_096
REVIEW_STATES = {
    "APPROVE": "APPROVED",
    "REQUEST_CHANGES": "CHANGES_REQUESTED",
    "COMMENT": "COMMENTED",
}
INTEGRATION_ONLY = "You must authenticate via a GitHub App."

Handler = Callable[["RestApi", Call], Reply]
H = TypeVar("H", bound=Handler)
OPERATIONS: dict[tuple[str, str], Handler] = {}


def operation(method: str, template: str) -> Callable[[H], H]:
    """Register a handler for one (method, OpenAPI path) of the description."""

    def register(handler: H) -> H:
        OPERATIONS[(method, template)] = handler
        return handler

    return register


class RestApi:
    """Serves the operations in ``OPERATIONS`` for one repository's state."""

    def __init__(self, state: RepoState, render: Renderer) -> None:
        self.state = state
        self.render = render

    def handle(self, method: str, template: str, call: Call) -> Reply:
        if not self._is_our_repo(call.path_params):
            raise not_found(call)
        return OPERATIONS[(method, template)](self, call)

    def _is_our_repo(self, params: Mapping[str, str]) -> bool:
        if "owner" not in params:
            return True
        full_name = f"{params['owner']}/{params['repo']}"
        return full_name.lower() == self.state.full_name.lower()

    # -- lookups --------------------------------------------------------------------------------
    def _pull(self, call: Call) -> Pull:
        pull = self.state.pulls.get(call.number("pull_number"))
        if pull is None:
            raise not_found(call)
        return pull

    def _comment(self, call: Call) -> IssueComment:
        comment = self.state.comments.get(call.number("comment_id"))
        if comment is None:
            raise not_found(call)
        return comment

    def _check_run(self, call: Call) -> CheckRun:
        run = self.state.check_runs.get(call.number("check_run_id"))
        if run is None:
            raise not_found(call)
        return run

    # -- repository, pulls ----------------------------------------------------------------------
    @operation("GET", "/repos/{owner}/{repo}")
    def get_repository(self, call: Call) -> Reply:
        return Reply(200, self.render.full_repository())

    @operation("GET", "/repos/{owner}/{repo}/pulls")
    def list_pulls(self, call: Call) -> Reply:
        state = call.query.get("state", "open")
        pulls = sorted(self.state.pulls.values(), key=lambda p: -p.number)
        chosen = [p for p in pulls if state in ("all", p.state) and self._pull_matches(p, call.query)]
        return paginate(call, [self.render.pull_simple(p) for p in chosen])

    def _pull_matches(self, pull: Pull, query: Mapping[str, str]) -> bool:
        head_owner = self.render.head_full_name(pull).split("/")[0]
        head_ok = query.get("head") in (None, f"{head_owner}:{pull.head_ref}")
        return head_ok and query.get("base") in (None, pull.base_ref)

    @operation("GET", "/repos/{owner}/{repo}/pulls/{pull_number}")
    def get_pull(self, call: Call) -> Reply:
        return Reply(200, self.render.pull(self._pull(call)))

    @operation("POST", "/repos/{owner}/{repo}/pulls")
    def create_pull(self, call: Call) -> Reply:
        """From a branch of this repository (``head`` as ``branch`` or ``owner:branch``) that
        exists on the remote, and only one open pull per head and base, as GitHub allows."""
        body = call.body
        head = str(body["head"]).split(":")[-1]
        owner = str(body["head"]).split(":")[0] if ":" in str(body["head"]) else self.state.owner
        sha = self.state.branch_sha(head) if owner.lower() == self.state.owner.lower() else None
        if sha is None:
            raise pull_error(call, "head", "invalid", None)
        base = str(body["base"])
        if any(
            p.state == "open" and (p.head_ref, p.base_ref) == (head, base) and not p.head_repo_fork
            for p in self.state.pulls.values()
        ):
            raise pull_error(call, None, "custom", f"A pull request already exists for {owner}:{head}.")
        check_issue_body(call)
        now = self.state.clock.now()
        pull = Pull(
            number=self.state.next_issue_number(),
            head_sha=sha,
            base_ref=base,
            head_ref=head,
            head_repo_fork=False,
            maintainer_can_modify=False,
            author=call.identity.login,
            title=str(body.get("title") or ""),
            base_sha=self.state.branch_sha(base) or "0" * 40,
            created_at=now,
            body=body.get("body"),
            updated_at=now,
        )
        self.state.pulls[pull.number] = pull
        return Reply(201, self.render.pull(pull))

    @operation("PATCH", "/repos/{owner}/{repo}/pulls/{pull_number}")
    def update_pull(self, call: Call) -> Reply:
        """Title, body and state; the head follows its branch, as on GitHub after a push."""
        pull = self._pull(call)
        check_issue_body(call)
        for key in ("title", "body"):
            if key in call.body:
                setattr(pull, key, call.body[key])
        if call.body.get("state") in ("open", "closed"):
            pull.state = call.body["state"]
        pull.head_sha = self.state.branch_sha(pull.head_ref) or pull.head_sha
        pull.updated_at = self.state.clock.now()
        return Reply(200, self.render.pull(pull))

    @operation("GET", "/repos/{owner}/{repo}/commits/{commit_sha}/pulls")
    def pulls_for_commit(self, call: Call) -> Reply:
        sha = call.path_params["commit_sha"]
        pulls = [p for p in self.state.pulls.values() if p.head_sha == sha]
        return paginate(call, [self.render.pull_simple(p) for p in pulls])

    @operation("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/files")
    def list_pull_files(self, call: Call) -> Reply:
        pull = self._pull(call)
        return paginate(call, [self.render.diff_entry(pull, f) for f in pull.files])

    # -- issues -------------------------------------------------------------------------------
    def _issue(self, call: Call) -> Issue:
        issue = self.state.issue_records.get(call.number("issue_number"))
        if issue is None:
            raise not_found(call)
        if issue.deleted:
            raise ApiError(410, "This issue was deleted", documentation_url=call.documentation_url)
        return issue

    @operation("GET", "/repos/{owner}/{repo}/issues")
    def list_issues(self, call: Call) -> Reply:
        """Newest first; ``state`` (default open) and ``labels`` (all of a comma list) filter."""
        state = call.query.get("state", "open")
        wanted = [name for name in call.query.get("labels", "").split(",") if name]
        chosen = [
            i
            for i in sorted(self.state.issue_records.values(), key=lambda i: -i.number)
            if not i.deleted and state in ("all", i.state) and all(n in i.labels for n in wanted)
        ]
        return paginate(call, [self.render.issue(i) for i in chosen])

    @operation("POST", "/repos/{owner}/{repo}/issues")
    def create_issue(self, call: Call) -> Reply:
        check_issue_body(call)
        now = self.state.clock.now()
        labels = [str(label) for label in call.body.get("labels", [])]
        issue = Issue(
            self.state.next_issue_number(),
            str(call.body["title"]),
            call.body.get("body") or "",
            call.identity.login,
            labels,
            now,
            now,
        )
        self.state.issue_records[issue.number] = issue
        return Reply(201, self.render.issue(issue))

    @operation("GET", "/repos/{owner}/{repo}/issues/{issue_number}")
    def get_issue(self, call: Call) -> Reply:
        return Reply(200, self.render.issue(self._issue(call)))

    @operation("PATCH", "/repos/{owner}/{repo}/issues/{issue_number}")
    def update_issue(self, call: Call) -> Reply:
        issue = self._issue(call)
        if issue.locked and self.state.roles.get(call.identity.login) != "admin":
            raise resource_not_accessible(call)
        check_issue_body(call)
        body, now = call.body, self.state.clock.now()
        for key in ("title", "body"):
            if key in body:
                setattr(issue, key, body[key] or "")
        if "labels" in body:
            issue.labels = [str(label) for label in body["labels"]]
        if body.get("state") == "closed" and issue.state == "open":
            issue.state, issue.closed_at = "closed", now
            issue.state_reason = body.get("state_reason") or "completed"
        elif body.get("state") == "open" and issue.state == "closed":
            issue.state, issue.closed_at, issue.state_reason = "open", None, "reopened"
        issue.updated_at = now
        return Reply(200, self.render.issue(issue))

    @operation("GET", "/repos/{owner}/{repo}/contents/{path}")
    def get_content(self, call: Call) -> Reply:
        """A file at a commit (``ref`` as a SHA only); over 1 MB, GitHub's 403 ``too_large``."""
        key = (call.query.get("ref", ""), call.path_params["path"])
        data = self.state.files.get(key)
        if data is None:
            raise not_found(call)
        if len(data) > CONTENT_API_MAX_BYTES:
            raise blob_too_large(call)
        return Reply(200, self.render.content_file(key[0], key[1], data))

    # -- issue comments -------------------------------------------------------------------------
    @operation("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments")
    def list_comments(self, call: Call) -> Reply:
        number = call.number("issue_number")
        if not self.state.issue_exists(number):
            raise not_found(call)
        since = call.query.get("since", "")
        comments = [c for c in self.state.comments_on(number) if c.updated_at >= since]
        return paginate(call, [self.render.issue_comment(c) for c in comments])

    @operation("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments")
    def create_comment(self, call: Call) -> Reply:
        number = call.number("issue_number")
        if not self.state.issue_exists(number):
            raise not_found(call)
        check_comment_body(call)
        now = self.state.clock.now()
        comment = IssueComment(self.state.next_id(), number, call.body["body"], call.identity.login, now, now)
        self.state.comments[comment.id] = comment
        return Reply(201, self.render.issue_comment(comment))

    @operation("GET", "/repos/{owner}/{repo}/issues/comments/{comment_id}")
    def get_comment(self, call: Call) -> Reply:
        return Reply(200, self.render.issue_comment(self._comment(call)))

    @operation("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}")
    def update_comment(self, call: Call) -> Reply:
        comment = self._comment(call)
        check_comment_body(call)
        comment.body = call.body["body"]
        comment.updated_at = self.state.clock.now()
        return Reply(200, self.render.issue_comment(comment))

    @operation("DELETE", "/repos/{owner}/{repo}/issues/comments/{comment_id}")
    def delete_comment(self, call: Call) -> Reply:
        del self.state.comments[self._comment(call).id]
        return Reply(204)

    # -- reactions ------------------------------------------------------------------------------
    @operation("GET", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions")
    def list_reactions(self, call: Call) -> Reply:
        reactions = self._comment(call).reactions
        wanted = call.query.get("content")
        chosen = [r for r in reactions if wanted in (None, r.content)]
        return paginate(call, [self.render.reaction(r) for r in chosen])

    @operation("POST", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions")
    def create_reaction(self, call: Call) -> Reply:
        comment = self._comment(call)
        content, login = call.body["content"], call.identity.login
        for reaction in comment.reactions:
            if (reaction.login, reaction.content) == (login, content):
                return Reply(200, self.render.reaction(reaction))
        reaction = Reaction(self.state.next_id(), login, content, self.state.clock.now())
        comment.reactions.append(reaction)
        return Reply(201, self.render.reaction(reaction))

    # -- check runs -----------------------------------------------------------------------------
    @operation("POST", "/repos/{owner}/{repo}/check-runs")
    def create_check_run(self, call: Call) -> Reply:
        if call.identity.type != "Bot":
            raise ApiError(403, INTEGRATION_ONLY, documentation_url=call.documentation_url)
        check_annotations(call)
        now = self.state.clock.now()
        body = call.body
        run = CheckRun(
            id=self.state.next_id(),
            name=body["name"],
            head_sha=body["head_sha"],
            app_login=call.identity.login,
            status=body.get("status", "queued"),
            conclusion=None,
            started_at=body.get("started_at", now),
            completed_at=None,
            details_url=body.get("details_url"),
            external_id=body.get("external_id", ""),
            output={"title": None, "summary": None, "text": None},
        )
        apply_check_run_update(run, body, now)
        self.state.check_runs[run.id] = run
        return Reply(201, self.render.check_run(run))

    @operation("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}")
    def update_check_run(self, call: Call) -> Reply:
        run = self._check_run(call)
        check_annotations(call)
        apply_check_run_update(run, call.body, self.state.clock.now())
        return Reply(200, self.render.check_run(run))

    @operation("GET", "/repos/{owner}/{repo}/check-runs/{check_run_id}")
    def get_check_run(self, call: Call) -> Reply:
        return Reply(200, self.render.check_run(self._check_run(call)))

    @operation("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs")
    def list_check_runs_for_ref(self, call: Call) -> Reply:
        """A commit's check runs (``ref`` as a SHA only), newest first, wrapped in an object."""
        name = call.query.get("check_name")
        runs = [
            r
            for r in self.state.check_runs.values()
            if r.head_sha == call.path_params["ref"] and name in (None, r.name)
        ]
        runs.sort(key=lambda r: -r.id)
        page = paginate(call, [self.render.check_run(r) for r in runs])
        return Reply(200, {"total_count": len(runs), "check_runs": page.body}, page.headers)

    @operation("GET", "/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations")
    def list_annotations(self, call: Call) -> Reply:
        run = self._check_run(call)
        return paginate(call, [self.render.annotation(run, note) for note in run.annotations])

    # -- reviews --------------------------------------------------------------------------------
    @operation("POST", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews")
    def create_review(self, call: Call) -> Reply:
        pull = self._pull(call)
        body = call.body
        event = body.get("event")
        if event in ("REQUEST_CHANGES", "COMMENT") and not (body.get("body") or body.get("comments")):
            raise review_error(call, f"Body is required when event is {event}")
        places = [self._place(call, pull, c) for c in body.get("comments", [])]
        review = self._store_review(call, pull)
        for spec, (line, place) in zip(body.get("comments", []), places, strict=True):
            self._store_review_comment(call, review, spec, line, place)
        return Reply(200, self.render.review(review))

    def _store_review(self, call: Call, pull: Pull) -> Review:
        event = call.body.get("event")
        submitted = None if event is None else self.state.clock.now()
        review = Review(
            id=self.state.next_id(),
            pull_number=pull.number,
            login=call.identity.login,
            body=call.body.get("body", ""),
            state=REVIEW_STATES.get(event or "", "PENDING"),
            commit_id=call.body.get("commit_id", pull.head_sha),
            submitted_at=submitted,
        )
        self.state.reviews[review.id] = review
        return review

    def _place(self, call: Call, pull: Pull, spec: Mapping[str, Any]) -> tuple[DiffLine, dict[str, Any]]:
        """Where a review comment lands in the diff, or GitHub's 422."""
        changed = next((f for f in pull.files if f.filename == spec["path"]), None)
        if changed is None:
            raise review_error(call, "Path could not be resolved")
        line = find_diff_line(diff_lines(changed.patch), spec)
        if line is None:
            raise review_error(call, "Line could not be resolved")
        side = spec.get("side") or ("RIGHT" if line.right is not None else "LEFT")
        place = {
            "position": line.position,
            "line": line.right if side == "RIGHT" else line.left,
            "side": side,
            "start_line": spec.get("start_line"),
            "start_side": spec.get("start_side"),
        }
        return line, place

    def _store_review_comment(
        self,
        call: Call,
        review: Review,
        spec: Mapping[str, Any],
        line: DiffLine,
        place: dict[str, Any],
    ) -> None:
        comment = ReviewComment(
            id=self.state.next_id(),
            review_id=review.id,
            pull_number=review.pull_number,
            path=spec["path"],
            body=spec["body"],
            login=call.identity.login,
            commit_id=review.commit_id,
            diff_hunk=line.diff_hunk,
            created_at=self.state.clock.now(),
            **place,
        )
        self.state.review_comments[comment.id] = comment

    @operation("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews")
    def list_reviews(self, call: Call) -> Reply:
        number = self._pull(call).number
        reviews = [r for r in self.state.reviews.values() if r.pull_number == number]
        return paginate(call, [self.render.review(r) for r in reviews])

    @operation("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/comments")
    def list_review_comments(self, call: Call) -> Reply:
        number = self._pull(call).number
        comments = [c for c in self.state.review_comments.values() if c.pull_number == number]
        return paginate(call, [self.render.review_comment(c) for c in comments])

    # -- people ---------------------------------------------------------------------------------
    @operation("GET", "/repos/{owner}/{repo}/collaborators/{username}/permission")
    def get_permission(self, call: Call) -> Reply:
        login = call.path_params["username"]
        role = self.state.roles.get(login)
        if role is None:
            raise not_found(call)
        return Reply(200, self.render.collaborator_permission(login, role))

    @operation("GET", "/user")
    def get_authenticated_user(self, call: Call) -> Reply:
        if not call.identity.can_read_user:
            raise resource_not_accessible(call)
        return Reply(200, self.render.authenticated_user(call.identity))


def resource_not_accessible(call: Call) -> ApiError:
    message = "Resource not accessible by integration"
    return ApiError(403, message, documentation_url=call.documentation_url)


def blob_too_large(call: Call) -> ApiError:
    message = (
        "This API returns blobs up to 1 MB in size. The requested blob is too large to fetch via the API, "
        "but you can use the Git Data API to request blobs up to 100 MB in size."
    )
    error = {"resource": "Blob", "field": "data", "code": "too_large"}
    return ApiError(403, message, errors=[error], documentation_url=call.documentation_url)


def check_comment_body(call: Call) -> None:
    if len(call.body["body"]) > COMMENT_BODY_MAX:
        message = f"Body is too long (maximum is {COMMENT_BODY_MAX} characters)"
        error = {
            "resource": "IssueComment",
            "code": "unprocessable",
            "field": "data",
            "message": message,
        }
        raise ApiError(
            422,
            "Validation Failed",
            errors=[error],
            documentation_url=call.documentation_url,
            details=[message],
        )


def check_issue_body(call: Call) -> None:
    """An issue body has the same limit as a comment's."""
    if len(call.body.get("body") or "") > COMMENT_BODY_MAX:
        message = f"body is too long (maximum is {COMMENT_BODY_MAX} characters)"
        error = {"resource": "Issue", "code": "custom", "field": "body", "message": message}
        raise ApiError(
            422, "Validation Failed", errors=[error], documentation_url=call.documentation_url, details=[message]
        )


def pull_error(call: Call, field: str | None, code: str, message: str | None) -> ApiError:
    """pulls/create's 422: a head that is not a branch here, or a second open pull for one head."""
    error: dict[str, Any] = {"resource": "PullRequest", "code": code}
    if field:
        error["field"] = field
    if message:
        error["message"] = message
    details = [message or f"{field} {code}"]
    return ApiError(422, "Validation Failed", errors=[error], documentation_url=call.documentation_url, details=details)


def check_annotations(call: Call) -> None:
    notes = (call.body.get("output") or {}).get("annotations", [])
    too_long = [i for i, note in enumerate(notes) if len(note["message"]) > ANNOTATION_MESSAGE_MAX]
    if too_long:
        errors = [annotation_error(i) for i in too_long]
        raise ApiError(
            422,
            "Validation Failed",
            errors=errors,
            documentation_url=call.documentation_url,
            details=[e["message"] for e in errors],
        )


def annotation_error(index: int) -> dict[str, Any]:
    message = f"annotations[{index}].message is too long (maximum is {ANNOTATION_MESSAGE_MAX} characters)"
    return {"resource": "CheckRun", "code": "custom", "field": "annotations", "message": message}


def apply_check_run_update(run: CheckRun, body: Mapping[str, Any], now: str) -> None:
    """Fields given replace the stored ones; annotations are appended, as on GitHub."""
    for key in ("name", "details_url", "external_id", "started_at", "status"):
        if key in body:
            setattr(run, key, body[key])
    if "conclusion" in body:
        run.conclusion, run.status = body["conclusion"], "completed"
    if run.status == "completed":
        run.completed_at = body.get("completed_at", run.completed_at or now)
    output = body.get("output") or {}
    run.output.update({k: output[k] for k in ("title", "summary", "text") if k in output})
    run.annotations.extend(output.get("annotations", []))


def find_diff_line(lines: Iterable[DiffLine], spec: Mapping[str, Any]) -> DiffLine | None:
    if spec.get("line") is not None:
        side = spec.get("side", "RIGHT")
        wanted = spec["line"]
        return next((d for d in lines if (d.right if side == "RIGHT" else d.left) == wanted), None)
    if spec.get("position") is not None:
        return next((d for d in lines if d.position == spec["position"]), None)
    return None


def review_error(call: Call, message: str) -> ApiError:
    """pulls/create-review answers 422 with a list of strings (validation-error-simple)."""
    return ApiError(
        422,
        "Unprocessable Entity",
        errors=[message],
        documentation_url=call.documentation_url,
        details=[message],
    )
