"""The image, the action's entrypoint and the container backend, on a real Docker engine.

No image can be pulled here, so the two images are made from local files only:
- the user's image: a Debian bookworm root filesystem from `debootstrap` (python3, venv, git) with
  torch==2.13.0 unpacked into it from a wheelhouse (`pip download` on this machine), then
  `docker import`ed; the tarball is cached under $GBBOT_DOCKER_DIR, keyed by the recipe. It has no
  gbbot: what makes entrypoints run in it is the container backend's staging of the fast-mode shim
  and gbbot.child.launch;
- the action's image: the project's Dockerfile built on the user's image (TORCH_SPEC="",
  SYSTEM_PACKAGES=1: the documented "the base image brings torch" build), offline, from a
  wheelhouse of gbbot's dependencies in the build context (PIP_NO_INDEX, PIP_FIND_LINKS).
Every container runs with network "none"; our engine has no bridge network at all. A cold run
(debootstrap and all) takes about 2.5 min on 2 cores, a warm one (images kept in the engine's
data root under $GBBOT_DOCKER_DIR) about 30 s.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker
import docker.errors
import docker.types
import pytest
import yaml

from gbbot.backends.container import LABEL
from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import parse_config
from gbbot.core.model import Status
from gbbot.main import main
from tests.conftest import ROOT, git
from tests.local_package import tinydep_wheel
from tests.needs import unavailable

pytestmark = pytest.mark.docker  # and slow, as everything under tests/e2e/

ENGINE_SCRIPT = Path(__file__).parent / "docker" / "start-engine.sh"
CACHE = Path(os.environ.get("GBBOT_DOCKER_DIR") or Path(tempfile.gettempdir()) / "gbbot-docker")
DEBIAN = ("bookworm", "minbase", ("python3", "python3-venv", "git"))  # debootstrap's default mirror
TORCH = "torch==2.13.0"
DEFAULT_HOST = "unix:///var/run/docker.sock"
TOKEN = "ghs_gbbot_test_token_must_not_leak"


def _key(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:12]


# --- the engine ----------------------------------------------------------------------------------


def _answers(host: str) -> bool:
    try:
        docker.DockerClient(base_url=host, timeout=5).ping()
    except docker.errors.DockerException:
        return False
    return True


def _stop(pid_file: Path) -> None:
    """Stop the engine this session started (by its pid, nothing else)."""
    with contextlib.suppress(OSError, ValueError):
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            os.kill(pid, 0)
            time.sleep(0.1)


@pytest.fixture(scope="module")
def engine() -> Iterator[docker.DockerClient]:
    """A Docker engine for this module's tests (DOCKER_HOST is set only while they run: a report
    another test makes names the variables it withheld): DOCKER_HOST's (or the default socket's), else ours from
    tests/e2e/docker/start-engine.sh, installed and started when needed. Every session that uses ours
    holds a shared lock on it; the one that started it stops it at the end unless another
    session still holds the lock (then the last one leaves it running: nothing is cut short)."""
    given = os.environ.get("DOCKER_HOST") or DEFAULT_HOST
    if _answers(given):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("DOCKER_HOST", given)
            yield docker.DockerClient(base_url=given)
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    host = f"unix://{CACHE}/docker.sock"
    with (CACHE / "engine.lock").open("w") as lock, pytest.MonkeyPatch.context() as patch:
        fcntl.flock(lock, fcntl.LOCK_SH)
        ours = not _answers(host)
        env = {
            **os.environ,
            "GBBOT_DOCKER_DIR": str(CACHE),
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        }
        started = subprocess.run(["bash", str(ENGINE_SCRIPT)], env=env, capture_output=True, text=True, timeout=600)
        if started.returncode != 0:
            unavailable(f"no Docker engine could start: {started.stderr.strip()[-600:]}")
        patch.setenv("DOCKER_HOST", host)  # what gbbot's container backend connects to
        yield docker.DockerClient(base_url=host)
        with contextlib.suppress(BlockingIOError):
            if ours:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                _stop(CACHE / "dockerd.pid")


def _has_image(engine: docker.DockerClient, tag: str) -> bool:
    try:
        engine.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def _build(engine: docker.DockerClient, context: Path, tag: str, **buildargs: str) -> None:
    try:
        engine.images.build(path=str(context), tag=tag, buildargs=buildargs, network_mode="none", rm=True, forcerm=True)
    except docker.errors.BuildError as exc:
        log = "".join(str(line.get("stream") or line.get("error") or "") for line in exc.build_log)
        pytest.fail(f"docker build of {tag} failed:\n{log[-4000:]}")


# --- images --------------------------------------------------------------------------------------


def _wheelhouse(name: str, requirements: list[str]) -> Path:
    """`pip download` once per requirement list; the directory is complete or absent."""
    wheels = CACHE / f"{name}-{_key(requirements)}"
    if not wheels.exists():
        partial = wheels.with_suffix(".partial")
        shutil.rmtree(partial, ignore_errors=True)
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "-d", str(partial), *requirements],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            unavailable(f"pip download failed (no package index?): {done.stderr[-600:]}")
        partial.rename(wheels)
    return wheels


def _debootstrap(rootfs: Path) -> None:
    if os.geteuid() != 0 or not shutil.which("debootstrap"):
        unavailable("the test images are made with debootstrap, which needs root")
    suite, variant, packages = DEBIAN
    done = subprocess.run(
        ["debootstrap", f"--variant={variant}", f"--include={','.join(packages)}", suite, str(rootfs)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        unavailable(f"debootstrap failed (no Debian mirror?): {done.stdout[-400:]}{done.stderr[-400:]}")
    for bulk in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man"):
        shutil.rmtree(rootfs / bulk, ignore_errors=True)


def _unpack_torch(site: Path) -> None:
    """torch and its dependencies unpacked by this machine's pip (same cp311 tags as the image's
    Python): much faster than a `docker build` step that installs them."""
    wheels = _wheelhouse("wheels-torch", [TORCH])
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            "--target",
            str(site),
            *map(str, sorted(wheels.iterdir())),
        ],
        check=True,
        capture_output=True,
    )


def _rootfs_tarball(tarball: Path) -> None:
    """debootstrap (~90 s, mostly waiting on the mirror) while torch is unpacked, then one tar."""
    with tempfile.TemporaryDirectory(dir=CACHE) as scratch, ThreadPoolExecutor(1) as pool:
        rootfs, site = Path(scratch) / "rootfs", Path(scratch) / "site"
        debian = pool.submit(_debootstrap, rootfs)
        _unpack_torch(site)
        debian.result()
        dist = rootfs / "usr/local/lib/python3.11/dist-packages"
        dist.mkdir(parents=True, exist_ok=True)
        for entry in site.iterdir():
            entry.rename(dist / entry.name)
        (rootfs / "usr/local/bin/python").symlink_to("/usr/bin/python3")
        partial = tarball.with_suffix(".partial")
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(partial), "."], check=True)
        partial.rename(tarball)  # whole or absent: an interrupted run leaves no half tarball
    for older in CACHE.glob("rootfs-*.tar"):
        if older != tarball:
            older.unlink()  # another recipe's: 1 GB each


@pytest.fixture(scope="module")
def user_image(engine: docker.DockerClient) -> str:
    """A user's image: Debian bookworm minbase with python3 (and `python`), venv, git and
    torch==2.13.0, but no gbbot. No registry, so made from a debootstrap rootfs, `docker import`ed;
    the tarball is cached under $GBBOT_DOCKER_DIR, keyed by the recipe."""
    key = _key(DEBIAN, TORCH)
    tag = f"gbbot-test-torch:{key}"
    if _has_image(engine, tag):
        return tag
    _prune(engine, "gbbot-test-torch")
    tarball = CACHE / f"rootfs-{key}.tar"
    if not tarball.exists():
        _rootfs_tarball(tarball)
    engine.api.import_image_from_file(str(tarball), repository="gbbot-test-torch", tag=key)
    return tag


def _context(files: dict[str, Path]) -> Path:
    context = Path(tempfile.mkdtemp(prefix="gbbot-context-", dir=CACHE))
    for name, source in files.items():
        (context / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, context / name)
    return context


def _project_files() -> dict[str, Path]:
    """What `docker build .` in a clone would see (.dockerignore is applied by the build)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    return {name: ROOT / name for name in listed if name and (ROOT / name).is_file()}


@pytest.fixture(scope="module")
def action_image(engine: docker.DockerClient, user_image: str) -> str:
    """The project's Dockerfile, built offline on the user's image (which brings torch)."""
    project = _dependencies()
    wheels = _wheelhouse("wheels-gbbot", ["setuptools>=68", "wheel", *project])
    files = {**_project_files(), **{f"wheels/{p.name}": p for p in wheels.iterdir()}}
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name].read_bytes())
    tag = f"gbbot-test-action:{_key(user_image, digest.hexdigest())}"
    if _has_image(engine, tag):
        return tag
    _prune(engine, "gbbot-test-action")  # builds of earlier sources: ~100 MB each
    context = _context(files)
    try:
        _build(
            engine,
            context,
            tag,
            BASE_IMAGE=user_image,
            TORCH_SPEC="",
            SYSTEM_PACKAGES="1",
            PIP_NO_INDEX="1",
            PIP_FIND_LINKS="/src/wheels",
        )
    finally:
        shutil.rmtree(context)
    return tag


def _prune(engine: docker.DockerClient, repository: str) -> None:
    """Untag our earlier builds (the last untag deletes the image), so the data root stays small."""
    for image in engine.images.list(name=repository):
        for tag in image.tags:
            with contextlib.suppress(docker.errors.APIError):  # in use by another session's container
                engine.images.remove(tag)


def _dependencies() -> list[str]:
    """gbbot's dependencies, as the (editable) install recorded them from pyproject.toml."""
    return [r for r in importlib.metadata.requires("gbbot") or [] if "extra ==" not in r]


def _leftovers(engine: docker.DockerClient) -> list[str]:
    return [c.name for c in engine.containers.list(all=True, filters={"label": LABEL})]


def _run(engine: docker.DockerClient, image: str, command: list[str], **options) -> tuple[int, str]:
    """Run a container to its end; (exit code, stdout+stderr). Always network none."""
    container = engine.containers.create(image, command, network_mode="none", **options)
    try:
        container.start()
        code = container.wait(timeout=300)["StatusCode"]
        return code, container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)


# --- the image and the action's entrypoint -------------------------------------------------------


def test_the_dockerfile_builds_and_gbbot_runs_in_it(engine, action_image):
    code, out = _run(engine, action_image, ["--version"])
    assert (code, out.strip()) == (0, "gbbot 0.1.0")


def _owned_by_another_user(path: Path) -> None:
    for item in (path, *path.rglob("*")):
        os.lchown(item, 4242, 4242)


def _runner_inputs(**given: str) -> dict[str, str]:
    """INPUT_* as GitHub's runner passes a Docker action's inputs: every input of action.yml, its
    default unless `given`, the name upper-cased with hyphens kept."""
    declared = yaml.safe_load((ROOT / "action.yml").read_text())["inputs"]
    values = {name: str(spec.get("default", "")) for name, spec in declared.items()}
    values.update({name.replace("_", "-"): value for name, value in given.items()})
    return {f"INPUT_{name.upper()}": value for name, value in values.items()}


def test_the_action_runs_as_the_runner_starts_it_on_a_workspace_owned_by_another_user(
    engine, action_image, example_repo, tmp_path
):
    """As on a runner: no arguments (the entrypoint runs `gbbot action`), inputs as INPUT_*, the
    workspace mounted at /github/workspace and owned by another uid (git must still read HEAD),
    the runner's temp and file-command volumes. A push: check, write, publish nothing (a scheduled
    run is the audit, which needs GitHub and a remote: tested against the stand-in elsewhere)."""
    sha = git(example_repo, "rev-parse", "HEAD")
    _owned_by_another_user(example_repo)
    temp, commands = tmp_path / "runner_temp", tmp_path / "file_commands"
    temp.mkdir()
    commands.mkdir()
    github = {
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_WORKSPACE": "/github/workspace",
        "RUNNER_TEMP": "/github/runner_temp",
        "GITHUB_OUTPUT": "/github/file_commands/output",
        "GITHUB_STEP_SUMMARY": "/github/file_commands/summary",
        "GITHUB_REPOSITORY": "o/r",
    }
    code, out = _run(
        engine,
        action_image,
        [],
        environment={**github, **_runner_inputs(token=TOKEN, fail_on="none", jobs="2")},
        working_dir="/github/workspace",
        mounts=[
            docker.types.Mount("/github/workspace", str(example_repo), type="bind"),
            docker.types.Mount("/github/runner_temp", str(temp), type="bind"),
            docker.types.Mount("/github/file_commands", str(commands), type="bind"),
        ],
    )
    assert code == 0, out
    report = json.loads((example_repo / "gbbot-report" / "report.json").read_text())
    assert report["commit"] == sha
    entries = {e["name"]: e for e in report["entrypoints"]}
    assert {e["status"] for e in entries.values()} == {"ok"}, out
    # `python` is the image's virtualenv, which sees the base image's torch (SYSTEM_PACKAGES=1)
    assert ("GB4198", "train.py") in {(b["gb_id"], b["file"]) for b in entries["train-step"]["breaks"]}
    assert "GB0059" in {b["gb_id"] for b in entries["forward"]["breaks"]}
    assert "total-breaks<<" in (commands / "output").read_text()
    summary = (commands / "summary").read_text()
    assert "GB4198" in summary and "train.py" in summary  # the report, not just any text
    assert TOKEN not in out


SETUP_CONFIG = """\
version: 1
setup:
  - pip install -r requirements.txt
  - python probe.py setup
entrypoints:
  - name: forward
    call: model:forward
fail_on: none
"""
SETUP_MODEL = """\
import torch
import tinydep

import probe


def f(x):
    return tinydep.scale(x * 2) + 1


def forward():
    probe.probe("entrypoint")
    return torch.compile(f)(torch.ones(3))
"""
# What the repository's code tries in the image, from a setup step and from an entrypoint: who it
# runs as, and whether it can change gbbot's installation or Python's standard library (both
# imported by gbbot later, while it holds the token), read gbbot's environment, or signal it (gbbot
# is PID 1: the entrypoint script execs it), or reach a Docker socket mounted into the container
# (root's, mode 660, as the runner's). Written where the test mounted a directory for it.
PROBE_SCRIPT = """\
import importlib.util, json, os, socket, sys


def attempt(action):
    try:
        action()
    except OSError as exc:
        return type(exc).__name__
    return "done"


def probe(where):
    found = {"uid": os.getuid(), "gid": os.getgid()}
    for name in ("gbbot", "encodings.unicode_escape"):
        found[name] = attempt(lambda: open(importlib.util.find_spec(name).origin, "a").close())
    found["read gbbot's environ"] = attempt(lambda: open("/proc/1/environ", "rb").read())
    found["signal gbbot"] = attempt(lambda: os.kill(1, 0))
    found["docker socket"] = attempt(lambda: socket.socket(socket.AF_UNIX).connect("/var/run/docker.sock"))
    with open(f"/probe/{where}.json", "w") as out:
        json.dump(found, out)


if __name__ == "__main__":
    probe(sys.argv[1])
"""


def _setup_repo(root: Path, requirement: str) -> Path:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".gbbot.yml").write_text(SETUP_CONFIG)
    (root / "requirements.txt").write_text(f"--no-index\n--find-links vendor\n{requirement}\n")
    (root / "model.py").write_text(SETUP_MODEL)
    (root / "probe.py").write_text(PROBE_SCRIPT)
    tinydep_wheel(root / "vendor")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a model that needs tinydep")
    return root


def _action_on(engine, image: str, repo: Path, tmp_path: Path) -> tuple[int, str]:
    """The action on a push, as the runner starts it, on `repo` (network none: the wheel is local);
    /probe is a directory anyone may write, for PROBE_SCRIPT, and /var/run/docker.sock a socket as
    the runner's is (root's, mode 660; nothing listens: root would be refused the connection, anyone
    else the permission)."""
    commands, probes, sock = tmp_path / "file_commands", tmp_path / "probe", tmp_path / "docker.sock"
    commands.mkdir()
    probes.mkdir()
    probes.chmod(0o1777)
    with socket.socket(socket.AF_UNIX) as bound:
        bound.bind(str(sock))
    sock.chmod(0o660)
    github = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_WORKSPACE": "/github/workspace",
        "GITHUB_OUTPUT": "/github/file_commands/output",
        "GITHUB_STEP_SUMMARY": "/github/file_commands/summary",
        "GITHUB_REPOSITORY": "o/r",
    }
    return _run(
        engine,
        image,
        [],
        environment={**github, **_runner_inputs(token=TOKEN)},
        working_dir="/github/workspace",
        mounts=[
            docker.types.Mount("/github/workspace", str(repo), type="bind"),
            docker.types.Mount("/github/file_commands", str(commands), type="bind"),
            docker.types.Mount("/probe", str(probes), type="bind"),
            docker.types.Mount("/var/run/docker.sock", str(sock), type="bind"),
        ],
    )


def test_the_image_runs_setup_so_an_entrypoint_imports_what_only_requirements_txt_names(engine, action_image, tmp_path):
    """And the image's layout holds: on a root-owned workspace the repository's code (a setup step,
    an entrypoint) runs as the image's unprivileged gbbot-runner, which can write neither gbbot's
    installation nor Python's, read gbbot's environment, signal it, nor reach the Docker socket."""
    repo = _setup_repo(tmp_path / "repo", "tinydep==1.0")
    code, out = _action_on(engine, action_image, repo, tmp_path)
    assert code == 0, out
    assert "::group::gbbot setup 1/2: pip install -r requirements.txt" in out
    seen = {where: json.loads((tmp_path / "probe" / f"{where}.json").read_text()) for where in ("setup", "entrypoint")}
    assert seen["setup"] == seen["entrypoint"]
    assert seen["setup"]["uid"] not in (0, os.getuid()) and seen["setup"]["gid"] != 0
    denied = {k: v for k, v in seen["setup"].items() if k not in ("uid", "gid")}
    assert denied == {
        "gbbot": "PermissionError",
        "encodings.unicode_escape": "PermissionError",
        "read gbbot's environ": "PermissionError",
        "signal gbbot": "PermissionError",
        "docker socket": "PermissionError",
    }
    report = json.loads((repo / "gbbot-report" / "report.json").read_text())
    [entry] = report["entrypoints"]
    assert entry["status"] == "ok", entry["error"]
    assert [(b["origin"], b["file"], b["code"]) for b in entry["breaks"]] == [
        ("third_party", "model.py", "return tinydep.scale(x * 2) + 1")
    ]
    assert TOKEN not in out


def test_the_image_stops_at_a_requirement_it_cannot_install(engine, action_image, tmp_path):
    repo = _setup_repo(tmp_path / "repo", "tinydep==9.9")
    code, out = _action_on(engine, action_image, repo, tmp_path)
    assert code == 1, out
    assert "gbbot: error: setup failed: step 1 of 2, `pip install -r requirements.txt`, exited 1" in out
    assert "No matching distribution found for tinydep==9.9" in out
    assert not (repo / "gbbot-report" / "report.json").exists()


# --- the container backend -----------------------------------------------------------------------

PROBE = """\
import os, socket, torch

@torch.compile
def f(x):
    print("inside")  # GB0059
    return x + 1

f(torch.ones(2))
print("interfaces", sorted(name for _, name in socket.if_nameindex()))
print("environment", sorted(os.environ))
print("token leaked" if any("{token}" in v for v in os.environ.values()) else "no token")
"""


def _write_config(root: Path, body: str) -> None:
    (root / ".gbbot.yml").write_text("version: 1\n" + textwrap.dedent(body))


def test_container_backend_finds_breaks_without_network_or_token(
    engine, user_image, example_repo, tmp_path, monkeypatch
):
    (example_repo / "probe.py").write_text(PROBE.format(token=TOKEN))
    _write_config(
        example_repo,
        f"""\
        entrypoints:
          - {{name: probe, run: python3 probe.py, timeout: 300}}
          - {{name: forward, call: "tinymodel.bench:forward_once", timeout: 300}}
        runner: {{backend: container, image: "{user_image}"}}
    """,
    )
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("INPUT_TOKEN", TOKEN)
    code = main(
        [
            "check",
            "--root",
            str(example_repo),
            "--json",
            str(tmp_path / "r.json"),
            "-q",
            "-j",
            "2",
            "--keep-traces",
            str(tmp_path / "work"),
            "--fail-on",
            "none",
        ]
    )
    assert code == 0
    entrypoints = {e["name"]: e for e in json.loads((tmp_path / "r.json").read_text())["entrypoints"]}
    assert entrypoints["probe"]["status"] == "ok", entrypoints["probe"]["error"]
    assert [(b["gb_id"], b["file"], b["function"]) for b in entrypoints["probe"]["breaks"]] == [
        ("GB0059", "probe.py", "f")
    ]
    stdout = (tmp_path / "work" / "probe" / "stdout.txt").read_text()
    assert "interfaces ['lo']" in stdout  # network none
    assert "no token" in stdout and "GITHUB_TOKEN" not in stdout and "INPUT_TOKEN" not in stdout
    # a call: entrypoint runs through gbbot.child.launch, which the image does not have: it was staged
    assert entrypoints["forward"]["status"] == "ok", entrypoints["forward"]["error"]
    assert {b["gb_id"] for b in entrypoints["forward"]["breaks"]} >= {"GB0059", "GB0124", "GB0291"}
    assert _leftovers(engine) == []


def test_a_hanging_container_is_stopped_at_its_timeout_and_removed(engine, user_image, in_git_dir):
    _write_config(
        in_git_dir,
        f"""\
        entrypoints: [{{name: hang, run: "echo started; sleep 300", timeout: 2}}]
        runner: {{backend: container, image: "{user_image}"}}
    """,
    )
    config = parse_config((in_git_dir / ".gbbot.yml").read_text())
    [entry] = check(in_git_dir, config, CheckOptions()).entrypoints
    assert entry.status is Status.TIMEOUT
    assert "timed out after 2 s; container stopped" in entry.error
    assert _leftovers(engine) == []


def test_a_gpu_request_without_a_gpu_runtime_fails_clearly_and_leaves_no_container(engine, user_image, in_git_dir):
    _write_config(
        in_git_dir,
        f"""\
        entrypoints: [{{name: on-gpu, run: "true"}}]
        runner: {{backend: container, image: "{user_image}", gpus: all}}
    """,
    )
    config = parse_config((in_git_dir / ".gbbot.yml").read_text())
    [entry] = check(in_git_dir, config, CheckOptions()).entrypoints
    assert entry.status is Status.CRASHED
    assert "runner.gpus is all but this Docker engine has no GPU runtime" in entry.error
    assert 'could not select device driver "" with capabilities: [[gpu]]' in entry.error
    assert "NVIDIA Container Toolkit" in entry.error
    # the failed start left it in Created; gbbot removed it
    assert _leftovers(engine) == []


def test_gbbot_in_a_container_mounts_the_workspace_by_its_host_path(
    engine, action_image, user_image, example_repo, tmp_path
):
    """The GPU-runner setup: gbbot in the action's container, the runner's socket mounted, the
    workspace at /github/workspace; each entrypoint runs in a sibling container that must get the
    workspace and the trace dir by their paths on the Docker host."""
    _write_config(
        example_repo,
        f"""\
        entrypoints:
          - {{name: forward, call: "tinymodel.bench:forward_once", timeout: 300}}
        runner: {{backend: container, image: "{user_image}", memory: 2g, cpus: 1}}
    """,
    )
    runner_temp = tmp_path / "runner_temp"
    runner_temp.mkdir()
    if not os.environ["DOCKER_HOST"].startswith("unix://"):
        unavailable("the engine is not on a unix socket that a container could mount")
    socket_file = Path(os.environ["DOCKER_HOST"].removeprefix("unix://"))
    code, out = _run(
        engine,
        action_image,
        ["check", "--json", "/github/runner_temp/report.json", "--fail-on", "none", "-q"],
        environment={"GITHUB_WORKSPACE": "/github/workspace", "RUNNER_TEMP": "/github/runner_temp"},
        working_dir="/github/workspace",
        mounts=[
            docker.types.Mount("/github/workspace", str(example_repo), type="bind"),
            docker.types.Mount("/github/runner_temp", str(runner_temp), type="bind"),
            docker.types.Mount("/var/run/docker.sock", str(socket_file), type="bind"),
        ],
    )
    assert code == 0, out
    [entry] = json.loads((runner_temp / "report.json").read_text())["entrypoints"]
    assert entry["status"] == "ok", entry["error"]
    files = {(b["gb_id"], b["file"]) for b in entry["breaks"]}
    assert ("GB0059", "tinymodel/model.py") in files  # repo-relative: the same path inside
    assert _leftovers(engine) == []
