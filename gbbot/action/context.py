"""What every event's handler shares: the inputs, the runner's environment and files, how to
reach GitHub (a client factory and its retries) and where messages go."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from github import Github

from gbbot.action.inputs import Inputs
from gbbot.action.workflow import WorkflowEnv
from gbbot.analysis.policy import Policy
from gbbot.core.config import CONFIG_NAME, Config, load_config
from gbbot.edges.console import say
from gbbot.publish import retry
from gbbot.publish.client import DEFAULT_RETRIES, github_client

Connect = Callable[[str, str], Github]  # (token, api_url) → client


@dataclass(frozen=True)
class Context:
    inputs: Inputs
    env: WorkflowEnv
    connect: Connect = github_client
    retries: retry.Retries = DEFAULT_RETRIES
    log: retry.Log = say

    def path(self, path: Path) -> Path:
        return path if path.is_absolute() else self.env.workspace / path

    @property
    def root(self) -> Path:
        """The repository the action checks: the workspace."""
        return self.env.workspace.resolve()

    @property
    def report_path(self) -> Path:
        return self.path(self.inputs.report_path)

    def config_path(self) -> Path:
        """The config input, else .gbbot.yml at the repository root."""
        return self.path(self.inputs.config) if self.inputs.config else self.root / CONFIG_NAME

    def config(self) -> Config:
        return load_config(self.config_path())

    def policy(self) -> Policy:
        """The config's fail policy (the default one without a config to read), its breaks'
        part set by the fail-on input when given, as `--fail-on` does on the command line."""
        path = self.config_path()
        override = self.inputs.fail_on or None
        return Policy.resolve(load_config(path), override) if path.exists() else Policy.of(override or "new")
