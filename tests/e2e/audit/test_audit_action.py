"""`gbbot action` on schedule, end to end: a real repository, real torch, the data branch pushed
to a real git remote over smart HTTP (token checked on every request) and the tracking issue
kept on the GitHub stand-in."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.action_run import run_action
from tests.conftest import git
from tests.git_http import GitHttpRemote
from tests.github_standin import ACTIONS_BOT, ACTIONS_TOKEN
from tests.github_standin.fixtures import checked_standin
from tests.step_project import CONFIG, MODEL, author_repository, with_line

WITH_BREAK = with_line("print('a break')")


def records_on(bare: Path) -> list[str]:
    out = subprocess.run(
        ["git", "ls-tree", "--name-only", "gbbot-data", "records/"], cwd=bare, capture_output=True, text=True
    )
    return out.stdout.split()


def test_audits_keep_one_issue_and_call_out_a_regression_with_its_commit_range(tmp_path):
    bare, repo, first_sha = author_repository(tmp_path, {".gbbot.yml": CONFIG, "model.py": MODEL}, name="repo")
    served = bare.parent
    # A credential a checkout might have left must not be what the push relies on.
    with GitHttpRemote(served, ACTIONS_TOKEN) as remote, checked_standin() as gh:
        url = remote.repo_url("octo-repo.git")
        git(repo, "config", f"http.{remote.url}/.extraheader", "AUTHORIZATION: basic c3RhbGU6c3RhbGU=")
        gh.set_clone_url(url)

        def audit(n: int):
            return run_action(repo, tmp_path / f"run{n}", gh, "schedule", {}, ACTIONS_TOKEN)

        first = audit(1)
        assert first.code == 0, first.stderr
        assert [i.number for i in gh.issues()] == [1] and gh.issue(1).labels == ["gbbot-audit"]
        assert gh.issue(1).login == ACTIONS_BOT and "The first audit" in gh.issue(1).body
        assert len(records_on(bare)) == 1
        assert first.outputs["regressions"] == "0" and first.outputs["issue-url"].endswith("/issues/1")

        second = audit(2)
        assert second.code == 0, second.stderr
        assert len(gh.issues()) == 1 and len(gh.requests_to("PATCH", r"/issues/1$")) == 1
        assert len(records_on(bare)) == 2
        assert "No regression since the previous audit" in gh.issue(1).body

        (repo / "model.py").write_text(WITH_BREAK)
        git(repo, "commit", "-qam", "a print in the compiled function")
        head_sha = git(repo, "rev-parse", "HEAD").strip()
        third = audit(3)
        assert third.code == 1, third.stderr  # fail_on: new and a new break
        body = gh.issue(1).body
        callout = body.split("\n")[1:3]
        assert callout[0] == "> [!CAUTION]"
        assert f"1 new graph break — [`{first_sha[:7]}..{head_sha[:7]}`]" in callout[1]
        assert f"/compare/{first_sha}...{head_sha}" in callout[1]
        assert "print" in body.split("**🆕 New** (1):")[1].split("\n")[1]
        assert third.outputs["new-breaks"] == "1" and third.outputs["regressions"] == "1"
        assert third.outputs["conclusion"] == "failure"
        assert "> [!CAUTION]" in third.summary
        assert len(records_on(bare)) == 3 and len(gh.issues()) == 1
        # `audit: {open_fix_pr: true}` is off (the default): for a break gbbot can fix, no branch, no
        # PR, not even a look for one (tests/e2e/audit/test_fix_pr.py turns it on)
        assert git(bare, "branch", "--list", "gbbot/fixes") == ""
        assert gh.pulls() == [] and not gh.requests_to("GET", r"/pulls$")
        assert "Verified fixes" not in body
        # Every request to the remote carried the token, and only the token.
        assert remote.authorizations and all(
            a.endswith("eC1hY2Nlc3MtdG9rZW46Z2hzX3N0YW5kaW5fYWN0aW9ucw==") or a == "" for a in remote.authorizations
        )
        assert ACTIONS_TOKEN not in first.stderr + second.stderr + third.stderr
