"""The git layer `gbbot diff` stands on (gbbot/edges/git.py), on real repositories in temp dirs:
merge-base, renames, changed paths, and the temporary base worktree that must be gone after
success, failure and interruption. (`gbbot diff` run whole: tests/e2e/test_diff_git.py.)"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from gbbot.core.errors import GitError
from gbbot.edges import git as gitlayer
from tests.cli_helpers import write
from tests.conftest import git


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


# --- merge-base and history ----------------------------------------------------------------


def test_merge_base_is_where_the_branch_left(in_git_dir):
    fork = commit(in_git_dir, {"a.txt": "1\n"}, "fork point")
    git(in_git_dir, "checkout", "-q", "-b", "feature")
    commit(in_git_dir, {"b.txt": "2\n"}, "pr work")
    git(in_git_dir, "checkout", "-q", "main")
    commit(in_git_dir, {"c.txt": "3\n"}, "main moves on")
    git(in_git_dir, "checkout", "-q", "feature")
    assert gitlayer.merge_base(in_git_dir, "main") == fork


def test_unrelated_histories_have_no_merge_base(in_git_dir):
    commit(in_git_dir, {"a.txt": "1\n"}, "one")
    git(in_git_dir, "checkout", "-q", "--orphan", "other")
    commit(in_git_dir, {"b.txt": "2\n"}, "unrelated")
    with pytest.raises(GitError, match="no common history"):
        gitlayer.merge_base(in_git_dir, "main")


# --- renames and the state of the working tree ---------------------------------------------


def test_renames_seen_by_git_between_a_commit_and_the_working_tree(in_git_dir):
    body = "".join(f"line {i}\n" for i in range(40))
    base = commit(in_git_dir, {"pkg/old name.py": body, "keep.py": "x = 1\n"}, "base")
    git(in_git_dir, "mv", "pkg/old name.py", "pkg/new.py")
    (in_git_dir / "pkg/new.py").write_text(body + "one more line\n")  # renamed and edited
    git(in_git_dir, "add", "-A")
    assert gitlayer.renames(in_git_dir, base) == {"pkg/old name.py": "pkg/new.py"}
    git(in_git_dir, "commit", "-q", "-m", "rename")
    assert gitlayer.renames(in_git_dir, base, "HEAD") == {"pkg/old name.py": "pkg/new.py"}


def test_changed_paths_lists_uncommitted_and_untracked_files(in_git_dir):
    commit(in_git_dir, {"a.py": "1\n", "b.py": "2\n"}, "base")
    assert gitlayer.changed_paths(in_git_dir) == ()
    (in_git_dir / "a.py").write_text("changed\n")
    (in_git_dir / "new.py").write_text("new\n")
    git(in_git_dir, "mv", "b.py", "c.py")
    assert sorted(gitlayer.changed_paths(in_git_dir)) == ["a.py", "c.py", "new.py"]


# --- the base worktree ---------------------------------------------------------------------


@pytest.fixture
def two_commits(in_git_dir) -> tuple[Path, str]:
    base = commit(in_git_dir, {"f.txt": "base\n"}, "base")
    commit(in_git_dir, {"f.txt": "head\n"}, "head")
    (in_git_dir / "f.txt").write_text("uncommitted\n")
    return in_git_dir, base


@pytest.fixture
def scratch(tmp_path) -> Path:
    """Where the worktree goes (its parent), to see that nothing is left there."""
    path = tmp_path / "scratch"
    path.mkdir()
    return path


def assert_clean(repo: Path, scratch: Path) -> None:
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert not list(scratch.iterdir())
    assert (repo / "f.txt").read_text() == "uncommitted\n"  # the user's tree untouched


def test_worktree_holds_the_base_and_is_removed_after_success(two_commits, scratch):
    repo, base = two_commits
    with gitlayer.worktree(repo, base, parent=scratch) as tree:
        assert (tree / "f.txt").read_text() == "base\n"
        assert gitlayer.head_sha(tree) == base
    assert_clean(repo, scratch)


@pytest.mark.parametrize("error", [RuntimeError("a bug"), KeyboardInterrupt()])
def test_worktree_is_removed_when_the_run_fails_or_is_interrupted(two_commits, scratch, error):
    repo, base = two_commits
    with pytest.raises(type(error)), gitlayer.worktree(repo, base, parent=scratch):
        raise error
    assert_clean(repo, scratch)


def test_sigterm_inside_the_worktree_unwinds_and_removes_it(two_commits, scratch):
    repo, base = two_commits
    with pytest.raises(KeyboardInterrupt), gitlayer.worktree(repo, base, parent=scratch):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # interrupted long before this ends
    assert_clean(repo, scratch)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is put back


def test_a_post_checkout_hook_does_not_run_for_the_base(two_commits, tmp_path, scratch):
    repo, base = two_commits
    hook = repo / ".git/hooks/post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path}/hook-ran\n")
    hook.chmod(0o755)
    with gitlayer.worktree(repo, base, parent=scratch):
        pass
    assert not (tmp_path / "hook-ran").exists()
