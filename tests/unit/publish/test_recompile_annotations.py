"""Recompilations in the check run (annotations through real PyGithub and the GitHub stand-in, and
the conclusion under the recompilation policy) and in the workflow-command fallback: after the
breaks, limit first, info-only frames left out."""

from __future__ import annotations

import pytest

from gbbot.analysis import recompile
from gbbot.analysis.policy import Policy
from gbbot.core.model import Status
from gbbot.publish.client import github_client
from gbbot.publish.comment import CommentMode
from gbbot.publish.content import Texts
from gbbot.publish.retry import Retries
from gbbot.publish.sink import Destination, Published, publish
from gbbot.render.markdown import Options
from tests.builders import AT_LIMIT, DTYPE, HEAD_SHA, INFO, RECOMPILE_DOC, graph_break, recompiled_report
from tests.github_standin import ACTIONS_TOKEN, FORK_PR_TOKEN, GitHubStandin

PR = 2
LIMIT_TITLE = "Recompiled 8× (int argument) — hit the recompile limit: runs eagerly"


@pytest.fixture
def standin(github_standin: GitHubStandin) -> GitHubStandin:
    github_standin.add_pull(PR, HEAD_SHA)
    return github_standin


def run(
    standin: GitHubStandin,
    result,
    *,
    fail_on: str = "new",
    recompiles: str | None = None,
    token: str = ACTIONS_TOKEN,
    annotate_all: bool = False,
) -> Published:
    where = Destination(
        "octo-org/octo-repo",
        PR,
        HEAD_SHA,
        "",
        "gbbot",
        "gbbot:1:1",
        None,
        CommentMode.OFF,
        Policy.of(fail_on, recompiles),
        annotate_all=annotate_all,
    )
    client = github_client(token, standin.url, seconds_between_writes=0)
    policy = Retries(tries=1, sleep=lambda _s: None, clock=lambda: 0.0)
    return publish(client, Texts(result), Options(pointer="report"), where, policy, lambda _line: None)


def test_recompiled_frames_are_annotated_after_the_breaks_limit_first(standin: GitHubStandin) -> None:
    run(standin, recompiled_report([graph_break(1)]), annotate_all=True)
    (check,) = standin.check_runs()
    shown = [(a["path"], a["start_line"], a["annotation_level"], a["title"]) for a in check.annotations]
    assert shown == [
        ("model/layer_1.py", 11, "failure", "GB0059: Attempted to call function marked as skipped"),
        # Newly at the limit: the default recompilation policy fails it.
        ("model/loops.py", 3, "failure", LIMIT_TITLE),
        # On the base too: shown, not counted (as a persisting break is).
        ("model/loops.py", 27, "notice", "Recompiled 2× (dtype)"),
    ]  # `grow` (automatic dynamic shapes) is not annotated: nothing to fix
    rules = recompile.load_rules()
    assert check.annotations[1]["message"].splitlines() == [
        "New recompilation: repeat compiled 8× and hit the recompile limit",
        rules.limit_cause,
        f"Hint: {rules.limit_advice}",
        "Failing guard (int argument, ×7): n == 1 at line 5: for _ in range(n):",
        "Cause of int_argument.",
        "Hint: Advice for int_argument.",
        "Entrypoints: train-step",
        RECOMPILE_DOC,
    ]
    assert check.annotations[2]["message"].splitlines()[:2] == [
        "Recompilation: scale compiled 2×",
        "Failing guard (dtype, ×1): tensor 'x' dtype mismatch. expected Float, actual Double",
    ]


@pytest.mark.parametrize(
    ("fail_on", "recompiles", "conclusion", "level"),
    [
        ("new", None, "success", "warning"),  # the string form: only a frame newly at the limit fails
        ("new", "new", "failure", "failure"),
        ("new", "limit", "success", "warning"),
        ("none", None, "success", "warning"),
        ("none", "any", "failure", "failure"),  # as `gbbot check` exits with that config
    ],
)
def test_the_conclusion_follows_the_recompilation_policy(
    standin: GitHubStandin, fail_on: str, recompiles: str | None, conclusion: str, level: str
) -> None:
    result = recompiled_report(recompiles=(DTYPE,), persisting=())  # one new dtype problem, no break
    run(standin, result, fail_on=fail_on, recompiles=recompiles)
    (check,) = standin.check_runs()
    assert check.conclusion == conclusion
    assert [(a["annotation_level"], a["title"]) for a in check.annotations] == [(level, "Recompiled 2× (dtype)")]


def test_a_frame_newly_at_the_limit_fails_the_default_policy_and_a_persisting_one_does_not(
    standin: GitHubStandin,
) -> None:
    run(standin, recompiled_report(recompiles=(AT_LIMIT,), persisting=()))
    run(standin, recompiled_report(recompiles=(AT_LIMIT,), persisting=(AT_LIMIT,)), annotate_all=True)
    first, second = standin.check_runs()
    assert (first.conclusion, first.annotations[0]["annotation_level"]) == ("failure", "failure")
    assert (second.conclusion, second.annotations[0]["annotation_level"]) == ("success", "notice")
    assert second.annotations[0]["message"].startswith("Recompilation: repeat compiled 8×")


def test_an_entrypoint_that_did_not_run_still_fails_unless_fail_on_is_none(standin: GitHubStandin) -> None:
    from dataclasses import replace

    result = recompiled_report(recompiles=(), persisting=())
    crashed = replace(result, entrypoints=(replace(result.entrypoints[0], status=Status.CRASHED),))
    run(standin, crashed, fail_on="new", recompiles="none")
    run(standin, crashed, fail_on="none")
    assert [c.conclusion for c in standin.check_runs()] == ["failure", "success"]


def test_the_fallback_annotates_new_recompilations_after_the_breaks(standin: GitHubStandin) -> None:
    published = run(standin, recompiled_report([graph_break(1)]), token=FORK_PR_TOKEN)
    assert standin.check_runs() == []
    commands = published.fallback.commands
    assert len(commands) == 2  # the persisting dtype frame and the info-only one are not new problems
    assert commands[0].startswith("::error file=model/layer_1.py,line=11,")
    assert commands[1].startswith(
        "::error file=model/loops.py,line=3,title=Recompiled 8× (int argument) — hit the recompile limit%3A runs eagerly"
        "::New recompilation: repeat compiled 8× and hit the recompile limit%0A"
    )
    assert "%0AFailing guard (int argument, ×7): n == 1 at line 5: for _ in range(n):%0A" in commands[1]
    assert "first new graph breaks and recompilations are shown" in published.fallback.summary


def test_the_fallback_counts_recompilations_against_the_runners_cap_and_lists_the_rest(
    standin: GitHubStandin,
) -> None:
    breaks = [graph_break(i) for i in range(10)]
    published = run(standin, recompiled_report(breaks), token=FORK_PR_TOKEN)
    assert len(published.fallback.commands) == 10 and all("loops.py" not in c for c in published.fallback.commands)
    assert "#### 1 more new graph breaks and recompilations" in published.fallback.summary
    assert (
        "| recompile/limit, recompile/int\\_argument | Recompiled 8× (int argument) — hit the recompile limit: runs "
        "eagerly | `model/loops.py:3` | |"
    ) in published.fallback.summary


def test_info_only_recompilations_are_not_annotated_anywhere(standin: GitHubStandin) -> None:
    result = recompiled_report(recompiles=(INFO,), persisting=())
    assert run(standin, result, token=FORK_PR_TOKEN).fallback.commands == ()
    run(standin, result, recompiles="any")
    (check,) = standin.check_runs()
    assert (check.conclusion, check.annotations) == ("success", [])
