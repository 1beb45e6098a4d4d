"""The composition root of the backends: the only module that knows them all."""

from __future__ import annotations

from collections.abc import Mapping

from gbbot.backends.contract import Backend
from gbbot.backends.local import LocalBackend, run_local
from gbbot.core.config import BackendSettings


def backend_for(settings: BackendSettings, pinned: Mapping[str, str] | None = None) -> Backend:
    """The backend the config's `runner:` asks for: local subprocesses (Python entrypoints forked
    from the shared warm server unless `warm: false`), or sibling containers (never warm: each
    entrypoint is its own container). `pinned` variables are set for every entrypoint on top of
    what it would get anyway."""
    if settings.backend == "container":
        from gbbot.backends.container import ContainerBackend  # the docker SDK is imported only when used

        return ContainerBackend.connect(settings, pinned)
    local = LocalBackend(pinned) if pinned else run_local
    if not settings.warm:
        return local
    from gbbot.backends.warm import WarmBackend, shared_server

    return WarmBackend(shared_server(settings.preload), local, pinned)
