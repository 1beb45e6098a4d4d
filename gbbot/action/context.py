"""What every event's handler shares: the inputs, the settings resolved from them and the config
once at dispatch, the runner's environment and files, how to reach GitHub (a client factory and its
retries) and where messages go."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from github import Github

from gbbot.action.inputs import Inputs
from gbbot.action.workflow import WorkflowEnv
from gbbot.api import Policy, jobs_for
from gbbot.core.config import CONFIG_NAME, Config, load_config
from gbbot.core.errors import ConfigError
from gbbot.core.model import Mode
from gbbot.edges.console import say
from gbbot.publish import retry
from gbbot.publish.client import DEFAULT_RETRIES, github_client

Connect = Callable[[str, str], Github]  # (token, api_url) → client


@dataclass(frozen=True)
class Settings:
    """What the step runs with: the inputs and the config file, read once at dispatch. Handlers
    read this, never the file. A config that did not load is kept as its error, raised where a
    handler first asks for the config or the fail policy — so a step fails for a bad config at the
    point, with the message and the exit code, it always has, and a step that needs neither never
    does."""

    config_file: Path
    loaded: Config | ConfigError | None  # None: not opened (this event's handler reads no config)
    present: bool  # whether the file was there
    fail_on_input: str  # "" = the config's
    mode: Mode | None  # None = the config's
    jobs: int

    @property
    def config(self) -> Config:
        if isinstance(self.loaded, Config):
            return self.loaded
        if self.loaded is None:
            raise RuntimeError(f"{self.config_file} was not read: this event's handler reads no config")
        raise self.loaded

    @property
    def policy(self) -> Policy:
        """The fail policy, resolved here and nowhere else: the config's (the default one without a
        config file), its breaks' part set by the fail-on input when given, as `--fail-on` does on
        the command line."""
        override = self.fail_on_input or None
        return Policy.resolve(self.config, override) if self.present else Policy.of(override or "new")


def config_file(given: Inputs, env: WorkflowEnv) -> Path:
    """The config input (relative paths under the workspace), else .gbbot.yml at the repository root."""
    if given.config:
        return given.config if given.config.is_absolute() else env.workspace / given.config
    return env.workspace.resolve() / CONFIG_NAME


def settings(given: Inputs, env: WorkflowEnv, reads_config: bool) -> Settings:
    """The step's settings; the config file is read (once) only when the handler `reads_config`."""
    path = config_file(given, env)
    present = reads_config and path.exists()
    loaded: Config | ConfigError | None = None
    if reads_config:
        try:
            inside = None if given.config and given.config.is_absolute() else env.workspace
            loaded = load_config(path, inside)
        except ConfigError as exc:
            loaded = exc
    mode = Mode(given.mode) if given.mode else None
    jobs = jobs_for(given.jobs, loaded) if isinstance(loaded, Config) else jobs_for(given.jobs, Config("", ()))
    return Settings(path, loaded, present, given.fail_on, mode, jobs)


@dataclass(frozen=True)
class Context:
    inputs: Inputs
    env: WorkflowEnv
    settings: Settings
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
