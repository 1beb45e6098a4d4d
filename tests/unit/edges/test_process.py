"""The one subprocess wrapper (gbbot/edges/process.py): that nothing else in gbbot starts a
process, what a failed command's error shows, and that a started process's whole group goes."""

from __future__ import annotations

import ast
import os
import time
from pathlib import Path

import pytest

import gbbot
from gbbot.core.errors import CalledProcessError
from gbbot.edges import process

PACKAGE = Path(gbbot.__file__).parent
THE_WRAPPER = PACKAGE / "edges" / "process.py"
# The one other file that starts processes: the warm server is a standalone script (run by path,
# never imported as part of gbbot: every child it forks is a copy of it, holding nothing but the
# standard library and what it preloaded), and forking its children is its whole job.
EXCEPTIONS = {PACKAGE / "backends" / "warm_server.py"}
MODULES = {"subprocess", "multiprocessing", "pty", "concurrent.futures.process"}
OS_CALLS = ("fork", "forkpty", "exec", "spawn", "posix_spawn", "system", "popen")


def starts_processes(source: str) -> list[str]:
    """What in `source` starts a process: an import of subprocess (or multiprocessing, pty), or a
    call of os.fork / os.exec* / os.spawn* / os.system / os.popen, however it was imported."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name in MODULES]
        elif isinstance(node, ast.ImportFrom):
            if node.module in MODULES:
                found.append(f"from {node.module} import …")
            elif node.module == "os":
                found += [f"from os import {a.name}" for a in node.names if a.name.startswith(OS_CALLS)]
            elif node.module == "concurrent.futures":
                found += [f"from concurrent.futures import {a.name}" for a in node.names if "Process" in a.name]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os":
            found += [f"os.{node.attr}"] if node.attr.startswith(OS_CALLS) else []
    return found


def test_only_the_wrapper_starts_processes():
    offenders = {
        str(path.relative_to(PACKAGE)): hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != THE_WRAPPER and path not in EXCEPTIONS
        if (hits := starts_processes(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, "start processes through gbbot/edges/process.py"


@pytest.mark.parametrize(
    "source",
    [
        "import subprocess\nsubprocess.run(['git'])",
        "from subprocess import Popen",
        "import os\nos.execve('/bin/sh', [], {})",
        "import os\npid = os.fork()",
        "from os import posix_spawn",
        "import os\nos.system('id')",
        "from concurrent.futures import ProcessPoolExecutor",
    ],
)
def test_the_check_sees_each_way_to_start_a_process(source):
    assert starts_processes(source)


def test_the_check_passes_the_wrapper_and_the_warm_server_exception():
    assert starts_processes(THE_WRAPPER.read_text(encoding="utf-8"))  # else it checks nothing
    assert all(path.is_file() for path in EXCEPTIONS)


# --- what a failed command says ----------------------------------------------------------------


def test_a_failed_command_shows_its_command_exit_code_and_both_outputs():
    with pytest.raises(CalledProcessError) as caught:
        process.run(["sh", "-c", "echo made it half way; echo no such ref >&2; exit 3"], check=True)
    text = str(caught.value)
    assert "sh -c echo made it half way" in text
    assert "exited 3" in text
    assert "stdout: made it half way" in text
    assert "stderr: no such ref" in text


def test_a_long_output_shows_its_end():
    script = "for i in $(seq 1 2000); do echo line $i; done >&2; exit 1"
    with pytest.raises(CalledProcessError) as caught:
        process.run(["sh", "-c", script], check=True)
    assert "line 2000" in str(caught.value)
    assert "line 1\n" not in str(caught.value)
    assert "line 1\n" in caught.value.stderr  # the whole output stays on the exception


def test_a_missing_program_raises():
    with pytest.raises(FileNotFoundError):
        process.run(["gbbot-no-such-program"])


def test_run_hands_stdin_and_only_the_given_environment(tmp_path):
    done = process.run(["sh", "-c", 'cat; echo " $ONLY $HOME"'], cwd=tmp_path, env={"ONLY": "x"}, stdin=b"in")
    assert done.stdout == b"in x \n"


# --- a started process and its group ----------------------------------------------------------


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"


def test_killing_a_started_process_takes_what_it_left_in_the_background(tmp_path):
    pid_file = tmp_path / "daemon.pid"
    running = process.start(
        f"trap '' TERM; sleep 300 & echo $! > {pid_file}; wait", cwd=tmp_path, env={"PATH": os.environ["PATH"]}
    )
    while not pid_file.exists() or not pid_file.read_text().strip():
        time.sleep(0.02)
    daemon = int(pid_file.read_text())
    assert not process.wait(running, 0.1)
    process.kill_group(running)
    assert running.returncode is not None
    deadline = time.monotonic() + 5
    while not _gone(daemon) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _gone(daemon)


def test_a_started_process_leads_its_own_group_in_or_out_of_gbbots_session(tmp_path):
    for session in (True, False):
        running = process.start(["sleep", "30"], cwd=tmp_path, env={}, session=session)
        try:
            assert os.getpgid(running.pid) == running.pid
            assert (os.getsid(running.pid) == running.pid) is session
        finally:
            process.kill_group(running)
