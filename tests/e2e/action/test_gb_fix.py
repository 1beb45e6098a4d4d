"""`/gb-fix` end to end: real issue_comment payloads, the three stages run as gbbot-fix.yml runs
them (authorize → fix in a checkout with no token → push from a fresh checkout), real torch, real
git pushing over smart HTTP to a remote that checks the token on every request, and the GitHub
stand-in for permissions, reactions and replies."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.action_run import run_action
from tests.conftest import git
from tests.gb_fix_world import (
    ADMIN,
    BRANCH,
    PR,
    READER,
    FixedOnce,
    World,
    artifact_copy,
    copied,
    envdump,
    fixed_once,
    make_repo,
)
from tests.github_standin import ACTIONS_BOT, ACTIONS_TOKEN


@pytest.fixture(scope="module")
def once(tmp_path_factory: pytest.TempPathFactory) -> FixedOnce:
    """The PR and one fix job for it, shared by the module's tests (each gets its own copy)."""
    return fixed_once(tmp_path_factory.mktemp("gb-fix"), make_repo)


@pytest.fixture
def world(once: FixedOnce, tmp_path: Path) -> Iterator[World]:
    with copied(once, tmp_path) as fresh:
        yield fresh


@pytest.fixture
def artifact(once: FixedOnce, tmp_path: Path) -> Path:
    """The fix job's artifact for a plain `/gb-fix` on the PR's head (a copy to tamper with)."""
    return artifact_copy(once, tmp_path)


def breaks_at(world: World, sha: str) -> list[dict]:
    """`gbbot check` on a checkout of `sha`: the breaks it finds."""
    tree = world.checkout(sha, f"recheck-{sha[:7]}")
    subprocess.run(
        [sys.executable, "-m", "gbbot", "check", "--json", "r.json"],
        cwd=tree,
        capture_output=True,
        check=False,
        timeout=600,
    )
    report = json.loads((tree / "r.json").read_text())
    return [b for e in report["entrypoints"] for b in e["breaks"]]


def test_an_admins_command_pushes_one_verified_commit_that_removes_the_break(
    world: World, once: FixedOnce, artifact: Path
) -> None:
    payload = world.comment("/gb-fix\nplease")
    allowed = world.authorize(payload)
    assert allowed.outputs["allowed"] == "true" and allowed.outputs["head-sha"] == world.head
    assert allowed.outputs["head-ref"] == BRANCH and allowed.outputs["pr-number"] == str(PR)
    assert allowed.outputs["base-sha"] == world.base
    assert world.reactions(payload) == ["eyes"]

    env = envdump(once.artifact)  # the fix job (the module's): the PR's code saw no token
    assert not any(ACTIONS_TOKEN in value for value in env.values())
    assert not [name for name in env if "TOKEN" in name or name.startswith("INPUT_")]

    pushed = world.push(payload, world.head, artifact)
    tip = world.branch_tip()
    assert pushed.outputs["fix-commit"] == tip != world.head
    assert git(world.bare, "rev-parse", f"{tip}^") == world.head  # on top of the pinned head, not forced
    assert git(world.bare, "diff", "--name-only", world.head, tip).split() == ["model.py"]
    assert git(world.bare, "log", "-1", "--format=%an <%ae>|%s", tip) == (
        "gbbot <gbbot@users.noreply.github.com>|gbbot: fix 1 graph break"
    )
    at_head = json.loads((artifact / "report.json").read_text())
    assert [b["file"] for e in at_head["entrypoints"] for b in e["breaks"]] == ["model.py"]
    assert breaks_at(world, tip) == []
    assert world.reactions(payload) == ["eyes", "rocket"]
    (reply,) = world.replies()
    assert f"/commit/{tip}" in reply and "model.py:6" in reply and "print" in reply
    assert ACTIONS_TOKEN not in world.logs()


def test_a_readers_command_is_refused_and_nothing_runs(world: World) -> None:
    payload = world.comment("/gb-fix", login=READER)
    done = world.authorize(payload)
    assert done.outputs == {"allowed": "false"}
    assert world.reactions(payload) == ["confused"]
    (reply,) = world.replies()
    assert "may not ask for fix commits" in reply and "write" in reply
    assert world.remote.pushes == 0 and world.gh.requests_to("GET", r"/pulls/7$") == []


@pytest.mark.parametrize("status", [500, 404])
def test_a_permission_api_failure_means_no(world: World, status: int) -> None:
    # GitHub's 503s may carry Retry-After: here 0, so gbbot's 5 tries take no back-off time
    world.gh.fail_next("GET", r"/collaborators/.*/permission$", status, headers={"Retry-After": "0"}, times=10)
    payload = world.comment("/gb-fix")
    assert world.authorize(payload).outputs == {"allowed": "false"}
    assert world.reactions(payload) == ["confused"] and world.branch_tip() == world.head
    assert world.remote.pushes == 0


@pytest.mark.parametrize(
    ("body", "login", "user_type", "action"),
    [
        ("/gb-fix", ADMIN, "User", "edited"),
        ("please\n/gb-fix", ADMIN, "User", "created"),
        ("/gb-fix", ACTIONS_BOT, "Bot", "created"),
        ("/gb-fix", "renovate", "Bot", "created"),
        ("/gb-fixes", ADMIN, "User", "created"),
    ],
    ids=["edited", "second-line", "own-bot", "other-bot", "not-the-command"],
)
def test_what_is_not_a_new_command_by_a_person_is_ignored(
    world: World, body: str, login: str, user_type: str, action: str
) -> None:
    payload = world.comment(body, login=login, user_type=user_type, action=action)
    done = world.authorize(payload)
    assert done.outputs == {"allowed": "false"} and "/gb-fix: ignored" in done.stderr
    assert world.reactions(payload) == [] and world.replies() == []
    assert [r for r in world.gh.requests if r.method != "GET" or "permission" in r.path] == []


def test_help_and_unknown_sub_commands_get_the_usage(world: World) -> None:
    for body in ("/gb-fix help", "/gb-fix frobnicate"):
        assert world.authorize(world.comment(body)).outputs == {"allowed": "false"}
    first, second = world.replies()
    assert "`/gb-fix dry-run`" in first and "`frobnicate` is not a sub-command" in second


def test_a_head_that_moved_after_the_command_gets_no_push_and_a_reply(world: World, artifact: Path) -> None:
    payload = world.comment("/gb-fix")
    world.authorize(payload)
    author = world.checkout(world.head, "late-author")
    (author / "notes.txt").write_text("a later commit\n")
    git(author, "add", "-A")
    git(author, "commit", "-qm", "later")
    moved = git(author, "rev-parse", "HEAD")
    git(author, "-c", f"http.extraheader={basic_header()}", "push", "-q", world.url, f"HEAD:{BRANCH}")
    world.gh.state.pulls[PR].head_sha = moved
    pushes = world.remote.pushes
    world.push(payload, world.head, artifact)
    assert world.branch_tip() == moved and world.remote.pushes == pushes
    (reply,) = world.replies()
    assert "moved" in reply and world.head[:7] in reply and moved[:7] in reply
    assert world.reactions(payload)[-1] == "confused"


def test_a_role_lost_between_authorize_and_push_gets_no_push(world: World, artifact: Path) -> None:
    """The push stage asks for the commenter's role again: one taken away after the command
    (or an authorize output forged into the push job) pushes nothing."""
    payload = world.comment("/gb-fix")
    assert world.authorize(payload).outputs["allowed"] == "true"
    world.gh.set_permission(ADMIN, "read")
    world.push(payload, world.head, artifact)
    assert world.remote.pushes == 0 and world.branch_tip() == world.head
    (reply,) = world.replies()
    assert f"{ADMIN} may not ask for fix commits here" in reply
    assert world.reactions(payload)[-1] == "confused"


def basic_header() -> str:
    from tests.gb_fix_world import basic

    return basic(ACTIONS_TOKEN)


def test_a_fork_without_maintainer_edits_gets_the_patch_as_a_comment(world: World, artifact: Path) -> None:
    pull = world.gh.state.pulls[PR]
    pull.head_repo_fork, pull.maintainer_can_modify = True, False
    payload = world.comment("/gb-fix")
    world.authorize(payload)
    world.push(payload, world.head, artifact)
    assert world.remote.pushes == 0 and world.branch_tip() == world.head
    (reply,) = world.replies()
    assert "does not allow edits from maintainers" in reply
    assert_applicable_patch(world, reply)


def test_dry_run_posts_the_patch_and_pushes_nothing(world: World, artifact: Path) -> None:
    payload = world.comment("/gb-fix dry-run")
    assert world.authorize(payload).outputs["args"] == "dry-run"
    world.push(payload, world.head, artifact)  # the fix job does the same for a dry run
    assert world.remote.pushes == 0 and world.branch_tip() == world.head
    (reply,) = world.replies()
    assert reply.count("<details>") == 1 and "dry run" in reply
    assert world.reactions(payload) == ["eyes", "rocket"]
    assert_applicable_patch(world, reply)


def assert_applicable_patch(world: World, reply: str) -> None:
    """The diff in the comment applies with the `git apply` it names, and fixes the print."""
    patch = reply.split("```diff\n", 1)[1].split("```\n", 1)[0]
    tree = world.checkout(world.head, f"apply-{len(world.runs)}")
    (tree / "gbbot-fix.patch").write_text(patch)
    git(tree, "apply", "gbbot-fix.patch")
    assert "if not torch.compiler.is_compiling():" in (tree / "model.py").read_text()
    assert "git apply gbbot-fix.patch" in reply


GITHUB_FILE = (
    "diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml\n--- a/.github/workflows/ci.yml\n"
    "+++ b/.github/workflows/ci.yml\n@@ -1 +1 @@\n-on: push\n+on: [push, pull_request_target]\n"
)
SYMLINK = (
    "diff --git a/evil.py b/evil.py\nnew file mode 120000\n--- /dev/null\n+++ b/evil.py\n@@ -0,0 +1 @@\n+/etc/passwd\n"
)


@pytest.mark.parametrize(
    ("tamper", "why"),
    [
        (
            lambda p: p.replace("+        print(", "+        __import__('os').system('id'); print("),
            "the patch differs from what gbbot's recipes make of the pinned source",
        ),
        (lambda p: p + GITHUB_FILE, ".github/workflows/ci.yml: gbbot never changes files under .github/"),
        (lambda p: p + SYMLINK, "the patch creates a file (evil.py)"),
        (lambda p: p.replace("model.py", "envdump.py"), "envdump.py: no verified fix names this file"),
    ],
    ids=["hunk-edited", "github-file", "symlink", "other-file"],
)
def test_a_tampered_patch_artifact_is_refused_and_nothing_is_pushed(world: World, artifact: Path, tamper, why) -> None:
    patch = artifact / "fix.patch"
    genuine = patch.read_text()
    assert "+        print(" in genuine
    patch.write_text(tamper(genuine))
    payload = world.comment("/gb-fix")
    world.authorize(payload)
    world.push(payload, world.head, artifact)
    assert world.remote.pushes == 0 and world.branch_tip() == world.head
    (reply,) = world.replies()
    assert "refused" in reply and "<details>" not in reply
    assert why in world.runs[-1].stderr
    assert world.reactions(payload)[-1] == "confused"


def test_a_tampered_report_whose_hunks_match_the_tampered_patch_is_still_refused(world: World, artifact: Path) -> None:
    """Both files of the artifact agree on an edited hunk: the recipe, re-run on the pinned
    source in the push job, does not make it."""
    evil = "__import__('os').system('id'); print("
    for name in ("fix.patch", "report.json"):
        path = artifact / name
        path.write_text(path.read_text().replace("        print(", f"        {evil}"))
    payload = world.comment("/gb-fix")
    world.authorize(payload)
    world.push(payload, world.head, artifact)
    assert world.remote.pushes == 0 and world.branch_tip() == world.head
    assert "its hunks are not what the recipe makes" in world.runs[-1].stderr


def test_issue_comment_without_a_stage_runs_nothing_and_says_how_to_set_it_up(tmp_path, github_standin) -> None:
    from tests.action_run import webhook

    done = run_action(tmp_path, tmp_path / "run", github_standin, "issue_comment", webhook("issue_comment.created"), "")
    assert done.code == 0 and "gbbot-fix.yml" in done.stderr and github_standin.requests == []


FORGED = "removes 1 break; outputs equal\n\nCo-authored-by: Mallory <mallory@example.com>\nverified by octocat"


def test_the_commit_and_reply_say_gbbots_words_not_the_artifacts(world: World, artifact: Path) -> None:
    """The fix job's report is the PR's code's to write: its summary (newlines, a trailer) reaches
    neither the commit message nor the reply, which say where verification ran."""
    report_path = artifact / "report.json"
    report = json.loads(report_path.read_text())
    for fix in report["extra"]["fixes"]:
        fix["summary"] = FORGED
    report_path.write_text(json.dumps(report))
    payload = world.comment("/gb-fix")
    world.authorize(payload)
    world.push(payload, world.head, artifact)
    tip = world.branch_tip()
    assert tip != world.head
    message = git(world.bare, "log", "-1", "--format=%B", tip)
    (reply,) = world.replies()
    for text in (message, reply):
        assert "Co-authored-by" not in text and "Mallory" not in text and "octocat" not in text
        assert "verification ran in the job that ran the PR's code" in text
    assert "model.py:6" in message
    assert git(world.bare, "log", "-1", "--format=%(trailers)", tip) == ""


def test_a_fix_on_a_line_the_pr_did_not_change_is_refused(world: World, artifact: Path) -> None:
    """The artifact's fix is genuine, but the API says the PR changed other lines only (a break
    one call deeper, in a file the PR never touched): nothing is pushed."""
    world.gh.set_pull_files(PR, {"model.py": "@@ -1,1 +1,2 @@\n import torch\n+import os\n"})
    payload = world.comment("/gb-fix")
    world.authorize(payload)
    world.push(payload, world.head, artifact)
    assert world.remote.pushes == 0 and world.branch_tip() == world.head
    assert "the fix at model.py:6 is not on a line the pull request changed" in world.runs[-1].stderr
    assert world.reactions(payload)[-1] == "confused"
