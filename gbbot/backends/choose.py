"""The composition root of the backends: the only module that knows them all."""

from __future__ import annotations

from collections.abc import Mapping

from gbbot.backends.contract import Runner
from gbbot.backends.local import LocalRunner, run_local
from gbbot.core.config import Runner as RunnerConfig


def runner_for(settings: RunnerConfig, pinned: Mapping[str, str] | None = None) -> Runner:
    """The backend the config's `runner:` asks for: local subprocesses (Python entrypoints forked
    from the shared warm server unless `warm: false`), or sibling containers (never warm: each
    entrypoint is its own container). `pinned` variables are set for every entrypoint on top of
    what it would get anyway."""
    if settings.backend == "container":
        from gbbot.backends.container import ContainerRunner  # the docker SDK is imported only when used

        return ContainerRunner.connect(settings, pinned)
    local = LocalRunner(pinned) if pinned else run_local
    if not settings.warm:
        return local
    from gbbot.backends.warm import WarmRunner, shared_server

    return WarmRunner(shared_server(settings.preload), local, pinned)
