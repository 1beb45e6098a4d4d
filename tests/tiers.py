"""The suite's two tiers, as a pytest plugin (tests/conftest.py loads it).

Tests under tests/e2e/ run gbbot whole (real torch, the CLI and the action as processes over real
repositories, docker): they are marked `slow` by where they live, so no file carries the mark and
none can forget it. Everything else is the fast tier, tests/unit/ mirroring gbbot/, where torch
cannot start: while collection or a fast test runs, torch is refused in this process and in every
Python process started with this process's environment (tests/no_torch/sitecustomize.py), and a
test that tried fails saying where it belongs.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import pytest

from gbbot.backends import warm
from tests.no_torch import sitecustomize as no_torch

E2E = Path("tests") / "e2e"  # below the rootdir


class TorchGate:
    """A session directory holding the child processes' sitecustomize and the record it keeps of
    every process that tried to import torch."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.log = directory / no_torch.ATTEMPTS
        shutil.copyfile(no_torch.__file__, directory / "sitecustomize.py")
        self.log.touch()

    @contextmanager
    def closed(self, refuse: Callable[[list[str]], NoReturn]) -> Iterator[None]:
        """torch is refused while the body runs; afterwards `refuse` gets each attempt, if any."""
        attempts: list[str] = []
        finder = no_torch.RefuseTorch(lambda name: attempts.append(f"this process imported {name}"))
        loaded = {name: module for name, module in sys.modules.items() if no_torch.is_torch(name)}
        for name in loaded:
            del sys.modules[name]  # an earlier slow test loaded it: importing it again meets the finder
        sys.meta_path.insert(0, finder)
        self._pythonpath(add=True)
        start = self.log.stat().st_size
        try:
            with _own_warm_servers():
                yield
        finally:
            self._pythonpath(add=False)
            sys.meta_path.remove(finder)
            sys.modules.update(loaded)
            attempts += self._children_since(start)
            if attempts:
                refuse(attempts)

    def _pythonpath(self, add: bool) -> None:
        """Put this directory first on PYTHONPATH, or take it out; the rest is the test's own."""
        mine = str(self.directory)
        others = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != mine]
        paths = [mine, *others] if add else others
        if paths:
            os.environ["PYTHONPATH"] = os.pathsep.join(paths)
        else:
            os.environ.pop("PYTHONPATH", None)

    def _children_since(self, start: int) -> list[str]:
        with self.log.open("rb") as log:
            log.seek(start)
            entries = [json.loads(line) for line in log.read().splitlines() if line.strip()]
        return [f"pid {e['pid']} imported {e['module']}: {' '.join(e['argv'])}" for e in entries]


@contextmanager
def _own_warm_servers() -> Iterator[None]:
    """gbbot keeps its warm servers (processes that imported torch) for the life of the process:
    a fast test must neither use one an earlier slow test started nor leave its own behind."""
    earlier = dict(warm._SHARED)
    warm._SHARED.clear()
    try:
        yield
    finally:
        for server in warm._SHARED.values():
            server.close()
        warm._SHARED.clear()
        warm._SHARED.update(earlier)


GATE = pytest.StashKey[TorchGate]()


def pytest_configure(config: pytest.Config) -> None:
    directory = Path(tempfile.mkdtemp(prefix="gbbot-no-torch-"))
    config.stash[GATE] = TorchGate(directory)
    config.add_cleanup(lambda: shutil.rmtree(directory, ignore_errors=True))


NEXT_TORCH = "torch_next"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Before `-m` selects: everything under tests/e2e/ is slow. A `torch_next` test needs gbbot's
    environment to hold the next torch: it is deselected (not skipped: nothing is reported as run)
    unless `-m` names the marker, as .ci/run's second environment does."""
    e2e = config.rootpath / E2E
    for item in items:
        if item.path.is_relative_to(e2e):
            item.add_marker(pytest.mark.slow)
    if NEXT_TORCH in (config.option.markexpr or ""):
        return
    later = [item for item in items if item.get_closest_marker(NEXT_TORCH)]
    if later:
        config.hook.pytest_deselected(items=later)
        items[:] = [item for item in items if not item.get_closest_marker(NEXT_TORCH)]


def _said(attempts: list[str]) -> str:
    shown = "; ".join(attempts[:3]) + (f"; and {len(attempts) - 3} more" if len(attempts) > 3 else "")
    return f"{shown}. {no_torch.HINT}"


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    def refuse(attempts: list[str]) -> NoReturn:
        raise pytest.UsageError(f"collecting the tests started torch: {_said(attempts)}")

    with session.config.stash[GATE].closed(refuse):
        return (yield)


def _fast_tier_phase(item: pytest.Item, phase: str) -> Generator[None, object, object]:
    if item.get_closest_marker("slow"):
        return (yield)

    def refuse(attempts: list[str]) -> NoReturn:
        pytest.fail(f"{item.nodeid} ({phase}) started torch: {_said(attempts)}", pytrace=False)

    with item.config.stash[GATE].closed(refuse):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _fast_tier_phase(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _fast_tier_phase(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    return (yield from _fast_tier_phase(item, "teardown"))
