"""What every event's handler shares: the inputs, the runner's environment and files, how to
reach GitHub (a client factory and its retries) and where messages go."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from github import Github

from gbbot.action.inputs import Inputs
from gbbot.action.workflow import WorkflowEnv
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

    def fail_on(self) -> str:
        """The input, else the config's (when there is a config to read), else `new`."""
        if self.inputs.fail_on:
            return self.inputs.fail_on
        path = self.config_path()
        return load_config(path).fail_on if path.exists() else "new"

    def fail_on_recompiles(self) -> str | None:
        """The config's `fail_on.recompiles`, else None (the default that goes with fail_on). The
        fail-on input sets the breaks' policy only, as `--fail-on` does on the command line."""
        path = self.config_path()
        return load_config(path).fail_on_recompiles if path.exists() else None
