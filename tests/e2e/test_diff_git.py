"""`gbbot diff` run whole on real git repositories (no torch): a shallow clone, no repository,
an unknown ref, a config below the top level, and a base run that times out or is interrupted,
whose worktree must be gone after. (The git layer itself: tests/unit/edges/test_git.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gbbot.analysis import report
from gbbot.core import words
from tests.cli_helpers import gbbot, write
from tests.conftest import git


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def test_a_shallow_clone_without_the_merge_base_says_to_fetch_more(tmp_path):
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    commit(origin, {"a.txt": "1\n"}, "one")
    git(origin, "checkout", "-q", "-b", "feature")
    commit(origin, {"b.txt": "2\n"}, "two")
    git(origin, "checkout", "-q", "main")
    commit(origin, {"c.txt": "3\n"}, "three")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "feature", f"file://{origin}", str(clone))
    write(clone, {".gbbot.yml": "version: 1\nentrypoints: [{name: ok, run: 'true'}]\n"})

    unknown = gbbot(clone, "diff", "--base", "origin/main")
    assert unknown.returncode == 2
    assert "unknown git ref 'origin/main' (this clone is shallow)" in unknown.stderr
    assert "fetch-depth: 0" in unknown.stderr and "git fetch --unshallow" in unknown.stderr

    git(clone, "fetch", "-q", "--depth", "1", "origin", "main:refs/remotes/origin/main")
    shallow = gbbot(clone, "diff", "--base", "origin/main")
    assert shallow.returncode == 2
    assert "no merge-base of 'origin/main' and HEAD: this clone is shallow" in shallow.stderr
    assert "fetch-depth: 0" in shallow.stderr
    assert "Traceback" not in shallow.stderr


def test_outside_a_git_repository_diff_is_a_usage_error(tmp_path):
    write(tmp_path, {".gbbot.yml": "version: 1\nentrypoints: [{name: ok, run: 'true'}]\n"})
    run = gbbot(tmp_path, "diff", "--base", "main", "--root", str(tmp_path))
    assert run.returncode == 2 and "not inside a git repository" in run.stderr


HANGS = """\
    version: 1
    entrypoints:
      - {name: hang, run: "python -c 'import time; time.sleep(120)'", timeout: 1}
"""


def small_repo(repo: Path, config: str) -> None:
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, {".gbbot.yml": config}, "base")
    commit(repo, {}, "head")


def test_a_base_that_times_out_has_no_baseline_and_its_worktree_is_removed(tmp_path):
    repo, scratch, cache = tmp_path / "repo", tmp_path / "scratch", tmp_path / "cache"
    scratch.mkdir()
    small_repo(repo, HANGS)
    run = gbbot(
        repo, "diff", "--base", "main~1", "--cache", str(cache), "--json", str(tmp_path / "r.json"), tmp=scratch
    )
    assert run.returncode == 1, run.stderr  # the head timed out too: not a clean run
    entry = report.load(tmp_path / "r.json").diff.entrypoints[0]
    assert words.say(entry.no_baseline).endswith(": it timed out there")
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert not list(scratch.glob("gbbot-base-*"))
    assert not list(cache.rglob("*.json"))  # a timeout may not happen next time: not cached


def test_an_interrupted_diff_removes_its_worktree(tmp_path):
    repo, scratch = tmp_path / "repo", tmp_path / "scratch"
    scratch.mkdir()
    small_repo(repo, HANGS.replace("timeout: 1", "timeout: 5"))
    process = subprocess.Popen(
        [sys.executable, "-m", "gbbot", "diff", "--base", "main~1", "-q"],
        cwd=repo,
        env={**os.environ, "TMPDIR": str(scratch)},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(2400):  # until the base's entrypoint runs in the worktree
            if list(scratch.glob("gbbot-*/hang/stdout.txt")) and list(scratch.glob("gbbot-base-*/tree/.git")):
                break
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)  # what CI does to a cancelled job
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 143 and "interrupted" in err  # 128 + SIGTERM
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert not list(scratch.iterdir())


def test_a_config_below_the_top_level_uses_the_same_place_on_the_base(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, {"README": "x\n"}, "base without the project directory")
    commit(repo, {"proj/.gbbot.yml": "version: 1\nentrypoints: [{name: ok, run: 'true'}]\n"}, "head")
    # `true` compiles nothing (which fails the default policy): only the base's place is tested.
    run = gbbot(repo / "proj", "diff", "--base", "main~1", "--json", str(tmp_path / "r.json"), "--fail-on", "none")
    assert run.returncode == 0, run.stderr
    entry = report.load(tmp_path / "r.json").diff.entrypoints[0]
    assert "entrypoint not defined there" in words.say(entry.no_baseline)  # the base has no proj/.gbbot.yml


def test_a_ref_that_does_not_exist_is_named_as_such_not_blamed_on_history(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "master")
    commit(repo, {".gbbot.yml": "version: 1\nentrypoints: [{name: ok, run: 'true'}]\n"}, "one")
    run = gbbot(repo, "diff", "--base", "main")
    assert run.returncode == 2
    assert "unknown git ref 'main': no branch, tag or commit has that name here; branches here: master" in run.stderr
    assert "unshallow" not in run.stderr


def test_a_merge_base_that_is_the_head_itself_says_there_is_nothing_to_compare(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    runs = tmp_path / "runs.txt"  # outside the repository: the base's worktree writes here too
    sha = commit(repo, {".gbbot.yml": f"version: 1\nentrypoints: [{{name: ok, run: 'echo ran >> {runs}'}}]\n"}, "one")
    result = gbbot(repo, "diff", "--base", "main", "--markdown", str(tmp_path / "comment.md"))
    note = f"Nothing to compare: the merge-base of main and HEAD is HEAD itself ({sha[:7]})"
    assert note in result.stderr
    assert note.replace("main", "`main`", 1) in (tmp_path / "comment.md").read_text()
    assert runs.read_text() == "ran\n"  # the base, the same commit, did not run again
    # a change in the working tree is something to compare: the base runs
    write(repo, {"new.txt": "x\n"})
    changed = gbbot(repo, "diff", "--base", "main")
    assert "Nothing to compare" not in changed.stderr and runs.read_text() == "ran\n" * 3
