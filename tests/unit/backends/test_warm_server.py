"""The warm server's protocol (gbbot/backends/warm_protocol.py) and its loop (warm_server.py), in
the fast tier: the real server, over its real socket, started as gbbot starts it but without torch
(warm_server_without_torch.py), forking real children that run small programs. (With torch, and
the reports it makes: tests/e2e/test_warm.py.)"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gbbot.backends import warm
from gbbot.backends import warm_protocol as protocol
from gbbot.backends.contract import PACKAGE_DIR, SHIM_DIR
from gbbot.edges import git as gitlayer
from gbbot.edges import installed

DRIVER = Path(__file__).with_name("warm_server_without_torch.py")
PROGRAM = (sys.executable, str(DRIVER), str(warm.SERVER_FILE))


def child_spec(tmp_path: Path, source: str, standby: bool = False, env: dict[str, str] | None = None):
    (tmp_path / "main.py").write_text(source)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return protocol.ChildSpec(
        standby=standby, expected=(), kind="script", target=str(tmp_path / "main.py"), args=("--seed", "7"),
        program="python", cwd=str(tmp_path), env=env if env is not None else {"PATH": os.environ["PATH"]},
        stdout=str(work / "stdout.txt"), stderr=str(work / "stderr.txt"), shim=str(SHIM_DIR / "sitecustomize.py"),
        reads=str(work / "reads.json"), learned=None, unrecorded=(str(PACKAGE_DIR), str(work)),
    )  # fmt: skip


class Conversation:
    """gbbot's end of the socket, spoken by hand."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.ours, theirs = socket.socketpair()
        self.server = subprocess.Popen(
            [*PROGRAM, str(theirs.fileno()), *args], pass_fds=[theirs.fileno()], env=env, start_new_session=True
        )
        theirs.close()
        self.ours.settimeout(60)
        self.lines = self.ours.makefile("rb")

    def send(self, message: protocol.Message) -> None:
        self.ours.sendall(protocol.encode(message))

    def read(self) -> protocol.Message | None:
        line = self.lines.readline()
        return protocol.decode(line) if line else None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.ours.shutdown(socket.SHUT_RDWR)
        self.lines.close()
        self.ours.close()
        try:
            self.server.wait(timeout=20)
        finally:
            if self.server.poll() is None:
                os.killpg(self.server.pid, signal.SIGKILL)
                self.server.wait()


@pytest.fixture
def conversation():
    talk = Conversation()
    yield talk
    talk.close()


def _gone(pid: int, within: float = 10.0) -> bool:
    """Whether `pid` ends within `within` seconds (a zombie has ended: it runs no code)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not warm._running(pid):
            return True
        time.sleep(0.05)
    return False


# --- the loop -----------------------------------------------------------------------------------


def test_a_child_runs_the_program_in_its_own_session_with_its_environment_and_its_exit_comes_back(
    tmp_path, conversation
):
    source = (
        "import os, sys\n"
        "print(sys.argv[1:], os.getcwd(), sorted(os.environ), os.getsid(0) == os.getpid())\n"
        "open('data.txt').read()\n"
        "sys.exit(3)\n"
    )
    (tmp_path / "data.txt").write_text("x")
    spec = child_spec(tmp_path, source, env={"ONLY": "this"})
    assert conversation.read() == protocol.Ready(None)
    conversation.send(protocol.Fork(1, spec))
    forked = conversation.read()
    assert isinstance(forked, protocol.Forked) and forked.id == 1
    assert conversation.read() == protocol.Exited(1, 3)
    assert Path(spec.stdout).read_text() == f"['--seed', '7'] {tmp_path} ['ONLY'] True\n"
    assert str(tmp_path / "data.txt") in json.loads(Path(spec.reads).read_text())["files"]


def test_a_child_killed_by_a_signal_exits_with_that_signal_negated(tmp_path, conversation):
    spec = child_spec(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    conversation.read()
    conversation.send(protocol.Fork(7, spec))
    assert isinstance(conversation.read(), protocol.Forked)
    assert conversation.read() == protocol.Exited(7, -signal.SIGKILL)


def test_a_standby_child_runs_its_program_only_when_its_turn_comes(tmp_path, conversation):
    spec = child_spec(tmp_path, "open('ran', 'w').write('yes')\n", standby=True)
    conversation.read()
    conversation.send(protocol.Fork(1, spec))
    assert isinstance(conversation.read(), protocol.Forked)
    time.sleep(0.5)
    assert not (tmp_path / "ran").exists()
    conversation.send(protocol.Go(1))
    assert conversation.read() == protocol.Exited(1, 0)
    assert (tmp_path / "ran").read_text() == "yes"


def test_requests_are_answered_in_turn_while_children_run(tmp_path, conversation):
    conversation.read()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = child_spec(tmp_path / "a", "import time\ntime.sleep(1)\n")
    second = child_spec(tmp_path / "b", "pass\n")
    conversation.send(protocol.Fork(1, first))
    conversation.send(protocol.Fork(2, second))
    replies = [conversation.read() for _ in range(4)]
    assert [type(r).__name__ for r in replies[:2]] == ["Forked", "Forked"]
    assert replies[2:] == [protocol.Exited(2, 0), protocol.Exited(1, 0)]


@pytest.mark.parametrize(
    "line",
    [b"not json\n", b'{"type": "go", "id": "1"}\n', b'{"type": "exited", "id": 1, "code": 0}\n', b'{"go": 1}\n'],
)
def test_a_line_that_is_not_a_request_ends_the_server_and_what_it_started(tmp_path, conversation, line):
    conversation.read()
    conversation.send(protocol.Fork(1, child_spec(tmp_path, "import time\ntime.sleep(300)\n")))
    forked = conversation.read()
    assert isinstance(forked, protocol.Forked)
    conversation.ours.sendall(line)
    assert conversation.read() is None  # the server closed its end
    assert conversation.server.wait(timeout=20) == 0
    assert _gone(forked.pid)


def test_gbbot_going_away_takes_the_children_with_the_server(tmp_path, conversation):
    conversation.read()
    conversation.send(protocol.Fork(1, child_spec(tmp_path, "import time\ntime.sleep(300)\n")))
    forked = conversation.read()
    assert isinstance(forked, protocol.Forked)
    conversation.ours.shutdown(socket.SHUT_RDWR)
    assert conversation.server.wait(timeout=20) == 0
    assert _gone(forked.pid)


def test_a_preloaded_module_that_starts_a_thread_makes_the_server_refuse_to_serve(tmp_path):
    (tmp_path / "pool.py").write_text(
        "import threading, time\nthreading.Thread(target=time.sleep, args=(60,)).start()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    talk = Conversation("pool", env=env)
    try:
        assert talk.read() == protocol.Ready("1 Python thread(s) running in the server")
    finally:
        talk.close()


# --- gbbot's side: warm.Server over the same loop ------------------------------------------------


def test_gbbot_forks_through_the_server_and_reads_each_childs_exit(tmp_path):
    server = warm.Server((), os.environ, program=PROGRAM)
    try:
        assert server.unusable() is None
        forked = server.fork(child_spec(tmp_path, "raise SystemExit(5)\n"))
        assert not isinstance(forked, str)
        child = warm._Child(*forked, server=server)
        assert child.wait(30) and child.exit_code == 5
    finally:
        server.close()


def test_a_server_that_dies_fails_the_waiting_run_and_every_later_one_with_the_reason(tmp_path):
    server = warm.Server((), os.environ, program=PROGRAM)
    try:
        assert server.unusable() is None
        forked = server.fork(child_spec(tmp_path, "import time\ntime.sleep(300)\n"))
        assert not isinstance(forked, str)
        child = warm._Child(*forked, server=server)
        assert server._process is not None
        os.kill(server._process.pid, signal.SIGKILL)
        assert child.wait(30) and child.exit_code is None  # the run learns it; it does not hang
        assert server.fork(child_spec(tmp_path, "pass\n")) == "the server stopped"
    finally:
        os.killpg(forked[1], signal.SIGKILL)
        server.close()


def test_a_stopped_server_fails_the_waiting_run_within_the_deadline_and_is_killed(tmp_path, monkeypatch):
    """PR code SIGSTOPs the server (a warm child's parent): the child's exit never comes. The run
    learns why within the deadline instead of hanging gbbot until the job's time limit."""
    monkeypatch.setattr(warm, "REPLY_DEADLINE_S", 1.0)
    server = warm.Server((), os.environ, program=PROGRAM)
    try:
        assert server.unusable() is None
        forked = server.fork(
            child_spec(tmp_path, "import os, signal, time\ntime.sleep(0.5)\nos.kill(os.getppid(), signal.SIGSTOP)\n")
        )
        assert not isinstance(forked, str)
        child = warm._Child(*forked, server=server)
        started = time.monotonic()
        assert child.wait(None) and child.exit_code is None
        assert time.monotonic() - started < 20
        assert child.lost == "it did not report an exit within 1 s"
        assert server._process is not None and server._process.wait(timeout=10) == -signal.SIGKILL
        assert server.unusable() == "it did not report an exit within 1 s"
    finally:
        server.close()


def test_a_stopped_server_does_not_hold_a_fork_request_past_the_deadline(tmp_path, monkeypatch):
    monkeypatch.setattr(warm, "REPLY_DEADLINE_S", 1.0)
    server = warm.Server((), os.environ, program=PROGRAM)
    try:
        assert server.unusable() is None
        assert server._process is not None
        os.kill(server._process.pid, signal.SIGSTOP)
        assert server.fork(child_spec(tmp_path, "pass\n")) == "it did not answer a request within 1 s"
    finally:
        server.close()


def test_a_server_that_cannot_serve_says_why_and_gbbot_runs_fresh(tmp_path):
    (tmp_path / "pool.py").write_text(
        "import threading, time\nthreading.Thread(target=time.sleep, args=(60,)).start()\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    server = warm.Server(("pool",), env, program=PROGRAM)
    try:
        assert server.unusable() == "1 Python thread(s) running in the server"
    finally:
        server.close()


# --- the messages ------------------------------------------------------------------------------


def test_every_message_reads_back_as_it_was_written(tmp_path):
    spec = child_spec(tmp_path, "pass\n", standby=True)
    messages = [
        protocol.Fork(3, spec), protocol.Go(3), protocol.Ready(None), protocol.Ready("`import torch` failed"),
        protocol.Forked(3, 4242), protocol.Refused(3, "CUDA was initialised"), protocol.Exited(3, -9),
    ]  # fmt: skip
    for message in messages:
        assert protocol.decode(protocol.encode(message)) == message
    assert protocol.encode(protocol.Go(3)) == b'{"type": "go", "id": 3}\n'


def _fork_line(tmp_path: Path, **child: object) -> bytes:
    data = json.loads(protocol.encode(protocol.Fork(1, child_spec(tmp_path, "pass\n"))))
    data["child"].update(child)
    return json.dumps(data).encode()


@pytest.mark.parametrize(
    "change",
    [
        {"kind": "shell"},  # neither a script nor a module
        {"args": "--seed 7"},  # a string where a list belongs
        {"args": ["--seed", 7]},
        {"env": {"A": 1}},
        {"standby": 1},  # an int is not a bool
        {"learned": 3},
        {"extra": "x"},  # a field the protocol does not know
    ],
)
def test_a_fork_request_is_checked_field_by_field(tmp_path, change):
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(_fork_line(tmp_path, **change))


@pytest.mark.parametrize(
    "line",
    [
        b"[]", b"{}", b'{"type": "launch", "id": 1}', b'{"type": "go"}', b'{"type": "go", "id": true}',
        b'{"type": "exited", "id": 1, "code": 0, "pid": 2}', b'{"type": "ready"}', b"{", b'"go"',
    ],
)  # fmt: skip
def test_what_is_not_a_message_is_refused(line):
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(line)


def test_a_missing_field_of_the_spec_is_refused(tmp_path):
    data = json.loads(protocol.encode(protocol.Fork(1, child_spec(tmp_path, "pass\n"))))
    del data["child"]["env"]
    with pytest.raises(protocol.ProtocolError, match="env"):
        protocol.decode(json.dumps(data))
    assert {f.name for f in dataclasses.fields(protocol.ChildSpec)} >= {"env", "cwd", "target"}


def test_the_server_and_what_it_forked_are_gone_before_a_push_gets_the_token(tmp_path, in_git_dir):
    """A process forked from the server (an entrypoint's daemon, or one a learned module started)
    would outlive the entrypoints and read the push's environment: the push ends the server first."""
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    (in_git_dir / "a.txt").write_text("1\n")
    subprocess.run(["git", "add", "-A"], cwd=in_git_dir, check=True)
    subprocess.run(["git", "commit", "-qm", "one"], cwd=in_git_dir, check=True)
    head = gitlayer.head_sha(in_git_dir)
    assert head is not None
    server = warm.Server((), os.environ, program=PROGRAM)
    try:
        assert server.unusable() is None
        forked = server.fork(child_spec(tmp_path, "import time\ntime.sleep(300)\n"))
        assert not isinstance(forked, str)
        assert gitlayer.push(in_git_dir, gitlayer.Remote(str(bare), "canary_0011223344556677"), head, "main") is None
        assert server._process is not None and server._process.poll() is not None
        assert _gone(forked[1])
        assert server.unusable() == "it was ended before a credential was used"
    finally:
        server.close()


def test_learning_imports_only_what_was_installed_before_any_pr_code_ran(tmp_path, monkeypatch):
    """An entrypoint writes a module into the installation and imports it, beside one that was
    there before: the learning server imports the old one for later children, never the new one
    (its code would run in the process every later child is forked from)."""
    site_dir = tmp_path / "site-packages"
    site_dir.mkdir()
    marker = "import os\nopen(os.path.join({d!r}, '{name}-' + str(os.getpid())), 'w').close()\n"
    (site_dir / "old_mod.py").write_text(marker.format(d=str(site_dir), name="old"))
    monkeypatch.setattr(installed, "_NAMES", {})
    monkeypatch.setattr(installed, "_places", lambda: (str(site_dir),))
    installed.remember()  # gbbot, before the first setup step or entrypoint
    planted = marker.format(d=str(site_dir), name="planted")
    program = (
        f"open({str(site_dir / 'planted_mod.py')!r}, 'w').write({planted!r})\n"
        "import importlib; importlib.invalidate_caches()\nimport old_mod, planted_mod\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site_dir), os.environ.get("PYTHONPATH", "")])}
    server = warm.Server(None, env, program=PROGRAM)
    try:
        assert server.unusable() is None
        (tmp_path / "repo").mkdir()
        spec = child_spec(tmp_path / "repo", program, env=env)
        spec = dataclasses.replace(spec, learned=str(tmp_path / "imported.json"))
        forked = server.fork(spec)
        assert not isinstance(forked, str)
        assert warm._Child(*forked, server=server).wait(30)
        child = str(forked[1])
        assert json.loads((tmp_path / "imported.json").read_text()) == ["old_mod", "planted_mod"]

        def imported_by_others(name: str) -> list[Path]:
            return [p for p in site_dir.glob(f"{name}-*") if not p.name.endswith(f"-{child}")]

        deadline = time.monotonic() + 30
        while not imported_by_others("old") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert imported_by_others("old")  # learning works: the probe and the server imported it
        time.sleep(1)  # the probe imports the names in the child's order, one after the other
        assert imported_by_others("planted") == []
    finally:
        server.close()
