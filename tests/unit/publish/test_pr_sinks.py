"""Publishing a report on a PR, against the GitHub stand-in (real HTTP, OpenAPI-checked requests
and responses) with PyGithub for real: the sticky comment, the check run, the fallback."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import markdown_it
import pytest

from gbbot.analysis.policy import Policy
from gbbot.core import limits
from gbbot.core.model import EntrypointReport, Status
from gbbot.core.words import ALL_FIXED
from gbbot.publish.client import ACTIONS_BOT, github_client
from gbbot.publish.comment import CommentMode, Marker
from gbbot.publish.content import Texts
from gbbot.publish.retry import Retries
from gbbot.publish.sink import Destination, publish
from gbbot.render.markdown import Options
from tests.builders import HEAD_SHA, graph_break, report
from tests.github_standin import ACTIONS_TOKEN, FORK_PR_TOKEN, MAINTAINER_TOKEN, GitHubStandin

PR = 2
POINTER = "📄 The full report is the `gbbot-report` artifact of [this workflow run](https://github.com/octo-org/octo-repo/actions/runs/1)."
COMMENTS = r"/issues/\d+/comments$"


@dataclass
class Recorder:
    """The log lines and the waits of one publish (no real sleeping in these tests)."""

    lines: list[str] = field(default_factory=list)
    sleeps: list[float] = field(default_factory=list)
    now: float = 1_000_000.0

    def retries(self, tries: int = 4) -> Retries:
        return Retries(tries=tries, sleep=self.sleeps.append, clock=lambda: self.now)


@pytest.fixture
def standin(github_standin: GitHubStandin) -> GitHubStandin:
    github_standin.add_pull(PR, HEAD_SHA)
    return github_standin


def run(
    standin: GitHubStandin,
    result,
    *,
    token: str = ACTIONS_TOKEN,
    mode: CommentMode = CommentMode.ALWAYS,
    header: str = "",
    recorder: Recorder | None = None,
    fail_on: str = "new",
    annotate_all: bool = False,
):
    recorder = recorder or Recorder()
    target = Destination(
        "octo-org/octo-repo",
        PR,
        HEAD_SHA,
        header,
        "gbbot",
        f"{header or 'gbbot'}:1:1",
        None,
        mode,
        Policy.of(fail_on),
        annotate_all=annotate_all,
    )
    client = github_client(token, standin.url, seconds_between_writes=0)
    content = Options(pointer=POINTER)  # as the action does: the fixes come with the report
    return publish(client, Texts(result), content, target, recorder.retries(), recorder.lines.append)


def bot_comments(standin: GitHubStandin) -> list:
    return [c for c in standin.comments(PR) if c.login == ACTIONS_BOT]


def writes(standin: GitHubStandin, path: str = COMMENTS) -> list[str]:
    return [r.method for r in standin.requests if r.method in ("POST", "PATCH") and re.search(path, r.path)]


# --- the sticky comment ------------------------------------------------------------------------


def test_first_run_creates_one_comment_and_the_second_edits_it(standin: GitHubStandin) -> None:
    first = run(standin, report([graph_break(1)], new=[graph_break(1)]))
    assert first.comment.action.value == "created" and first.fallback is None
    second = run(standin, report([graph_break(1), graph_break(2)], new=[graph_break(1), graph_break(2)]))
    assert second.comment.action.value == "updated"
    comments = bot_comments(standin)
    assert len(comments) == 1
    assert "`model/layer_2.py:12`" in comments[0].body
    assert writes(standin, r"/issues/") == ["POST", "PATCH"]


def test_a_marker_in_someone_elses_or_a_minimized_comment_is_not_touched(standin: GitHubStandin) -> None:
    planted = f"{Marker('gbbot', True, '0' * 16)}\nI copied the bot's marker"
    theirs = standin.add_comment(PR, planted, "mallory")
    hidden = standin.add_comment(PR, planted, ACTIONS_BOT, minimized=True)
    run(standin, report([graph_break(1)]))
    comments = {c.id: c for c in standin.comments(PR)}
    assert comments[theirs.id].body == planted and comments[hidden.id].body == planted
    assert len(comments) == 3
    assert writes(standin) == ["POST"]


def test_headers_keep_separate_comments(standin: GitHubStandin) -> None:
    run(standin, report([graph_break(1)]), header="cpu")
    run(standin, report([graph_break(2)]), header="gpu")
    run(standin, report([graph_break(3)]), header="cpu")
    bodies = [c.body for c in bot_comments(standin)]
    assert len(bodies) == 2
    assert "header=cpu" in bodies[0] and "layer_3.py" in bodies[0] and "layer_1.py" not in bodies[0]
    assert "header=gpu" in bodies[1]


def test_changes_mode_leaves_an_unchanged_comment_alone(standin: GitHubStandin) -> None:
    nothing_new = report([graph_break(1)], new=[])
    assert run(standin, nothing_new, mode=CommentMode.CHANGES).comment.action.value == "unchanged"
    assert bot_comments(standin) == []  # no news, no comment
    result = report([graph_break(1)], new=[graph_break(1)])
    run(standin, result, mode=CommentMode.CHANGES)
    # Same findings on a later commit: only the commit differs, which is not content.
    again = run(standin, replace(result, commit="1" * 40), mode=CommentMode.CHANGES)
    assert again.comment.action.value == "unchanged"
    assert writes(standin) == ["POST"]


def test_when_every_new_break_is_fixed_the_comment_says_so(standin: GitHubStandin) -> None:
    run(standin, report([graph_break(1)], new=[graph_break(1)]), mode=CommentMode.CHANGES)
    fixed = run(standin, report([], new=[], fixed=[graph_break(1)]), mode=CommentMode.CHANGES)
    assert fixed.comment.action.value == "updated"
    (comment,) = bot_comments(standin)
    assert ALL_FIXED in comment.body and "✅ 1 graph break fixed" in comment.body


def test_comment_mode_off_writes_no_comment(standin: GitHubStandin) -> None:
    published = run(standin, report([graph_break(1)]), mode=CommentMode.OFF)
    assert published.comment is None and bot_comments(standin) == []
    assert published.check_run is not None


def test_the_login_is_read_from_get_user_when_the_token_may(standin: GitHubStandin) -> None:
    """A GitHub App or personal token (here: a maintainer's) may read /user; its comments are found
    by that login. (A PAT may not create check runs: 403, so the fallback follows.)"""
    run(standin, report([graph_break(1)]), token=MAINTAINER_TOKEN)
    run(standin, report([graph_break(2)]), token=MAINTAINER_TOKEN)
    assert [c.login for c in standin.comments(PR)] == ["maintainer"]


# --- size limits ---------------------------------------------------------------------------------


def test_a_comment_over_the_limit_is_collapsed_not_refused(standin: GitHubStandin) -> None:
    long_text = "A long explanation of this break. " * 120
    breaks = [graph_break(i, explanation=long_text, hints=(long_text,)) for i in range(40)]
    run(standin, report(breaks, new=breaks))
    (comment,) = bot_comments(standin)
    assert len(comment.body) <= limits.COMMENT_BODY_MAX
    assert "Showing at most" in comment.body and POINTER in comment.body
    assert standin.violations == []


def test_a_comment_that_cannot_be_collapsed_enough_is_cut_with_a_pointer(standin: GitHubStandin) -> None:
    failed = [
        EntrypointReport(f"ep-{i}", Status.FAILED, 1, 1.0, 0, 0, 0, (), error="Traceback line\n" * 4000)
        for i in range(3)
    ]
    result = replace(report([graph_break(1)]), entrypoints=tuple(failed))
    run(standin, result)
    (comment,) = bot_comments(standin)
    assert len(comment.body) <= limits.COMMENT_BODY_MAX
    assert comment.body.endswith(POINTER)
    assert "(truncated)" in comment.body


# --- untrusted text ------------------------------------------------------------------------------


def test_hostile_break_text_is_harmless_in_the_comment(standin: GitHubStandin) -> None:
    hostile = "<script>alert(1)</script> `x` ``` @someone %0A ::error::x <img src=x onerror=alert(1)>"
    brk = graph_break(1, gb_type=hostile, explanation=hostile, hints=(hostile,), code=hostile, function=hostile)
    run(standin, report([brk], new=[brk]))
    (comment,) = bot_comments(standin)
    html = markdown_it.MarkdownIt("commonmark", {"html": True}).render(comment.body)
    assert "<script" not in html and "<img" not in html
    assert not re.search(r"@someone", re.sub(r"<code[^>]*>.*?</code>", "", html, flags=re.S))


# --- the check run -------------------------------------------------------------------------------


def test_120_breaks_make_three_annotation_requests(standin: GitHubStandin) -> None:
    breaks = [graph_break(i) for i in range(120)]
    published = run(standin, report(breaks, new=breaks[:100]), annotate_all=True)
    assert writes(standin, r"/check-runs") == ["POST", "PATCH", "PATCH"]
    (check,) = standin.check_runs()
    assert len(check.annotations) == 120
    assert check.conclusion == "failure" and check.head_sha == HEAD_SHA
    levels = [a["annotation_level"] for a in check.annotations]
    assert levels.count("failure") == 100 and levels.count("notice") == 20
    assert published.check_run.annotations == 120 and published.check_run.requests == 3
    assert check.annotations[0]["path"] == "model/layer_0.py" and check.annotations[0]["start_line"] == 10


def test_conclusion_follows_fail_on(standin: GitHubStandin) -> None:
    breaks = [graph_break(1)]
    run(standin, report(breaks, new=breaks), fail_on="none")
    run(standin, report(breaks, new=[]), fail_on="new", annotate_all=True)
    run(standin, report(breaks, new=[]), fail_on="any", annotate_all=True)
    assert [c.conclusion for c in standin.check_runs()] == ["success", "success", "failure"]
    assert [a["annotation_level"] for c in standin.check_runs() for a in c.annotations] == [
        "warning",
        "notice",
        "failure",
    ]


def test_only_what_the_pr_changed_is_annotated_unless_all_is_asked(standin: GitHubStandin) -> None:
    """Five breaks older than the PR and one it adds: the Files tab shows the one; `annotate: all`
    shows the six. The old ones stay in the check run's text either way."""
    old = [graph_break(i) for i in range(5)]
    added = graph_break(7, code='print("added")')
    run(standin, report([*old, added], new=[added]))
    run(standin, report([*old, added], new=[added]), annotate_all=True)
    changed, every = standin.check_runs()
    assert [(a["path"], a["start_line"]) for a in changed.annotations] == [(added.file, added.line)]
    assert len(every.annotations) == 6 and "5 graph breaks persisting" in changed.output["summary"]


def test_a_pr_with_nothing_new_on_five_old_breaks_annotates_nothing(standin: GitHubStandin) -> None:
    old = [graph_break(i) for i in range(5)]
    published = run(standin, report(old, new=[]))
    (check,) = standin.check_runs()
    assert check.annotations == [] and published.check_run.annotations == 0 and check.conclusion == "success"
    fallen = run(standin, report(old, new=[]), token=FORK_PR_TOKEN)  # the workflow commands, read-only token
    assert fallen.fallback is not None and fallen.fallback.commands == ()


# --- no permission -------------------------------------------------------------------------------


def test_read_only_token_falls_back_to_annotations_and_says_why(standin: GitHubStandin) -> None:
    recorder = Recorder()
    published = run(standin, report([graph_break(1)]), token=FORK_PR_TOKEN, recorder=recorder)
    assert standin.comments(PR) == [] and standin.check_runs() == []
    assert published.fallback is not None and published.problems == ()
    assert published.fallback.commands[0].startswith("::error file=model/layer_1.py,line=11,")
    assert any("cannot publish the comment: the token may not write (HTTP 403" in line for line in recorder.lines)
    assert "read-only token" in published.fallback.summary


def test_403_on_comment_creation_falls_back(standin: GitHubStandin) -> None:
    standin.fail_next(
        "POST",
        COMMENTS,
        403,
        body={"message": "Resource not accessible by integration", "documentation_url": "https://docs.github.com/rest"},
    )
    recorder = Recorder()
    published = run(standin, report([graph_break(1)]), recorder=recorder)
    assert published.fallback is not None and standin.comments(PR) == []
    assert standin.check_runs() == []  # no write after a refusal
    assert recorder.sleeps == []  # a refusal is not retried
    assert any("falling back" in line.lower() for line in recorder.lines)


def test_fallback_shows_ten_of_each_kind_and_lists_the_rest(standin: GitHubStandin) -> None:
    breaks = [graph_break(i) for i in range(25)]
    published = run(standin, report(breaks, new=breaks), token=FORK_PR_TOKEN)
    assert len(published.fallback.commands) == 10
    assert "15 more new graph breaks" in published.fallback.summary
    assert published.fallback.summary.count("\n| GB0059 |") == 15


# --- retries -------------------------------------------------------------------------------------


def test_5xx_after_the_comment_was_written_does_not_post_twice(standin: GitHubStandin) -> None:
    standin.fail_next("POST", COMMENTS, 502, after_serving=True)
    recorder = Recorder()
    published = run(standin, report([graph_break(1)]), recorder=recorder)
    assert len(bot_comments(standin)) == 1
    assert published.comment.action.value == "updated"  # the retry found the comment and edited it
    assert recorder.sleeps == [2.0]


def test_5xx_after_the_check_run_was_created_does_not_create_another(standin: GitHubStandin) -> None:
    standin.fail_next("POST", r"/check-runs$", 500, after_serving=True)
    breaks = [graph_break(i) for i in range(60)]
    standin.fail_next("PATCH", r"/check-runs/\d+$", 503, after_serving=True)
    run(standin, report(breaks))
    (check,) = standin.check_runs()
    assert len(check.annotations) == 60  # the batch that went through was not sent again


def test_a_5xx_that_says_when_to_come_back_is_retried_then_and_one_that_does_not_backs_off(
    standin: GitHubStandin,
) -> None:
    standin.fail_next("POST", COMMENTS, 503, headers={"Retry-After": "5"})
    standin.fail_next("GET", COMMENTS, 502, headers={"Retry-After": "soon"})
    recorder = Recorder()
    run(standin, report([graph_break(1)]), recorder=recorder)
    assert recorder.sleeps == [2.0, 5.0]  # the GET's nonsense header is the usual back-off
    assert len(bot_comments(standin)) == 1


def test_rate_limits_are_waited_out_as_github_says(standin: GitHubStandin) -> None:
    recorder = Recorder()
    standin.fail_rate_limited("GET", COMMENTS, reset=int(recorder.now) + 30)
    standin.fail_secondary_rate_limited("POST", COMMENTS, retry_after=7)
    run(standin, report([graph_break(1)]), recorder=recorder)
    assert recorder.sleeps == [31.0, 7.0]
    assert len(bot_comments(standin)) == 1


def test_retries_are_capped_and_then_reported(standin: GitHubStandin) -> None:
    standin.fail_next("*", r"/check-runs", 502, times=100)
    recorder = Recorder()
    published = run(standin, report([graph_break(1)]), recorder=recorder)
    assert len(recorder.sleeps) == 3  # 4 tries
    assert recorder.sleeps == [2.0, 4.0, 8.0]
    assert published.problems and "gave up after 4 tries" in published.problems[0]
    assert published.fallback is not None
    assert len(bot_comments(standin)) == 1 and standin.check_runs() == []


def test_a_rate_limit_reset_too_far_away_is_not_waited_for(standin: GitHubStandin) -> None:
    standin.fail_rate_limited("GET", COMMENTS)  # resets in 2100
    recorder = Recorder()
    published = run(standin, report([graph_break(1)]), recorder=recorder)
    assert recorder.sleeps == []
    assert "asks to wait" in published.problems[0]


def test_a_server_that_cannot_be_reached_is_retried_then_reported(standin: GitHubStandin) -> None:
    recorder = Recorder()
    target = Destination(
        "octo-org/octo-repo", PR, HEAD_SHA, "", "gbbot", "gbbot:1:1", None, CommentMode.ALWAYS, Policy.of()
    )
    client = github_client(ACTIONS_TOKEN, "http://127.0.0.1:9", seconds_between_writes=0)  # discard port: refused
    published = publish(
        client, Texts(report([graph_break(1)])), Options(), target, recorder.retries(tries=2), recorder.lines.append
    )
    assert recorder.sleeps == [2.0]
    assert published.problems and "ConnectionError" in published.problems[0]
    assert published.fallback is not None


def test_writes_are_paced_by_githubs_second_unless_whoever_started_gbbot_says_otherwise() -> None:
    from gbbot.publish.client import PACING_VARIABLE, pacing

    assert pacing({}) == 1.0
    assert pacing({PACING_VARIABLE: "0"}) == 0.0 and pacing({PACING_VARIABLE: "2.5"}) == 2.5
    assert (
        pacing({PACING_VARIABLE: "-1"}) == pacing({PACING_VARIABLE: "soon"}) == pacing({PACING_VARIABLE: "1e9"}) == 1.0
    )
