"""The action's settings: the config file is read once, at dispatch, and only for the events whose
handler reads it; a config that does not load fails the step where the handler first needs it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gbbot.action import inputs
from gbbot.action.context import settings
from gbbot.action.workflow import WorkflowEnv
from gbbot.analysis.policy import Policy
from gbbot.core import config as config_module
from gbbot.core.errors import ConfigError
from gbbot.main import main
from tests.action_run import REPOSITORY, RUN_ID, pull_request_event
from tests.conftest import git
from tests.github_standin import ACTIONS_TOKEN
from tests.github_standin.fixtures import checked_standin

PR = 5
# No torch: what is counted is how often the action reads its config, not what the run finds.
CONFIG = """\
version: 1
entrypoints:
  - name: nothing
    run: "true"
fail_on: {breaks: new, recompiles: none}
autofix: true
"""


def _env(workspace: Path, **given: str) -> WorkflowEnv:
    environ = {"GITHUB_WORKSPACE": str(workspace), "GITHUB_EVENT_NAME": "push", "GITHUB_REPOSITORY": REPOSITORY}
    return WorkflowEnv.read({**environ, **given})


def _inputs(**given: str) -> inputs.Inputs:
    return inputs.read({inputs.env_name(name): value for name, value in given.items()})


def _count_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every config file parsed from now on (load_config reads it, then parses it here)."""
    parsed: list[str] = []
    real = config_module.parse_config

    def spy(text: str, path: str = config_module.CONFIG_NAME) -> config_module.Config:
        parsed.append(path)
        return real(text, path)

    monkeypatch.setattr(config_module, "parse_config", spy)
    return parsed


def test_one_pull_request_event_reads_the_config_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, scratch = tmp_path / "repo", tmp_path / "scratch"
    repo.mkdir()
    scratch.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gbbot.yml").write_text(CONFIG)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "notes.txt").write_text("the PR\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "head")
    head = git(repo, "rev-parse", "HEAD")
    event, output, summary = scratch / "event.json", scratch / "output.txt", scratch / "summary.md"
    event.write_text(json.dumps(pull_request_event(PR, head, base)))
    output.write_text("")
    with checked_standin() as standin:
        standin.add_pull(PR, head)
        for name in [n for n in list(os.environ) if n.startswith(("GITHUB_", "INPUT_", "ACTIONS_", "RUNNER_"))]:
            monkeypatch.delenv(name)
        given = {
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_REPOSITORY": REPOSITORY,
            "GITHUB_API_URL": standin.url,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_RUN_ID": RUN_ID,
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_WORKSPACE": str(repo),
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_OUTPUT": str(output),
            "INPUT_TOKEN": ACTIONS_TOKEN,
            "INPUT_CACHE-DIR": "",
        }
        for name, value in given.items():
            monkeypatch.setenv(name, value)
        loads = _count_loads(monkeypatch)
        code = main(["action"])
        comments = standin.comments(PR)
    # The whole event ran (diff, autofix, publishing, outputs); an entrypoint that compiles nothing
    # fails the check.
    assert code == 1 and len(comments) == 1 and "autofix" in comments[0].body
    assert "conclusion<<" in output.read_text()
    assert loads == [str(repo.resolve() / ".gbbot.yml")]


def test_a_handler_that_reads_no_config_never_opens_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".gbbot.yml").write_text("version: 2\n")
    loads = _count_loads(monkeypatch)
    found = settings(_inputs(**{"gb-fix": "push"}), _env(tmp_path), reads_config=False)
    assert loads == [] and found.loaded is None


def test_a_config_that_does_not_load_fails_where_it_is_first_needed(tmp_path: Path) -> None:
    (tmp_path / ".gbbot.yml").write_text("version: 2\n")
    found = settings(_inputs(), _env(tmp_path), reads_config=True)  # no error yet
    for read in (lambda: found.config, lambda: found.policy):
        with pytest.raises(ConfigError, match="entrypoints: required key is missing"):
            read()
    given = settings(_inputs(**{"fail-on": "any"}), _env(tmp_path), reads_config=True)
    with pytest.raises(ConfigError, match="entrypoints: required key is missing"):
        _ = given.policy  # the input sets the breaks' part; the recompilations' is the config's


def test_without_a_config_file_the_policy_is_the_default_and_the_config_is_an_error(tmp_path: Path) -> None:
    found = settings(_inputs(), _env(tmp_path), reads_config=True)
    assert found.policy == Policy.of("new")
    with pytest.raises(ConfigError, match="no such file"):
        _ = found.config
