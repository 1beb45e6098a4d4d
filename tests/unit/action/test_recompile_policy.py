"""The action takes the config's recompilation policy (`fail_on: {breaks: …, recompiles: …}`) to the
check run's conclusion, its annotations, SARIF and the step's outputs; the string form keeps the
default (only a frame newly at the recompile limit fails)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gbbot.analysis import report as report_io
from tests.action_run import run_action, workflow_run_event
from tests.builders import DTYPE, HEAD_SHA, recompiled_report
from tests.github_standin import ACTIONS_TOKEN, GitHubStandin

PR = 7
CONFIG = """\
version: 1
entrypoints:
  - name: step
    call: model:step
fail_on: {fail_on}
"""


@pytest.fixture
def standin(github_standin: GitHubStandin) -> GitHubStandin:
    github_standin.add_pull(PR, HEAD_SHA, head_repo_fork=True)
    return github_standin


@pytest.mark.parametrize(
    ("fail_on", "conclusion", "level", "sarif_level"),
    [
        ("new", "success", "warning", "warning"),
        ("{breaks: new, recompiles: new}", "failure", "failure", "error"),
    ],
)
def test_the_configs_recompilation_policy_reaches_the_check_run(
    tmp_path: Path, standin: GitHubStandin, fail_on: str, conclusion: str, level: str, sarif_level: str
) -> None:
    workspace = tmp_path / "workspace"
    (workspace / "gbbot-report").mkdir(parents=True)
    (workspace / ".gbbot.yml").write_text(CONFIG.format(fail_on=fail_on))
    result = recompiled_report(recompiles=(DTYPE,), persisting=())  # one new dtype problem, no break
    (workspace / "gbbot-report" / "report.json").write_text(json.dumps(report_io.to_json(result)))
    done = run_action(workspace, tmp_path / "run", standin, "workflow_run", workflow_run_event(HEAD_SHA), ACTIONS_TOKEN)
    assert done.code == 0, done.stderr
    (check,) = standin.check_runs()
    assert check.conclusion == conclusion and done.outputs["conclusion"] == conclusion
    assert [(a["path"], a["start_line"], a["annotation_level"]) for a in check.annotations] == [
        ("model/loops.py", 27, level)
    ]
    sarif = json.loads((workspace / "gbbot-report" / "gbbot.sarif").read_text())
    assert [(r["ruleId"], r["level"]) for r in sarif["runs"][0]["results"]] == [("recompile/dtype", sarif_level)]
