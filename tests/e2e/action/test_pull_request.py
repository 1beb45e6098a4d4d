"""`gbbot action` under pull_request, end to end: a real git repository whose PR adds a graph
break, real torch, the diff against the PR's base, then publishing to the GitHub stand-in — with a
write token (same-repository PR) and with a read-only one (a fork's PR: the fallback)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import markdown_it
import pytest

from tests.action_run import ActionRun, obeyed, pull_request_event, run_action
from tests.conftest import git
from tests.github_standin import ACTIONS_BOT, ACTIONS_TOKEN, FORK_PR_TOKEN, GitHubStandin
from tests.github_standin.fixtures import checked_standin
from tests.unit.render.test_annotations import parse_command

PR = 2
RENDER_COUNT = Path(__file__).resolve().parents[2] / "render_count.py"  # gbbot with its renders counted
CONFIG = """\
version: 1
entrypoints:
  - name: step
    call: model:step
mode: fast
fail_on: new
pass_env: [ENV_SEEN]   # asks in vain: ENV_SEEN is held, only the workflow's GBBOT_PASS_ENV widens
"""
BASE_MODEL = """\
import json
import os

import torch


def f(x):
    x = x + 1
    return x * 2


def step():
    # What an entrypoint can see of the environment: tokens must have been scrubbed.
    with open(os.environ["ENV_SEEN"], "a") as seen:
        seen.write(json.dumps(sorted(os.environ)) + "\\n")
    return torch.compile(f)(torch.ones(3))
"""
HOSTILE_PRINT = 'print("<script>alert(1)</script> @someone %0A ::error::x `tick`")'


@pytest.fixture(scope="module")
def pr_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A repository whose PR (head) adds a print to the compiled function."""
    repo = tmp_path_factory.mktemp("pr") / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gbbot.yml").write_text(CONFIG)
    (repo / "model.py").write_text(BASE_MODEL)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "model.py").write_text(BASE_MODEL.replace("    x = x + 1\n", f"    x = x + 1\n    {HOSTILE_PRINT}\n"))
    git(repo, "commit", "-q", "-am", "head: adds a graph break")
    return repo, base, git(repo, "rev-parse", "HEAD")


def run_pr(
    pr_repo: tuple[Path, str, str], scratch: Path, token: str, fork: bool, program: tuple[str, ...] = ("-m", "gbbot")
) -> Iterator[tuple[ActionRun, GitHubStandin]]:
    repo, base, head = pr_repo
    with checked_standin() as standin:
        standin.add_pull(PR, head, head_repo_fork=fork)
        event = pull_request_event(PR, head, base, fork)
        # GITHUB_TOKEN is set too, so that "it never reached an entrypoint" is a finding, not a given
        seen = {
            "ENV_SEEN": str(scratch / "env_seen.jsonl"),  # where the test entrypoint writes what it saw
            "GBBOT_PASS_ENV": "ENV_SEEN",
            "GITHUB_TOKEN": "ghs_canary_never_handed_on",
        }
        done = run_action(
            repo, scratch, standin, "pull_request", event, token, seen, program=program, header="cpu", jobs="2"
        )
        yield done, standin


@pytest.fixture(scope="module")
def same_repo_run(pr_repo, tmp_path_factory) -> Iterator[tuple[ActionRun, GitHubStandin, Path]]:
    scratch = tmp_path_factory.mktemp("same-repo")
    counting = (str(RENDER_COUNT), str(scratch / "renders.jsonl"), str(pr_repo[0] / "gbbot-report" / "report.json"))
    for done, standin in run_pr(pr_repo, scratch, ACTIONS_TOKEN, fork=False, program=counting):
        yield done, standin, scratch


@pytest.fixture(scope="module")
def fork_run(pr_repo, tmp_path_factory) -> Iterator[tuple[ActionRun, GitHubStandin, Path]]:
    scratch = tmp_path_factory.mktemp("fork")
    for done, standin in run_pr(pr_repo, scratch, FORK_PR_TOKEN, fork=True):
        yield done, standin, scratch


def test_same_repo_pr_runs_the_diff_and_publishes(same_repo_run, pr_repo) -> None:
    done, standin, _ = same_repo_run
    repo, base, head = pr_repo
    assert done.code == 1, done.stderr  # fail_on: new, and the PR adds a break
    report = json.loads((repo / "gbbot-report" / "report.json").read_text())
    entrypoints = [(e["name"], e["status"], e["error"], len(e["breaks"])) for e in report["entrypoints"]]
    assert report["diff"]["base"]["sha"] == base and len(report["diff"]["new"]) == 1, (
        entrypoints,
        report["diff"],
        done.stderr,
    )
    assert done.outputs["new-breaks"] == "1" and done.outputs["fixed-breaks"] == "0"
    assert done.outputs["report-path"] == str(repo / "gbbot-report" / "report.json")
    (comment,) = standin.comments(PR)
    assert comment.login == ACTIONS_BOT and "New graph breaks" in comment.body
    html = markdown_it.MarkdownIt("commonmark", {"html": True}).render(comment.body)
    assert "<script" not in re.sub(r"<code[^>]*>.*?</code>", "", html, flags=re.S)
    (check,) = standin.check_runs()
    assert (check.head_sha, check.conclusion, check.name) == (head, "failure", "gbbot (cpu)")
    (note,) = check.annotations
    assert (note["path"], note["start_line"], note["annotation_level"]) == ("model.py", 9, "failure")
    assert "New graph breaks" in done.summary
    assert not obeyed(done.stdout)  # published: no fallback


def test_each_text_is_rendered_once_and_the_report_is_not_read_back(same_repo_run) -> None:
    """Three texts: the comment's hash (no commits), the comment, and the check run's summary,
    which the job summary shares. Retries and size budgets would render no text twice either."""
    done, _, scratch = same_repo_run
    lines = [json.loads(line) for line in (scratch / "renders.jsonl").read_text().splitlines()]
    *renders, last = lines
    texts = [r["text"] for r in renders]
    assert len(texts) == len(set(texts)) == 3, (renders, done.stderr)
    assert "New graph breaks" in done.summary  # the shared text did reach the job summary
    assert last == {"report_json_reads_back_equal": True}  # the value published is what the file holds


def test_entrypoints_never_see_a_token(same_repo_run, pr_repo) -> None:
    done, _, scratch = same_repo_run
    repo, _, _ = pr_repo
    report = json.loads((repo / "gbbot-report" / "report.json").read_text())
    for entry in report["entrypoints"]:  # both tokens were in gbbot's environment, and withheld
        assert {"GITHUB_TOKEN", "INPUT_TOKEN"} <= set(entry["env_withheld"])
    assert "ghs_canary_never_handed_on" not in done.stdout + done.stderr + json.dumps(report)
    seen = [json.loads(line) for line in (scratch / "env_seen.jsonl").read_text().splitlines()]
    assert len(seen) == 2  # head and base
    for names in seen:
        assert "INPUT_TOKEN" not in names and "GITHUB_TOKEN" not in names
        assert "HOME" in names and "ENV_SEEN" in names  # allow-listed, and widened by the workflow
        assert "GITHUB_EVENT_PATH" not in names  # everything else stays out


def test_fork_pr_falls_back_to_escaped_annotations_and_says_why(fork_run) -> None:
    done, standin, _ = fork_run
    assert done.code == 1
    assert standin.comments(PR) == [] and standin.check_runs() == []
    commands = obeyed(done.stdout)
    assert len(commands) == 1
    assert commands[0].startswith("::error file=model.py,line=9,title=GB0059%3A ")
    _, properties, message = parse_command(commands[0])
    assert properties["file"] == "model.py" and HOSTILE_PRINT in message  # read back verbatim
    assert "the token may not write (HTTP 403" in done.stderr
    assert "read-only token" in done.summary and "New graph breaks" in done.summary
