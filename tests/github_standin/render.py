"""The stand-in's records as GitHub's JSON objects.

Each object starts from GitHub's own example in the OpenAPI description (so it
carries every field a client may read), is moved onto the stand-in's base URL,
and then gets its real values from the state.  The examples are not all valid
against their own schemas (e.g. the collaborator-permission one lacks
``user.role_name``); the fields that break validation are set here, and the
server's response validation catches any that are missed.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from .model import (
    LEGACY_PERMISSION,
    CheckRun,
    Identity,
    Issue,
    IssueComment,
    Pull,
    PullFile,
    Reaction,
    RepoState,
    Review,
    ReviewComment,
    user_type,
)

Json = dict[str, Any]
# api.github.com, github.com, svn.github.com... (git@ and git: clone addresses stay).
REAL_HOSTS = re.compile(r"https://(?:[a-z]+\.)?github\.com")
# Repositories the examples are written about; every mention becomes ours.
EXAMPLE_REPOS = ("octocat/Hello-World", "github/hello-world", "github/rest-api-description")
REACTION_CONTENTS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "eyes", "rocket")
ACTIONS_APP = {"id": 15368, "slug": "github-actions", "name": "GitHub Actions"}


class Renderer:
    """Builds response objects for one repository served at ``base_url``."""

    def __init__(self, base_url: str, state: RepoState, document: Mapping[str, Any]) -> None:
        self.base_url = base_url
        self.state = state
        self._examples = document["components"]["examples"]
        self._public_user_keys = set(document["components"]["schemas"]["public-user"]["properties"])

    # -- URLs ---------------------------------------------------------------------------------
    def api(self, suffix: str = "") -> str:
        return f"{self.base_url}/repos/{self.state.full_name}{suffix}"

    def html(self, suffix: str = "") -> str:
        return f"{self.base_url}/{self.state.full_name}{suffix}"

    def template(self, example: str, full_name: str | None = None) -> Json:
        """A deep copy of GitHub's example, about ``full_name`` (default: our repo)."""
        value = self._examples[example]["value"]
        text = json.dumps(value[0] if isinstance(value, list) else value)
        text = REAL_HOSTS.sub(self.base_url, text)
        for name in EXAMPLE_REPOS:
            text = text.replace(name, full_name or self.state.full_name)
        return json.loads(text)

    # -- people -------------------------------------------------------------------------------
    def user(self, login: str) -> Json:
        user = self.template("issue-comment")["user"]
        old = user["login"]
        user = json.loads(json.dumps(user).replace(f"/{old}", f"/{quote(login)}"))
        user.update(login=login, id=self.state.user_id(login), type=user_type(login))
        user.update(node_id=node_id("U", user["id"]), site_admin=False)
        return user

    def authenticated_user(self, identity: Identity) -> Json:
        user = self.template("private-user-response-with-public-profile-information")
        user.update(self.user(identity.login), user_view_type="public")
        return {key: value for key, value in user.items() if key in self._public_user_keys}

    def collaborator_permission(self, login: str, role: str) -> Json:
        legacy = LEGACY_PERMISSION[role]
        ranks = ["none", "read", "triage", "write", "maintain", "admin"]
        granted = {
            name: ranks.index(role) >= ranks.index(level)
            for name, level in (
                ("pull", "read"),
                ("triage", "triage"),
                ("push", "write"),
                ("maintain", "maintain"),
                ("admin", "admin"),
            )
        }
        user = {**self.user(login), "permissions": granted, "role_name": role}
        return {"permission": legacy, "role_name": role, "user": user}

    # -- repositories -------------------------------------------------------------------------
    def full_repository(self) -> Json:
        repo = self.template("full-repository-default-response")
        repo.update(self._repository_identity(self.state.full_name, fork=False))
        # The example's own "language" is missing although the schema requires it.
        repo.update(organization=None, template_repository=None, language="Python")
        for only_on_forks in ("parent", "source"):
            repo.pop(only_on_forks, None)
        if self.state.clone_url:
            repo["clone_url"] = self.state.clone_url
        return repo

    def repository(self, full_name: str, fork: bool) -> Json:
        repo = self.template("pull-request", full_name)["base"]["repo"]
        repo.update(self._repository_identity(full_name, fork))
        if self.state.clone_url and full_name == self.state.full_name:
            repo["clone_url"] = self.state.clone_url  # a PR's head and base repository, as in full_repository
        return repo

    def _repository_identity(self, full_name: str, fork: bool) -> Json:
        owner, name = full_name.split("/")
        repo_id = self.state.repo_id if full_name == self.state.full_name else stable_id(full_name)
        return {
            "id": repo_id,
            "node_id": node_id("R", repo_id),
            "name": name,
            "full_name": full_name,
            "owner": self.user(owner),
            "fork": fork,
            "private": False,
            "default_branch": self.state.default_branch,
        }

    # -- pull requests ------------------------------------------------------------------------
    def pull_simple(self, pull: Pull) -> Json:
        return self._pull_common(self.template("pull-request-simple-items"), pull)

    def pull(self, pull: Pull) -> Json:
        obj = self._pull_common(self.template("pull-request"), pull)
        obj.update(
            merged=False,
            mergeable=True,
            mergeable_state="clean",
            merged_by=None,
            maintainer_can_modify=pull.maintainer_can_modify,
            comments=len(self.state.comments_on(pull.number)),
            review_comments=sum(c.pull_number == pull.number for c in self.state.review_comments.values()),
            commits=1,
            additions=sum(f.additions for f in pull.files),
            deletions=sum(f.deletions for f in pull.files),
            changed_files=len(pull.files),
        )
        return obj

    def _pull_common(self, obj: Json, pull: Pull) -> Json:
        obj.update(self._pull_urls(pull))
        obj.update(
            id=stable_id(f"pull/{pull.number}"),
            node_id=node_id("PR", pull.number),
            number=pull.number,
            state=pull.state,
            title=pull.title,
            body=pull.body,
            user=self.user(pull.author),
            created_at=pull.created_at,
            updated_at=pull.updated_at or pull.created_at,
            closed_at=None,
            merged_at=None,
            merge_commit_sha=None,
            author_association=self.state.author_association(pull.author),
            head=self._pull_head(pull),
            base=self._pull_end(self.state.full_name, pull.base_ref, pull.base_sha, fork=False),
        )
        obj.update(assignee=None, assignees=[], requested_reviewers=[], requested_teams=[])
        obj.update(labels=[], milestone=None, auto_merge=None, draft=False, locked=False)
        return obj

    def _pull_head(self, pull: Pull) -> Json:
        full_name = self.head_full_name(pull)
        return self._pull_end(full_name, pull.head_ref, pull.head_sha, fork=pull.head_repo_fork)

    def head_full_name(self, pull: Pull) -> str:
        return f"{pull.author}/{self.state.name}" if pull.head_repo_fork else self.state.full_name

    def _pull_end(self, full_name: str, ref: str, sha: str, fork: bool) -> Json:
        owner = full_name.split("/")[0]
        return {
            "label": f"{owner}:{ref}",
            "ref": ref,
            "sha": sha,
            "user": self.user(owner),
            "repo": self.repository(full_name, fork),
        }

    def _pull_urls(self, pull: Pull) -> Json:
        n = pull.number
        urls = {
            "url": self.api(f"/pulls/{n}"),
            "html_url": self.html(f"/pull/{n}"),
            "diff_url": self.html(f"/pull/{n}.diff"),
            "patch_url": self.html(f"/pull/{n}.patch"),
            "issue_url": self.api(f"/issues/{n}"),
            "commits_url": self.api(f"/pulls/{n}/commits"),
            "review_comments_url": self.api(f"/pulls/{n}/comments"),
            "review_comment_url": self.api("/pulls/comments{/number}"),
            "comments_url": self.api(f"/issues/{n}/comments"),
            "statuses_url": self.api(f"/statuses/{pull.head_sha}"),
        }
        links = {
            "self": urls["url"],
            "html": urls["html_url"],
            "issue": urls["issue_url"],
            "comments": urls["comments_url"],
            "review_comments": urls["review_comments_url"],
            "review_comment": urls["review_comment_url"],
            "commits": urls["commits_url"],
            "statuses": urls["statuses_url"],
        }
        return {**urls, "_links": {name: {"href": href} for name, href in links.items()}}

    def pull_minimal(self, pull: Pull) -> Json:
        repo = {"id": self.state.repo_id, "url": self.api(), "name": self.state.name}
        return {
            "id": stable_id(f"pull/{pull.number}"),
            "number": pull.number,
            "url": self.api(f"/pulls/{pull.number}"),
            "head": {"ref": pull.head_ref, "sha": pull.head_sha, "repo": repo},
            "base": {"ref": pull.base_ref, "sha": pull.base_sha, "repo": repo},
        }

    def diff_entry(self, pull: Pull, changed: PullFile) -> Json:
        entry = self.template("diff-entry-items")
        entry.update(
            sha=hashlib.sha1(changed.patch.encode()).hexdigest(),
            filename=changed.filename,
            status=changed.status,
            additions=changed.additions,
            deletions=changed.deletions,
            changes=changed.additions + changed.deletions,
            blob_url=self.html(f"/blob/{pull.head_sha}/{changed.filename}"),
            raw_url=self.html(f"/raw/{pull.head_sha}/{changed.filename}"),
            contents_url=self.api(f"/contents/{changed.filename}?ref={pull.head_sha}"),
            patch=changed.patch,
        )
        return entry

    def content_file(self, sha: str, path: str, data: bytes) -> Json:
        """A file as repos/get-content sends it: base64 in lines of 60 characters, as GitHub does."""
        entry = self.template("content-file-response-if-content-is-a-file")
        encoded = base64.b64encode(data).decode("ascii")
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        entry.update(
            size=len(data),
            name=path.rsplit("/", 1)[-1],
            path=path,
            content="".join(encoded[i : i + 60] + "\n" for i in range(0, len(encoded), 60)),
            sha=blob,
            url=self.api(f"/contents/{quote(path)}?ref={sha}"),
            git_url=self.api(f"/git/blobs/{blob}"),
            html_url=self.html(f"/blob/{sha}/{quote(path)}"),
            download_url=f"{self.base_url}/raw/{self.state.full_name}/{sha}/{quote(path)}",
        )
        entry["_links"] = {"git": entry["git_url"], "self": entry["url"], "html": entry["html_url"]}
        return entry

    # -- issue comments and reactions ---------------------------------------------------------
    def issue(self, issue: Issue) -> Json:
        obj = self.template("issue")
        labels = [self.label(name) for name in issue.labels]
        obj.update(
            id=stable_id(f"issue-{issue.number}"),
            node_id=node_id("I", issue.number),
            number=issue.number,
            url=self.api(f"/issues/{issue.number}"),
            repository_url=self.api(),
            labels_url=self.api(f"/issues/{issue.number}/labels{{/name}}"),
            comments_url=self.api(f"/issues/{issue.number}/comments"),
            events_url=self.api(f"/issues/{issue.number}/events"),
            html_url=self.html(f"/issues/{issue.number}"),
            title=issue.title,
            body=issue.body,
            user=self.user(issue.login),
            labels=labels,
            state=issue.state,
            state_reason=issue.state_reason,
            locked=issue.locked,
            assignee=None,
            assignees=[],
            milestone=None,
            comments=len(self.state.comments_on(issue.number)),
            pull_request=None,
            closed_at=issue.closed_at,
            closed_by=None,
            created_at=issue.created_at,
            updated_at=issue.updated_at,
            author_association=self.state.author_association(issue.login),
        )
        for absent in ("pull_request", "closed_by", "repository", "performed_via_github_app"):
            obj.pop(absent, None)
        return obj

    def label(self, name: str) -> Json:
        label_id = stable_id(f"label-{name}")
        return {
            "id": label_id,
            "node_id": node_id("LA", label_id),
            "url": self.api(f"/labels/{quote(name)}"),
            "name": name,
            "description": None,
            "color": "ededed",
            "default": False,
        }

    def issue_comment(self, comment: IssueComment) -> Json:
        """``minimized`` is in the subset's issue-comment schema (a nullable object with a
        ``reason``), so it is always emitted: null unless the comment was minimized."""
        obj = self.template("issue-comment")
        issue_kind = "pull" if comment.issue_number in self.state.pulls else "issues"
        obj.update(
            id=comment.id,
            node_id=node_id("IC", comment.id),
            url=self.api(f"/issues/comments/{comment.id}"),
            html_url=self.html(f"/{issue_kind}/{comment.issue_number}#issuecomment-{comment.id}"),
            issue_url=self.api(f"/issues/{comment.issue_number}"),
            body=comment.body,
            user=self.user(comment.login),
            created_at=comment.created_at,
            updated_at=comment.updated_at,
            author_association=self.state.author_association(comment.login),
            performed_via_github_app=None,
            reactions=self.reaction_rollup(comment),
            minimized=minimized(comment),
        )
        return obj

    def reaction_rollup(self, comment: IssueComment) -> Json:
        counts = {content: 0 for content in REACTION_CONTENTS}
        for reaction in comment.reactions:
            counts[reaction.content] += 1
        url = self.api(f"/issues/comments/{comment.id}/reactions")
        return {"url": url, "total_count": len(comment.reactions), **counts}

    def reaction(self, reaction: Reaction) -> Json:
        return {
            "id": reaction.id,
            "node_id": node_id("REA", reaction.id),
            "user": self.user(reaction.login),
            "content": reaction.content,
            "created_at": reaction.created_at,
        }

    # -- check runs ---------------------------------------------------------------------------
    def check_run(self, run: CheckRun) -> Json:
        obj = self.template("check-run")
        obj.update(
            id=run.id,
            node_id=node_id("CR", run.id),
            name=run.name,
            head_sha=run.head_sha,
            external_id=run.external_id,
            url=self.api(f"/check-runs/{run.id}"),
            html_url=self.html(f"/runs/{run.id}"),
            details_url=run.details_url or self.html(f"/runs/{run.id}"),
            status=run.status,
            conclusion=run.conclusion,
            started_at=run.started_at,
            completed_at=run.completed_at,
            check_suite={"id": stable_id(f"suite/{run.head_sha}")},
            app=self.app(obj["app"], run.app_login),
            pull_requests=[self.pull_minimal(p) for p in self._same_repo_pulls(run.head_sha)],
            output={
                **{key: run.output.get(key) for key in ("title", "summary", "text")},
                "annotations_count": len(run.annotations),
                "annotations_url": self.api(f"/check-runs/{run.id}/annotations"),
            },
        )
        return obj

    def _same_repo_pulls(self, head_sha: str) -> list[Pull]:
        # GitHub leaves fork PRs out of a check run's pull_requests.
        pulls = self.state.pulls.values()
        return [p for p in pulls if p.head_sha == head_sha and not p.head_repo_fork]

    def app(self, template: Json, login: str) -> Json:
        slug = login.removesuffix("[bot]")
        if slug == ACTIONS_APP["slug"]:
            identity = dict(ACTIONS_APP)
        else:
            identity = {"id": stable_id(f"app/{slug}"), "slug": slug, "name": slug}
        app = copy.deepcopy(template)
        app.update(identity, node_id=node_id("A", identity["id"]))
        app["html_url"] = app["external_url"] = f"{self.base_url}/apps/{slug}"
        return app

    def annotation(self, run: CheckRun, note: Mapping[str, Any]) -> Json:
        keys = ("start_column", "end_column", "title", "raw_details")
        return {
            "path": note["path"],
            "blob_href": self.html(f"/blob/{run.head_sha}/{note['path']}"),
            "start_line": note["start_line"],
            "end_line": note["end_line"],
            "annotation_level": note.get("annotation_level"),
            "message": note.get("message"),
            **{key: note.get(key) for key in keys},
        }

    # -- reviews ------------------------------------------------------------------------------
    def review(self, review: Review) -> Json:
        obj = self.template("pull-request-review")
        html_url = self.html(f"/pull/{review.pull_number}#pullrequestreview-{review.id}")
        pull_url = self.api(f"/pulls/{review.pull_number}")
        obj.update(
            id=review.id,
            node_id=node_id("PRR", review.id),
            user=self.user(review.login),
            body=review.body,
            state=review.state,
            commit_id=review.commit_id,
            submitted_at=review.submitted_at,
            html_url=html_url,
            pull_request_url=pull_url,
            author_association=self.state.author_association(review.login),
            _links={"html": {"href": html_url}, "pull_request": {"href": pull_url}},
        )
        return obj

    def review_comment(self, comment: ReviewComment) -> Json:
        obj = self.template("pull-request-review-comment-items")
        obj.pop("in_reply_to_id", None)
        url = self.api(f"/pulls/comments/{comment.id}")
        html_url = self.html(f"/pull/{comment.pull_number}#discussion_r{comment.id}")
        pull_url = self.api(f"/pulls/{comment.pull_number}")
        obj.update(self._review_comment_place(comment))
        obj.update(
            id=comment.id,
            node_id=node_id("PRRC", comment.id),
            pull_request_review_id=comment.review_id,
            url=url,
            html_url=html_url,
            pull_request_url=pull_url,
            path=comment.path,
            body=comment.body,
            user=self.user(comment.login),
            created_at=comment.created_at,
            updated_at=comment.created_at,
            author_association=self.state.author_association(comment.login),
            _links={
                "self": {"href": url},
                "html": {"href": html_url},
                "pull_request": {"href": pull_url},
            },
        )
        return obj

    @staticmethod
    def _review_comment_place(comment: ReviewComment) -> Json:
        return {
            "diff_hunk": comment.diff_hunk,
            "commit_id": comment.commit_id,
            "original_commit_id": comment.commit_id,
            "position": comment.position,
            "original_position": comment.position,
            "line": comment.line,
            "original_line": comment.line,
            "side": comment.side,
            "start_line": comment.start_line,
            "original_start_line": comment.start_line,
            "start_side": comment.start_side,
            "subject_type": "line",
        }


def minimized(comment: IssueComment) -> Json | None:
    return None if comment.minimized_reason is None else {"reason": comment.minimized_reason}


def node_id(prefix: str, number: int) -> str:
    return f"{prefix}_kw{number:08d}"


def stable_id(key: str) -> int:
    """A positive id that is the same for the same key in every run."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)
