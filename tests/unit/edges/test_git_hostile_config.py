"""gbbot's git calls after PR code has planted git settings that run programs (gbbot/edges/git.py).

The planting is tests/red_team.py's, as an entrypoint would do it: core.fsmonitor, core.pager,
diff.external, core.sshCommand, a clean/smudge filter and a textconv driver named by
info/attributes, an include.path with more of the same, and hooks. Then every git-layer call gbbot
makes after its entrypoints ran is made, with a token in gbbot's environment: none of the planted
programs runs, and git itself is started without the token or the caller's GIT_* variables."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gbbot.core.errors import GitError
from gbbot.edges import git as gitlayer
from gbbot.fix.commit import commit as fix_commit
from tests.cli_helpers import write
from tests.conftest import git
from tests.red_team import ATTACK

TOKEN = "canary_00112233445566ff"


def plant(repo: Path, log: Path) -> None:
    (repo.parent / "attack.py").write_text(ATTACK)
    subprocess.run(
        [sys.executable, str(repo.parent / "attack.py"), str(repo.parent / "found.json"), "--plant-git-hooks", str(log)],
        cwd=repo, check=True,
    )  # fmt: skip


@pytest.fixture
def planted(in_git_dir: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, str]:
    """A repository pinned (as before an entrypoint), then planted; a token in the environment."""
    repo = in_git_dir
    write(repo, {"model.py": "x = 1\n", "other.py": "".join(f"line {i}\n" for i in range(30))})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    gitlayer.pin(repo)
    # What a PR leaves in the tree: an edit, a rename, a new file; then the planting.
    write(repo, {"model.py": "x = 2\n", "new.py": "y = 1\n"})
    git(repo, "mv", "other.py", "renamed.py")
    log = repo.parent / "hook.log"
    plant(repo, log)
    monkeypatch.setenv("INPUT_TOKEN", TOKEN)
    monkeypatch.setenv("GIT_DIR", str(repo.parent / "elsewhere"))  # a caller's GIT_* is not git's
    return repo, log, base


def every_git_call(repo: Path, base: str) -> None:
    assert gitlayer.head_sha(repo) == base
    assert gitlayer.toplevel(repo) == repo.resolve()
    assert "model.py" in gitlayer.changed_paths(repo)
    assert gitlayer.renames(repo, base) == {"other.py": "renamed.py"}
    assert ("M", "model.py") in gitlayer.name_status(repo, base)
    assert "new.py" in gitlayer.untracked(repo)
    assert "new.py" in (gitlayer.listed_files(repo) or ())
    gitlayer.ignored_entries(repo)
    assert "model.py" in gitlayer.tree_files(repo, base)
    assert gitlayer.merge_base(repo, "main") == base
    with gitlayer.worktree(repo, base) as tree:
        assert (tree / "model.py").read_text() == "x = 1\n"
    made = gitlayer.commit_files(repo, base, {"data.txt": ("100644", b"data\n")}, "data")
    assert gitlayer.tree_entries(repo, made, ["data.txt"])["data.txt"][0] == "100644"
    gitlayer.recent_commits(repo, made, 3)
    fix_commit(repo, ["model.py"], "gbbot: fix\n", None)


def test_no_planted_program_runs_in_any_git_call_gbbot_makes(planted):
    repo, log, base = planted
    every_git_call(repo, base)
    assert not log.exists(), log.read_text()[:2000]


def test_the_planted_config_is_restored_and_said(planted, capsys):
    repo, _, _ = planted
    assert "fsmonitor" in (repo / ".git" / "config").read_text()
    gitlayer.head_sha(repo)
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()
    assert not (repo / ".git" / "info" / "attributes").exists()
    assert "restored" in capsys.readouterr().err


def test_git_starts_without_the_token_or_the_callers_git_variables(planted, tmp_path, monkeypatch):
    repo, _, base = planted
    shim = tmp_path / "bin"
    shim.mkdir()
    seen = tmp_path / "git-env.txt"
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout.strip()
    (shim / "git").write_text(f'#!/bin/sh\nenv >> {seen}\nexec {real} "$@"\n')
    (shim / "git").chmod(0o755)
    monkeypatch.setattr(gitlayer, "_GIT", [str(shim / "git")])  # the shim is the git found at start
    monkeypatch.setenv("GIT_SSH_COMMAND", "touch /tmp/never")
    assert gitlayer.head_sha(repo) == base
    env = seen.read_text()
    assert TOKEN not in env
    assert "GIT_DIR=" not in env and "GIT_SSH_COMMAND=" not in env and "INPUT_TOKEN" not in env


def test_a_user_gitconfig_changed_after_gbbot_started_is_not_read(in_git_dir, tmp_path, monkeypatch):
    """PR code can write ~/.gitconfig too; gbbot reads the copy it made at its first git call."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Someone\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    gitlayer.pin(in_git_dir)
    log = tmp_path / "global.log"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\necho ran >> {log}\n")
    hook.chmod(0o755)
    (home / ".gitconfig").write_text(f"[core]\n\tfsmonitor = {hook}\n[include]\n\tpath = {hook}\n")
    write(in_git_dir, {"a.py": "1\n"})
    gitlayer.changed_paths(in_git_dir)
    _, out, _ = gitlayer.run(in_git_dir, "config", "--global", "user.name", check=False)
    assert out.decode().strip() == "Someone"
    assert not log.exists()


def test_a_git_planted_on_path_after_gbbot_started_never_runs(planted, tmp_path, monkeypatch):
    """PR code writes an executable `git` into a directory of PATH (the image venv's bin/, ahead
    of /usr/bin): gbbot runs the git it found at start, by its absolute path."""
    repo, _, base = planted
    bin_dir = tmp_path / "venv-bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(gitlayer, "_GIT", [])
    gitlayer.pin(repo)  # gbbot's start, before any entrypoint
    ran = tmp_path / "planted-git-ran"
    (bin_dir / "git").write_text(f"#!/bin/sh\nenv > {ran}\nexit 1\n")
    (bin_dir / "git").chmod(0o755)
    assert gitlayer.head_sha(repo) == base
    assert not ran.exists()


def test_a_git_planted_before_gbbot_started_where_its_user_can_write_never_runs(planted, tmp_path, monkeypatch):
    """gbbot in the job itself, on a runner that keeps its files: the last run's PR code, as
    gbbot's user, wrote `git` into a directory of PATH that user can write (its virtualenv's bin/,
    ahead of /usr/bin) before this gbbot started. gbbot runs only a git root alone could have put
    where it is; with none, no git at all."""
    repo, _, base = planted
    bin_dir = tmp_path / "venv-bin"
    bin_dir.mkdir()
    ran = tmp_path / "planted-git-ran"
    (bin_dir / "git").write_text(f"#!/bin/sh\nenv > {ran}\nexit 1\n")
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(gitlayer, "_GIT", [])
    gitlayer.pin(repo)  # gbbot's start
    assert gitlayer.head_sha(repo) == base and not ran.exists()
    assert gitlayer.git_program() is not None and not gitlayer.git_program().startswith(str(tmp_path))
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(gitlayer, "SYSTEM_DIRECTORIES", ())
    monkeypatch.setattr(gitlayer, "_GIT", [])
    with pytest.raises(GitError, match="no git in a directory that only root can write"):
        gitlayer.head_sha(repo)
    assert not ran.exists()


def test_an_http_proxy_appended_to_gbbots_copy_of_the_user_config_is_not_read(in_git_dir, tmp_path, monkeypatch):
    """gbbot reads the system and global config from copies it made at start. PR code appends
    `http.proxy` to every copy it can find (the temporary directory, and the files git was told to
    read): the push would go through its proxy, Authorization header and all."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Someone\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    gitlayer.pin(in_git_dir)
    copies = [p for p in Path(tempfile.gettempdir()).glob("gbbot-git-*/config-*/*") if p.is_file()]
    _, out, _ = gitlayer.run(in_git_dir, "config", "--show-origin", "--global", "user.name")
    copies.append(Path(out.decode().split("\t")[0].removeprefix("file:")))
    for copy in copies:
        try:
            with open(copy, "a") as handle:
                handle.write("\n[http]\n\tproxy = http://127.0.0.1:9/\n")
        except OSError:
            pass  # sealed: nobody may write it
    code, out, _ = gitlayer.run(in_git_dir, "config", "--get", "http.proxy", check=False)
    assert (code, out) == (1, b"")
