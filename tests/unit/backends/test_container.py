"""The container backend's decisions, without an engine: paths on the Docker host, what the
container gets (environment, mounts, limits, GPUs), how its end reads. The engine itself is in
tests/e2e/test_docker.py."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path, PurePosixPath

import pytest

from gbbot.backends import choose, local, warm
from gbbot.backends.container import (
    WORK,
    Mount,
    Placement,
    create_arguments,
    host_path,
    outcome_of,
    own_container_ids,
    stage_support,
    start_failure,
)
from gbbot.backends.contract import RunRequest
from gbbot.core.config import BackendSettings, Entrypoint
from gbbot.core.errors import GbbotError
from gbbot.core.model import Mode, Status
from gbbot.main import main

ACTION_MOUNTS = (  # what GitHub's runner mounts into a Docker action's container
    Mount("/var/run/docker.sock", "/var/run/docker.sock"),
    Mount("/home/runner/work/_temp/_github_home", "/github/home"),
    Mount("/home/runner/work/_temp", "/github/runner_temp"),
    Mount("/home/runner/work/repo/repo", "/github/workspace"),
    Mount("/home/runner/work/_temp/_runner_file_commands", "/github/file_commands"),
)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/github/workspace", "/home/runner/work/repo/repo"),
        ("/github/workspace/src/model.py", "/home/runner/work/repo/repo/src/model.py"),
        ("/github/runner_temp/gbbot-x/train", "/home/runner/work/_temp/gbbot-x/train"),
        # the deepest mount wins over the one that holds it
        ("/github/home/.cache", "/home/runner/work/_temp/_github_home/.cache"),
        ("/github/workspace2", None),  # a sibling with a common prefix is not inside
        ("/tmp/gbbot-x", None),  # the container's own /tmp: no host path
    ],
)
def test_host_path_inside_the_action_container(path, expected):
    found = host_path(PurePosixPath(path), ACTION_MOUNTS)
    assert (str(found) if found else None) == expected


def test_host_path_outside_a_container_is_the_path_itself():
    assert host_path(PurePosixPath("/tmp/gbbot-x/work"), None) == PurePosixPath("/tmp/gbbot-x/work")


def test_own_container_id_from_hostname_and_mountinfo():
    full = "3f" * 32
    mountinfo = (
        f"612 590 0:55 /var/lib/docker/containers/{full}/hostname /etc/hostname rw - ext4 /dev/sda1 rw\n"
        f"613 590 0:55 /var/lib/docker/containers/{full}/hosts /etc/hosts rw - ext4 /dev/sda1 rw\n"
    )
    assert own_container_ids("3f3f3f3f3f3f", mountinfo) == ("3f3f3f3f3f3f", full)
    # a hostname that is not an id (--hostname, or not a container) is no candidate
    assert own_container_ids("ci-runner", "") == ()


def request(entrypoint: Entrypoint, mode: Mode = Mode.FAST) -> RunRequest:
    return RunRequest(entrypoint, Path("/github/workspace"), Path("/github/runner_temp/gbbot-1/e"), mode)


PLACED = Placement(PurePosixPath("/home/runner/work/repo/repo"), PurePosixPath("/home/runner/work/_temp/gbbot-1/e"))


def test_the_container_gets_no_token_and_sees_the_repository_at_the_same_path(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    monkeypatch.setenv("INPUT_TOKEN", "ghs_secret")
    image_env = {"PATH": "/opt/conda/bin:/usr/bin", "PYTHONPATH": "/opt/lib"}
    entry = Entrypoint("train", run="python train.py", env=(("SEED", "0"),))
    args = create_arguments(request(entry), BackendSettings("container", "img:1"), PLACED, image_env, None)
    env = args["environment"]
    assert "ghs_secret" not in str(args)  # built from the image's environment, never gbbot's
    assert env["SEED"] == "0" and env["PATH"] == "/opt/conda/bin:/usr/bin"
    assert env["TORCH_TRACE"] == f"{WORK}/trace" and env["GBBOT_MODE"] == "fast"
    assert env["PYTHONPATH"] == f"{WORK}/support/shim:/opt/lib"  # the shim first, the image's kept
    assert args["command"] == ["sh", "-c", "python train.py"]
    assert args["working_dir"] == "/github/workspace"
    binds = {(m["Target"], m["Source"]) for m in args["mounts"]}
    assert binds == {("/github/workspace", str(PLACED.root)), (str(WORK), str(PLACED.work))}
    assert args["network_mode"] == "none" and args["device_requests"] == []
    assert "user" not in args and "mem_limit" not in args and "nano_cpus" not in args


def test_a_call_entrypoint_runs_the_staged_launcher_with_the_images_python():
    entry = Entrypoint("fwd", call="pkg.bench:forward")
    args = create_arguments(request(entry, Mode.FAITHFUL), BackendSettings("container", "img"), PLACED, {}, "1000:1000")
    assert args["command"] == ["python3", "-m", "gbbot.child.launch", "pkg.bench:forward"]
    assert args["environment"]["PYTHONPATH"] == f"{WORK}/support/pkg"  # faithful: no shim
    assert args["user"] == "1000:1000"


def test_limits_and_gpus_become_the_engines_requests():
    settings = BackendSettings("container", "img", gpus="2", network="host", memory="8g", cpus=2.5)
    args = create_arguments(request(Entrypoint("e", run="true")), settings, PLACED, {}, None)
    [gpus] = args["device_requests"]
    assert (gpus["Count"], gpus["Capabilities"]) == (2, [["gpu"]])
    assert (args["network_mode"], args["mem_limit"], args["nano_cpus"]) == ("host", "8g", 2_500_000_000)
    [every] = create_arguments(
        request(Entrypoint("e", run="true")), BackendSettings("container", "img", gpus="all"), PLACED, {}, None
    )["device_requests"]
    assert every["Count"] == -1


@pytest.mark.parametrize(
    ("code", "timed_out", "oom", "status", "reason"),
    [
        (0, False, False, Status.OK, ""),
        (3, False, False, Status.FAILED, ""),
        (137, False, False, Status.CRASHED, "killed by signal 9"),
        (137, False, True, Status.CRASHED, "killed: out of memory (runner.memory: 4g)"),
        (143, True, False, Status.TIMEOUT, "timed out after 60 s; container stopped"),
    ],
)
def test_how_a_containers_end_reads(code, timed_out, oom, status, reason):
    assert outcome_of(code, timed_out, oom, 60, BackendSettings("container", "img", memory="4g")) == (status, reason)


def test_a_gpu_start_failure_says_what_to_do():
    message = start_failure(
        'could not select device driver "" with capabilities: [[gpu]]', BackendSettings("container", "img", gpus="all")
    )
    assert "runner.gpus is all but this Docker engine has no GPU runtime" in message
    assert "NVIDIA Container Toolkit" in message
    assert (
        start_failure("No such image", BackendSettings("container", "img"))
        == "could not start a container from img: No such image"
    )


def test_the_staged_launcher_runs_a_call_entrypoint_without_gbbot_installed(tmp_path):
    stage_support(tmp_path / "work")
    project = tmp_path / "project"
    project.mkdir()
    (project / "job.py").write_text("def go():\n    open('ran', 'w').write('yes')\n")
    # -I -S: no PYTHON* variables, no site-packages (so not the installed gbbot, nor an editable
    # install's import hook); the path is set by hand
    code = textwrap.dedent(f"""\
        import runpy, sys
        sys.path[:0] = [{str(tmp_path / "work" / "support" / "pkg")!r}]
        sys.argv = ["gbbot.child.launch", "job:go"]
        runpy.run_module("gbbot.child.launch", run_name="__main__")
    """)
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], cwd=project, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (project / "ran").read_text() == "yes"
    assert (tmp_path / "work" / "support" / "shim" / "sitecustomize.py").exists()


def test_the_local_backend_is_the_default():
    # warm is on by default: a warm runner in front of the local backend, which it falls back to
    assert choose.backend_for(BackendSettings(warm=False)) is local.run_local
    assert isinstance(choose.backend_for(BackendSettings()), warm.WarmBackend)


def test_the_container_backend_without_an_engine_is_a_clear_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(GbbotError, match="no Docker engine answers"):
        choose.backend_for(BackendSettings("container", "img"))
    (tmp_path / ".gbbot.yml").write_text(
        textwrap.dedent("""\
        version: 1
        entrypoints: [{name: e, run: "true"}]
        runner: {backend: container, image: img}
    """)
    )
    assert main(["check", "--root", str(tmp_path), "-q"]) == 2
    assert "DOCKER_HOST" in capsys.readouterr().err
