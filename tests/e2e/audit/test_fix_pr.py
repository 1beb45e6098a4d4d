"""`audit: {open_fix_pr: true}` end to end: the audit fixes what it found on gbbot's own branch of a
real git remote (smart HTTP, token checked) and opens one PR on the GitHub stand-in, which later
audits update; a branch someone else committed to is never pushed over. Off (the default), nothing
is made: test_audit_action.py's audit of a new break."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gbbot import api
from gbbot.core.config import load_config
from tests.action_run import run_action
from tests.conftest import git
from tests.e2e.audit.test_audit_action import CONFIG, WITH_BREAK
from tests.git_http import GitHttpRemote
from tests.github_standin import ACTIONS_BOT, ACTIONS_TOKEN
from tests.github_standin.fixtures import checked_standin
from tests.step_project import author_repository

BRANCH = "gbbot/fixes"
MARKER = "<!-- gbbot:audit-fix-pr -->"


def tip(bare: Path, branch: str) -> str | None:
    out = subprocess.run(["git", "rev-parse", "--verify", "-q", f"refs/heads/{branch}"], cwd=bare, capture_output=True)
    return out.stdout.decode().strip() or None


def setup(tmp_path: Path, config: str) -> tuple[Path, Path, str]:
    """A repository whose default branch has a `print` break, pushed to a bare remote."""
    files = {".gbbot.yml": config, "model.py": WITH_BREAK}
    bare, repo, sha = author_repository(tmp_path, files, "a print in the compiled function", name="repo")
    git(repo, "push", "-q", str(bare), "main")
    return repo, bare, sha


def breaks_at(bare: Path, commit: str, scratch: Path) -> int:
    """`gbbot check` on the tree of `commit`."""
    tree = scratch / "checked"
    git(bare, "worktree", "add", "-q", "--detach", str(tree), commit)
    return len(api.check(tree, load_config(tree / ".gbbot.yml"), api.CheckOptions()).breaks)


def test_the_audit_opens_one_fix_pr_updates_it_never_pushes_over_someone_elses_branch_and_calls_it_stale(tmp_path):
    config = CONFIG.replace("fail_on: new", "fail_on: none") + "audit: {open_fix_pr: true}\n"
    repo, bare, audited = setup(tmp_path, config)
    with GitHttpRemote(bare.parent, ACTIONS_TOKEN) as remote, checked_standin() as gh:
        gh.set_clone_url(remote.repo_url("octo-repo.git"))
        gh.set_branch_resolver(lambda branch: tip(bare, branch))

        def audit(n: int):
            done = run_action(repo, tmp_path / f"run{n}", gh, "schedule", {}, ACTIONS_TOKEN)
            assert done.code == 0, done.stderr
            return done

        first = audit(1)
        fixed = tip(bare, BRANCH)
        assert fixed is not None, first.stderr
        assert git(bare, "rev-list", "--parents", "-n1", fixed).split() == [fixed, audited]
        assert (
            git(bare, "log", "-1", "--format=%ae %s", fixed)
            == "gbbot@users.noreply.github.com gbbot: fix 1 graph break"
        )
        assert git(bare, "diff", "--name-only", audited, fixed) == "model.py"
        assert breaks_at(bare, fixed, tmp_path) == 0
        [pull] = gh.pulls()
        assert (pull.head_ref, pull.base_ref, pull.author, pull.head_sha) == (BRANCH, "main", ACTIONS_BOT, fixed)
        assert pull.body.startswith(MARKER + "\n") and "`GB" in pull.body and "model.py:" in pull.body
        assert "Graph breaks 1 → 0" in pull.body
        [issue] = gh.issues()
        assert f"1 break has a verified fix: [#{pull.number}](" in issue.body
        assert (
            git(repo, "status", "--porcelain", "--untracked-files=no") == ""
            and (repo / "model.py").read_text() == WITH_BREAK
        )

        audit(2)  # the same commit again: the same fix, the same branch tip, the same PR edited
        assert tip(bare, BRANCH) == fixed
        assert [p.number for p in gh.pulls()] == [pull.number]
        assert len(gh.requests_to("PATCH", rf"/pulls/{pull.number}$")) == 1
        assert len(gh.requests_to("POST", r"/pulls$")) == 1

        # Someone commits onto gbbot's branch: the audit leaves it alone and says so.
        other = tmp_path / "other"
        git(tmp_path, "clone", "-q", str(bare), str(other))
        git(other, "checkout", "-q", BRANCH)
        (other / "notes.txt").write_text("mine\n")
        git(other, "add", "notes.txt")
        git(other, "commit", "-qm", "my notes")
        git(other, "push", "-q", "origin", BRANCH)
        theirs = tip(bare, BRANCH)
        third = audit(3)
        assert tip(bare, BRANCH) == theirs
        assert "not a commit gbbot made" in gh.issue(issue.number).body and "gbbot/fixes" in gh.issue(issue.number).body
        assert len(gh.pulls()) == 1 and len(gh.requests_to("PATCH", rf"/pulls/{pull.number}$")) == 1

        # A night without a verified fix (the break was fixed by hand on main): the earlier PR is
        # left open, untouched, and called possibly stale.
        (repo / "model.py").write_text(WITH_BREAK.replace("    print('a break')\n", ""))
        git(repo, "commit", "-qam", "fixed by hand")
        git(repo, "push", "-q", str(bare), "main")
        fourth = audit(4)
        assert tip(bare, BRANCH) == theirs and [p.state for p in gh.pulls()] == ["open"]
        assert len(gh.requests_to("PATCH", r"/pulls/\d+$")) == 1  # audit 2's edit, no other
        body = gh.issues()[0].body
        assert f"This audit verified no fix. [#{pull.number}](" in body and "may be stale" in body
        assert ACTIONS_TOKEN not in first.stderr + third.stderr + fourth.stderr
