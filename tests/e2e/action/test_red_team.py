"""The red-team PR for the token (gbbot/edges/vault.py) and the repository's git config
(gbbot/edges/git.py), through the whole pull_request job: a same-repository PR with `autofix: true`
whose entrypoint runs tests/red_team.py's attack — every /proc/*/environ and cmdline it can read,
gbbot's memory and file descriptors — and plants git settings and hooks that run a program. Then
gbbot diffs against the base, verifies a fix, pushes it over smart HTTP to a remote that checks the
token, and publishes to the GitHub stand-in. No token value appears in anything the PR's code read
or could read on disk, and no planted program ever ran."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from tests.action_run import pull_request_event, run_action
from tests.conftest import git
from tests.e2e.action.test_autofix import BRANCH, PR, WITH_PRINT
from tests.gb_fix_world import checkout
from tests.git_http import GitHttpRemote
from tests.github_standin import ACTIONS_TOKEN
from tests.github_standin.fixtures import checked_standin
from tests.red_team import ATTACK, leaked
from tests.step_project import CONFIG, MODEL, author_repository

ATTACKING_STEP = WITH_PRINT.replace(
    "def step():\n",
    "def step():\n"
    "    import os, subprocess, sys\n"
    "    out = os.path.join(os.environ['RED_TEAM'], f'found-{os.getpid()}.json')\n"
    "    hooks = os.path.join(os.environ['RED_TEAM'], 'hooks.log')\n"
    "    subprocess.run([sys.executable, 'attack.py', out, '--plant-git-hooks', hooks])\n",
)


def files_under(*roots: Path) -> str:
    texts = []
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink() and "/.git/objects/" not in str(path):
                texts.append(path.read_bytes().decode("latin-1"))
    return "\n".join(texts)


def test_a_hostile_pr_reads_no_token_and_runs_nothing_in_gbbots_git_calls(tmp_path: Path) -> None:
    red_team = tmp_path / "red-team"
    red_team.mkdir()
    config = CONFIG + "autofix: true\n"
    bare, work, base = author_repository(tmp_path, {".gbbot.yml": config, "model.py": MODEL})
    git(work, "checkout", "-qb", BRANCH)
    (work / "model.py").write_text(ATTACKING_STEP)
    (work / "attack.py").write_text(ATTACK)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "a print, and an attack")
    head = git(work, "rev-parse", "HEAD")
    git(work, "push", "-q", str(bare), "main", BRANCH)
    canaries = {name: f"canary_{secrets.token_hex(8)}" for name in (
        "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "GITHUB_TOKEN", "DEPLOY_KEY", "NPM_AUTH",
    )}  # fmt: skip
    with GitHttpRemote(bare.parent, ACTIONS_TOKEN) as remote, checked_standin() as gh:
        gh.set_clone_url(remote.repo_url("octo-repo.git"))
        gh.add_pull(PR, head, head_ref=BRANCH)
        workspace = checkout(remote.repo_url("octo-repo.git"), tmp_path / "checkout", head)
        event = pull_request_event(PR, head, base)
        # the workflow (never the PR's config) hands the attack its output directory
        extra = {**canaries, "RED_TEAM": str(red_team), "GBBOT_PASS_ENV": "RED_TEAM"}
        done = run_action(workspace, tmp_path / "run", gh, "pull_request", event, ACTIONS_TOKEN, extra, jobs="1")
        comments = gh.comments(PR)
        tip = git(bare, "rev-parse", f"refs/heads/{BRANCH}")
    assert done.code == 1, done.stderr  # fail_on: new; the job itself went through
    found = [json.loads(p.read_text()) for p in sorted(red_team.glob("found-*.json"))]
    assert len(found) >= 2, done.stderr  # the head run and fix verification's reruns attacked
    assert all(f["gbbot_pid"] > 1 for f in found)
    # Nothing the PR's code read holds a token: not the environ or cmdline of any process, not
    # gbbot's memory or descriptors (refused), not the hooks' log (no hook ran).
    tokens = [ACTIONS_TOKEN, *canaries.values()]
    read = [json.dumps({k: f[k] for k in ("environ", "cmdline", "fd", "mem")}) for f in found]
    assert leaked(tokens, *read) == []
    assert all(f"/proc/{f['gbbot_pid']}/mem" in f["refused"] for f in found)
    assert not (red_team / "hooks.log").exists(), (red_team / "hooks.log").read_text()[:3000]
    # Nor anything gbbot left on disk where the PR's code (or a later step) could read it.
    assert leaked(tokens, files_under(workspace, tmp_path / "run")) == []
    assert leaked(tokens, done.stdout + done.stderr) == []
    # And the job did its work through the planted config: pushed the fix, published the comment.
    assert remote.pushes == 1 and tip != head and git(bare, "rev-parse", f"{tip}^") == head
    assert len(comments) == 1 and "New graph breaks" in comments[0].body
    assert "restored" in done.stderr  # the planted .git/config was put back, and gbbot said so


@pytest.fixture(autouse=True)
def _no_stray_hook_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
