"""Ctrl-C or a cancelled CI job (SIGTERM) stops running entrypoints instead of waiting for them."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path


def test_sigterm_stops_the_entrypoints_and_gbbot_promptly(tmp_path):
    (tmp_path / "hang.py").write_text(
        textwrap.dedent("""\
        import os, time
        open("started.pid", "w").write(str(os.getpid()))
        time.sleep(300)
    """)
    )
    # a fresh process: the warm server imports torch (a warm child: tests/e2e/test_warm.py)
    entrypoints = "entrypoints: [{name: hang, run: python hang.py, timeout: 600}]\n"
    (tmp_path / ".gbbot.yml").write_text("version: 1\nrunner: {warm: false}\n" + entrypoints)
    gbbot = subprocess.Popen(
        [sys.executable, "-m", "gbbot", "check", "--root", str(tmp_path), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pid_file = tmp_path / "started.pid"
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    child = int(pid_file.read_text())
    gbbot.send_signal(signal.SIGTERM)
    _, err = gbbot.communicate(timeout=30)  # not the entrypoint's 600 s timeout
    assert gbbot.returncode == 130
    assert "interrupted" in err
    stat = Path(f"/proc/{child}/stat")
    assert not stat.exists() or stat.read_text().split(") ", 1)[1][0] == "Z"
