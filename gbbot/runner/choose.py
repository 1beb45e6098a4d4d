"""The composition root of the backends: the only module that knows them all."""

from __future__ import annotations

from collections.abc import Mapping

from gbbot.config import Runner as RunnerConfig
from gbbot.runner.contract import Runner
from gbbot.runner.local import LocalRunner, run_local


def runner_for(settings: RunnerConfig, pinned: Mapping[str, str] | None = None) -> Runner:
    """The backend the config's `runner:` asks for: local subprocesses, or sibling containers.
    `pinned` variables are set for every entrypoint on top of what it would get anyway."""
    if settings.backend == "container":
        from gbbot.runner.container import ContainerRunner  # the docker SDK is imported only when used

        return ContainerRunner.connect(settings, pinned)
    return LocalRunner(pinned) if pinned else run_local
