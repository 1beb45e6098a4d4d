"""Verified fixes (from `gbbot fix`, carried in the report) as one review of ```suggestion
comments on the lines the PR changed: at most 30, posted once, against the stand-in (which refuses
a comment outside the diff with GitHub's 422)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gbbot.analysis import report as report_io
from gbbot.core import fixes as fix_result
from gbbot.core.fixes import Hunk
from gbbot.publish import review
from tests.builders import HEAD_SHA, graph_break, report
from tests.github_standin import GitHubStandin
from tests.unit.publish.test_pr_sinks import PR, bot_comments, run


def verified(n: int) -> fix_result.FixResult:
    brk = graph_break(n)
    return fix_result.FixResult(
        fingerprint=brk.fingerprint,
        status=fix_result.FixStatus.VERIFIED,
        file=brk.file,
        line=brk.line,
        recipe="print",
        summary="removes 1 break; graphs 2 → 1; outputs equal",
        description="Drops the print <b>@someone</b>.",
        diff=f"-{brk.code}\n",
        hunks=(Hunk(brk.file, brk.line, brk.line, ("pass",)),),
    )


def with_fixes(breaks, fixes):
    made = report(breaks, new=breaks)
    made = replace(made, fixes=tuple(fixes))
    report_io.validate(report_io.to_json(made))  # what workflow_run would accept
    return made


def patch_adding(lines: list[int]) -> str:
    """A patch whose head side adds exactly `lines` (each after one context line)."""
    out = []
    for line in lines:
        out += [f"@@ -{line - 1},1 +{line - 1},2 @@", " context", f"+added {line}"]
    return "\n".join(out)


@pytest.fixture
def standin(github_standin: GitHubStandin) -> GitHubStandin:
    github_standin.add_pull(PR, HEAD_SHA)
    return github_standin


def test_added_lines_of_a_patch() -> None:
    patch = "@@ -1,3 +1,4 @@\n a\n-b\n+B\n+C\n c\n\\ No newline at end of file\n@@ -10,1 +11,2 @@\n x\n+y"
    assert review.added_lines(patch) == {2, 3, 12}


def test_a_verified_fix_in_the_diff_becomes_one_suggestion_posted_once(standin: GitHubStandin) -> None:
    breaks = [graph_break(1), graph_break(2)]
    standin.set_pull_files(PR, {"model/layer_1.py": patch_adding([11])})  # layer_2 is not in the diff
    made = with_fixes(breaks, [verified(1), verified(2)])
    first = run(standin, made)
    assert first.review.posted and first.review.comments == 1
    (posted,) = standin.review_comments(PR)
    assert (posted.path, posted.line, posted.side) == ("model/layer_1.py", 11, "RIGHT")
    assert "```suggestion\npass\n```" in posted.body and "<b>" not in posted.body
    (comment,) = bot_comments(standin)
    assert "Verified fix" in comment.body and comment.body.count("```diff") == 2
    second = run(standin, made)
    assert not second.review.posted
    assert len(standin.reviews(PR)) == 1


def test_at_most_30_suggestions_in_one_review(standin: GitHubStandin) -> None:
    breaks = [graph_break(i) for i in range(7, 7 + 35 * 7, 7)]  # all in model/layer_0.py
    standin.set_pull_files(PR, {"model/layer_0.py": patch_adding([b.line for b in breaks])})
    run(standin, with_fixes(breaks, [verified(i) for i in range(7, 7 + 35 * 7, 7)]))
    (posted,) = standin.reviews(PR)
    assert len(standin.review_comments(PR)) == 30
    assert posted.state == "COMMENTED"


def test_no_verified_fix_no_review(standin: GitHubStandin) -> None:
    published = run(standin, report([graph_break(1)]))
    assert published.review is None and standin.reviews(PR) == []
    assert not [r for r in standin.requests if r.path.endswith("/files")]
