"""The container backend: each entrypoint in a sibling container, started through the Docker socket.

A Docker container action cannot be given `--gpus`, so on GPU runners gbbot (in the action's own
container) asks the runner's Docker engine for a sibling container from the user's image, with GPU
device requests, network off by default, no token, resource limits. The sibling sees the repository
at the same path as gbbot does, so its traces name files as a local run's would. Bind sources are
paths on the Docker host: when gbbot itself runs in a container, they come from inspecting that
container's volumes (the runner mounts the workspace at /github/workspace from somewhere else).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

import docker
import docker.errors
import requests.exceptions
from docker.models.containers import Container
from docker.types import DeviceRequest
from docker.types import Mount as Bind
from docker.utils import parse_repository_tag

from gbbot.backends import contract
from gbbot.backends.contract import RunRequest
from gbbot.core.config import BackendSettings
from gbbot.core.errors import GbbotError
from gbbot.core.model import RunOutcome, Status
from gbbot.edges.process import KILL_GRACE_S

WORK = PurePosixPath("/gbbot/work")  # the entrypoint's private work dir, inside the container
SUPPORT = "support"  # under the work dir: the fast-mode shim and gbbot.child.launch, copied there
PYTHON = "python3"  # what every Python image has; Debian's Python has no `python`
LABEL = "gbbot.entrypoint"  # on every container gbbot starts, so leftovers can be found
SHM_SIZE = "1g"  # Docker's default 64 MB /dev/shm breaks DataLoader worker processes
# gbbot.child.launch and the modules of gbbot it imports, copied into the work dir: the image has no gbbot
LAUNCH_MODULES = ("child/launch.py", "core/call_args.py", "core/schema.py", "core/errors.py")
MOUNTINFO = Path("/proc/self/mountinfo")
# A container's /etc/hostname, /etc/hosts, /etc/resolv.conf are mounted from the engine's
# containers/<id>/ directory, so the id shows in mountinfo even with a custom --hostname.
CONTAINER_ID_IN_MOUNTS = re.compile(r"/containers/([0-9a-f]{64})/")
HEX_ID = re.compile(r"[0-9a-f]{12,64}")
# The engine's answer to a GPU request when no GPU runtime (NVIDIA Container Toolkit) is set up.
NO_GPU_DRIVER = "could not select device driver"


@dataclass(frozen=True)
class Mount:
    """A volume of gbbot's own container: `target` as gbbot sees it, `source` on the Docker host."""

    source: str
    target: str


@dataclass(frozen=True)
class Placement:
    """Where the two bind mounts of an entrypoint's container come from, on the Docker host."""

    root: PurePosixPath  # the repository; mounted at the path gbbot sees it at
    work: PurePosixPath  # the private work dir; mounted at WORK


# --- pure --------------------------------------------------------------------------------------


def own_container_ids(hostname: str, mountinfo: str) -> tuple[str, ...]:
    """Candidates for the id of the container gbbot runs in: Docker names a container's host after
    its id (unless --hostname was given), and mountinfo names its containers/<id>/ directory."""
    candidates = [hostname] if HEX_ID.fullmatch(hostname) else []
    candidates += CONTAINER_ID_IN_MOUNTS.findall(mountinfo)
    return tuple(dict.fromkeys(candidates))


def host_path(path: PurePosixPath, mounts: Sequence[Mount] | None) -> PurePosixPath | None:
    """`path` as the Docker host sees it: itself when gbbot is not in a container (`mounts` is
    None); else through the deepest of gbbot's mounts that holds it; None when none does."""
    if mounts is None:
        return path
    holding = [m for m in mounts if _within(path, PurePosixPath(m.target))]
    if not holding:
        return None
    deepest = max(holding, key=lambda m: len(PurePosixPath(m.target).parts))
    return PurePosixPath(deepest.source) / path.relative_to(deepest.target)


def _within(path: PurePosixPath, directory: PurePosixPath) -> bool:
    return path == directory or directory in path.parents


def device_requests(gpus: str | None) -> list[DeviceRequest]:
    """`runner.gpus` as the engine's device requests: "all" or a count of GPUs."""
    if gpus is None:
        return []
    return [DeviceRequest(count=-1 if gpus == "all" else int(gpus), capabilities=[["gpu"]])]


def image_environment(image_attrs: Mapping[str, Any]) -> dict[str, str]:
    """The image's own ENV lines, so that PYTHONPATH is joined with ours rather than replaced."""
    lines = (image_attrs.get("Config") or {}).get("Env") or []
    return dict(line.split("=", 1) for line in lines if "=" in line)


def create_arguments(
    request: RunRequest,
    settings: BackendSettings,
    placement: Placement,
    image_env: Mapping[str, str],
    user: str | None,
) -> dict[str, Any]:
    """The container to create for one entrypoint. Its environment is built from the image's
    (through the same allow-list) and the entrypoint's own, never from gbbot's: the runner's token
    stays out."""
    inside = replace(request, work_dir=Path(WORK))
    support = Path(WORK / SUPPORT)
    cmd = contract.command(inside, python=PYTHON)
    arguments: dict[str, Any] = {
        "image": settings.image,
        "command": ["sh", "-c", cmd] if isinstance(cmd, str) else cmd,
        "environment": contract.environment(
            inside, image_env, shim_dir=support / "shim", package_parent=support / "pkg"
        ),
        "working_dir": str(request.root),
        "mounts": [
            Bind(target=str(request.root), source=str(placement.root), type="bind"),
            Bind(target=str(WORK), source=str(placement.work), type="bind"),
        ],
        "network_mode": settings.network,
        "device_requests": device_requests(settings.gpus),
        "labels": {LABEL: request.entrypoint.name},
        "init": True,  # reaps and signals the entrypoint's children like the local process group
        "shm_size": SHM_SIZE,
    }
    if settings.memory:
        arguments["mem_limit"] = settings.memory
    if settings.cpus:
        arguments["nano_cpus"] = int(settings.cpus * 1e9)
    if user:
        arguments["user"] = user
    return arguments


def start_failure(explanation: str, settings: BackendSettings) -> str:
    """Why the container did not start, in words that say what to do."""
    if NO_GPU_DRIVER in explanation and settings.gpus:
        return (
            f"could not start the container: runner.gpus is {settings.gpus} but this Docker engine "
            f"has no GPU runtime ({explanation}); install the NVIDIA Container Toolkit on the "
            "runner and restart Docker, or remove runner.gpus"
        )
    return f"could not start a container from {settings.image}: {explanation}"


def outcome_of(
    exit_code: int | None, timed_out: bool, out_of_memory: bool, timeout: float, settings: BackendSettings
) -> tuple[Status, str]:
    """The outcome of a container that ran: status and the reason in words."""
    if timed_out:
        return Status.TIMEOUT, f"timed out after {timeout:g} s; container stopped"
    if out_of_memory:
        return Status.CRASHED, f"killed: out of memory (runner.memory: {settings.memory or 'no limit'})"
    if exit_code == 0:
        return Status.OK, ""
    signal_no = contract.signal_number(exit_code, through_shell=True)  # Docker reports 128+N too
    if exit_code is None or signal_no:
        return Status.CRASHED, f"killed by signal {signal_no}" if signal_no else "no exit code"
    return Status.FAILED, ""


# --- the Docker edge ---------------------------------------------------------------------------


def connect() -> docker.DockerClient:
    """The engine DOCKER_HOST names, else the default socket (the one the runner mounts)."""
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        raise GbbotError(
            f"runner.backend is container but no Docker engine answers ({exc}); gbbot needs the "
            "engine's socket (/var/run/docker.sock, which GitHub's runner mounts into actions) "
            "or DOCKER_HOST"
        ) from None
    return client


def find_image(client: docker.DockerClient, name: str) -> Any:
    """The image, pulled when the engine does not have it (as `docker run` would)."""
    with contextlib.suppress(docker.errors.ImageNotFound):
        return client.images.get(name)
    repository, tag = parse_repository_tag(name)
    try:
        return client.images.pull(repository, tag=tag or "latest")
    except docker.errors.APIError as exc:
        raise GbbotError(
            f"runner.image {name!r} is not on the Docker host and could not be pulled: {exc.explanation or exc}"
        ) from None


def own_mounts(client: docker.DockerClient) -> tuple[Mount, ...] | None:
    """The volumes of the container gbbot runs in, or None when it runs on the engine's host."""
    try:
        mountinfo = MOUNTINFO.read_text(errors="replace")
    except OSError:
        mountinfo = ""
    for candidate in own_container_ids(socket.gethostname(), mountinfo):
        try:
            attrs = client.api.inspect_container(candidate)
        except docker.errors.NotFound:
            continue
        if attrs["Id"].startswith(candidate):  # an id, not a container that happens to be named so
            return tuple(Mount(m["Source"], m["Destination"]) for m in attrs.get("Mounts") or [])
    return None


def stage_support(work_dir: Path) -> None:
    """Copy the fast-mode shim and gbbot.child.launch (with the modules it imports) into the work
    dir: the image has no gbbot. Empty __init__.py files keep gbbot's other imports (and its
    dependencies) out of the image."""
    support = work_dir / SUPPORT
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(contract.SHIM_DIR, support / "shim", dirs_exist_ok=True, ignore=ignore)
    package = support / "pkg" / "gbbot"
    for module in LAUNCH_MODULES:
        (package / module).parent.mkdir(parents=True, exist_ok=True)
        for init in (package / "__init__.py", (package / module).parent / "__init__.py"):
            init.touch()
        shutil.copy2(Path(contract.PACKAGE_DIR) / module, package / module)


def _wait(container: Container, timeout: float) -> tuple[int | None, bool]:
    """Wait for the exit; past the timeout stop it (TERM, a grace period, KILL). (code, timed out)"""
    started = time.monotonic()
    try:
        return container.wait(timeout=timeout).get("StatusCode"), False
    except requests.exceptions.RequestException:  # the read timeout arrives as a ConnectionError
        if time.monotonic() - started < timeout:
            raise  # the engine went away: not a timeout
    container.stop(timeout=int(KILL_GRACE_S))
    return container.wait(timeout=60).get("StatusCode"), True


def _save_logs(container: Container, work_dir: Path) -> None:
    """The container's stdout and stderr into files, as a local run leaves them."""
    paths = (work_dir / "stdout.txt", work_dir / "stderr.txt")
    for path, stdout in zip(paths, (True, False), strict=True):
        with path.open("wb") as out:
            for chunk in container.logs(stdout=stdout, stderr=not stdout, stream=True, follow=False):
                out.write(chunk)


def _user() -> str | None:
    """gbbot's own uid when not root, so that gbbot can read and delete what the entrypoint writes
    into the work dir; root keeps the image's user."""
    uid = os.getuid()
    return None if uid == 0 else f"{uid}:{os.getgid()}"


class ContainerBackend:
    """A contract Backend: one sibling container per entrypoint, removed afterwards whatever happened."""

    def __init__(
        self,
        client: docker.DockerClient,
        settings: BackendSettings,
        mounts: tuple[Mount, ...] | None,
        image_env: Mapping[str, str],
        user: str | None,
    ) -> None:
        self.client, self.settings, self.mounts = client, settings, mounts
        self.image_env, self.user = dict(image_env), user
        # Containers not removed yet: on a Ctrl-C gbbot exits while they still run (holding GPUs
        # on a self-hosted runner); whatever is left goes at interpreter exit.
        self.live: set[Container] = set()
        atexit.register(self.remove_live)

    def remove_live(self) -> None:
        for container in list(self.live):
            self._remove(container)

    def prepare(self, requests: Sequence[RunRequest], jobs: int) -> None:
        """Nothing to get ready: each process starts when its turn comes."""

    def stop_all(self) -> None:
        """Nothing now: containers still running are removed when gbbot exits (`remove_live`)."""

    @classmethod
    def connect(cls, settings: BackendSettings, pinned: Mapping[str, str] | None = None) -> ContainerBackend:
        """Talk to the engine once: check it answers, find the image, learn our own mounts.
        `pinned` variables are set in every container on top of the image's."""
        if not settings.image:
            raise GbbotError("runner.backend is container but runner.image is not set")
        client = connect()
        image = find_image(client, settings.image)
        image_env = {**image_environment(image.attrs), **(pinned or {})}
        return cls(client, settings, own_mounts(client), image_env, _user())

    def place(self, root: Path, work: Path) -> Placement:
        return Placement(root=self._on_host(root), work=self._on_host(work))

    def _on_host(self, path: Path) -> PurePosixPath:
        source = host_path(PurePosixPath(path), self.mounts)
        if source is None:
            raise GbbotError(
                f"gbbot runs in a container and {path} is not on a volume shared with the Docker "
                "host, so an entrypoint's container cannot mount it; keep the repository and TMPDIR "
                "on mounted volumes (the action's entrypoint sets TMPDIR=$RUNNER_TEMP)"
            )
        return source

    def __call__(self, request: RunRequest) -> RunOutcome:
        root, work = request.root.resolve(), request.work_dir.resolve()
        request = replace(request, root=root, work_dir=work)
        shutil.rmtree(request.trace_dir, ignore_errors=True)  # a reused --keep-traces dir
        work.mkdir(parents=True, exist_ok=True)
        stage_support(work)
        arguments = create_arguments(request, self.settings, self.place(root, work), self.image_env, self.user)
        try:
            container = self.client.containers.create(**arguments)
        except docker.errors.APIError as exc:
            return self._not_started(request, exc, 0.0)
        self.live.add(container)
        try:
            return self._run(container, request)
        finally:
            self._remove(container)

    def _remove(self, container: Container) -> None:
        """Always, however the run ended: a failed start leaves the container in `Created` even
        with auto-remove (a GPU request on an engine without a GPU runtime does)."""
        with contextlib.suppress(docker.errors.NotFound):
            container.remove(force=True)
        self.live.discard(container)

    def _run(self, container: Container, request: RunRequest) -> RunOutcome:
        started = time.monotonic()
        try:
            container.start()
        except docker.errors.APIError as exc:
            return self._not_started(request, exc, time.monotonic() - started)
        exit_code, timed_out = _wait(container, request.entrypoint.timeout)
        duration = time.monotonic() - started
        _save_logs(container, request.work_dir)
        container.reload()
        out_of_memory = bool(container.attrs["State"].get("OOMKilled"))
        status, reason = outcome_of(exit_code, timed_out, out_of_memory, request.entrypoint.timeout, self.settings)
        reason += contract.timed_out_in(request) if timed_out else ""
        return contract.outcome(request, status, exit_code, duration, reason)

    def _not_started(self, request: RunRequest, exc: docker.errors.APIError, duration: float) -> RunOutcome:
        reason = start_failure(str(exc.explanation or exc), self.settings)
        return RunOutcome(request.entrypoint.name, Status.CRASHED, None, round(duration, 3), reason=reason)
