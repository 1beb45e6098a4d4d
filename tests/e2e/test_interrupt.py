"""Ctrl-C or a cancelled CI job (SIGTERM) stops running entrypoints instead of waiting for them, at
any moment: while the warm server still imports torch as while an entrypoint runs."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HANG = textwrap.dedent("""\
    import os, time
    open("started.pid", "w").write(str(os.getpid()))
    time.sleep(300)
""")


def start(repo: Path, config: str) -> subprocess.Popen:
    (repo / "hang.py").write_text(HANG)
    (repo / ".gbbot.yml").write_text(config)
    return subprocess.Popen(
        [sys.executable, "-m", "gbbot", "check", "--root", str(repo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C's default, even where this test's own runner ignores SIGINT (a background job)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def warm_server_of(pid: int) -> bool:
    """Whether `pid` has started its warm server (a child running gbbot's warm_server.py)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().split(") ", 1)[1].split()[1])
            if parent == pid and b"warm_server.py" in (stat.parent / "cmdline").read_bytes():
                return True
        except (OSError, IndexError, ValueError):
            continue
    return False


def test_sigterm_stops_the_running_entrypoint_and_gbbot_promptly(tmp_path):
    # a fresh process: the warm server imports torch (a warm child: tests/e2e/test_warm.py)
    config = "version: 1\nrunner: {warm: false}\nentrypoints: [{name: hang, run: python hang.py, timeout: 600}]\n"
    gbbot = start(tmp_path, config)
    pid_file = tmp_path / "started.pid"
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    child = int(pid_file.read_text())
    gbbot.send_signal(signal.SIGTERM)
    _, err = gbbot.communicate(timeout=30)  # not the entrypoint's 600 s timeout
    assert gbbot.returncode == 143, err  # 128 + SIGTERM, as a shell reports it
    assert "hang: interrupted" in err and "crashed" not in err
    stat = Path(f"/proc/{child}/stat")
    assert not stat.exists() or stat.read_text().split(") ", 1)[1][0] == "Z"


def test_ctrl_c_while_the_warm_server_starts_stops_at_once_and_starts_nothing(tmp_path):
    gbbot = start(tmp_path, "version: 1\nentrypoints: [{name: hang, run: python hang.py, timeout: 60}]\n")
    assert gbbot.stderr is not None
    seen = ""
    while "running 1 entrypoint" not in seen:
        seen += gbbot.stderr.readline()
    deadline = time.monotonic() + 30
    while not warm_server_of(gbbot.pid) and time.monotonic() < deadline:  # it is importing torch
        time.sleep(0.05)
    asked = time.monotonic()
    gbbot.send_signal(signal.SIGINT)
    _, err = gbbot.communicate(timeout=60)
    took = time.monotonic() - asked
    assert gbbot.returncode == 130, seen + err
    assert took < 20, f"{took:.1f} s: it waited for the entrypoint (timeout 60 s)"
    assert "gbbot: interrupted" in err and "crashed" not in err
    assert not (tmp_path / "started.pid").exists()  # the entrypoint never started
