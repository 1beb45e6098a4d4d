"""How a process reads in /proc/PID/stat (gbbot/backends/orphans.py), and, with `gbbot check` run
whole: a daemon that leaves its entrypoint's process group (double fork, setsid) does not outlive
gbbot, however the entrypoint ends; one that an entrypoint still running needs is left alone."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gbbot.backends.orphans import parse_stat

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reaping needs Linux's subreaper")

DAEMON = textwrap.dedent("""\
    import os, sys, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(sys.argv[1] + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename(sys.argv[1] + ".tmp", sys.argv[1])
            time.sleep(60)
            os._exit(0)
        os._exit(0)
    os.wait()
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.01)
""")


def alive(pid: int) -> bool:
    """Running, not merely a zombie waiting for its parent."""
    try:
        return parse_stat(Path(f"/proc/{pid}/stat").read_text()).zombie is False
    except (OSError, ValueError):
        return False


def gone_soon(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def gbbot_check(root: Path, entrypoints: str, *args: str) -> subprocess.CompletedProcess:
    (root / "daemon.py").write_text(DAEMON)
    (root / ".gbbot.yml").write_text("version: 1\nentrypoints:\n" + textwrap.dedent(entrypoints))
    cmd = [sys.executable, "-m", "gbbot", "check", "--root", str(root), "-q", "--fail-on", "none", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@linux_only
@pytest.mark.parametrize(
    ("ending", "then"),
    [("a normal exit", "true"), ("a failure", "exit 3"), ("a timeout", "sleep 30")],
)
def test_an_escaped_daemon_is_killed_when_its_entrypoint_ends(tmp_path, ending, then):
    done = gbbot_check(
        tmp_path,
        f"""\
        - {{name: spawner, run: "{sys.executable} daemon.py daemon.pid && {then}", timeout: 3}}
    """,
    )
    assert done.returncode in (0, 1), done.stderr
    pid = int((tmp_path / "daemon.pid").read_text())
    try:
        assert gone_soon(pid), f"daemon {pid} outlived gbbot after {ending}"
    finally:
        if alive(pid):
            os.kill(pid, 9)


@linux_only
def test_a_daemon_is_left_alone_while_its_entrypoint_still_runs(tmp_path):
    """With --jobs 2, another entrypoint ending must not kill a daemon the first one still uses."""
    uses_daemon = f"{sys.executable} daemon.py daemon.pid && sleep 2 && kill -0 $(cat daemon.pid) && touch still-there"
    done = gbbot_check(
        tmp_path,
        f"""\
        - {{name: uses-daemon, run: "{uses_daemon}", timeout: 30}}
        - {{name: quick, run: "sleep 0.5"}}
    """,
        "--jobs",
        "2",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    pid = int((tmp_path / "daemon.pid").read_text())
    try:
        assert (tmp_path / "still-there").exists(), "the daemon was killed while its entrypoint ran"
        assert gone_soon(pid)
    finally:
        if alive(pid):
            os.kill(pid, 9)


def test_stat_fields_are_read_after_a_command_name_with_spaces_and_parentheses():
    child = parse_stat("4242 (evil) R 1 2 3) S 17 4242 4242 0 -1 4194560")
    assert (child.pid, child.parent, child.group, child.session, child.zombie) == (4242, 17, 4242, 4242, False)
