"""`gbbot check`: entrypoints that crash, hang or print megabytes. (Tokens: backends/test_contract.py;
the example with real torch: tests/e2e/test_check.py.)"""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import parse_config
from gbbot.core.model import Status
from gbbot.main import main

# Fresh processes (the local backend) here: the warm server imports torch, and its own crashes,
# timeouts and Ctrl-C are tests/e2e/test_warm.py's, checked against these.
FRESH = "runner: {warm: false}\n"


def write_config(root: Path, body: str) -> None:
    (root / ".gbbot.yml").write_text("version: 1\n" + FRESH + textwrap.dedent(body))


def run_check(root: Path, body: str, **options):
    write_config(root, body)
    config = parse_config((root / ".gbbot.yml").read_text())
    return {e.name: e for e in check(root, config, CheckOptions(**options)).entrypoints}


def test_failures_are_reported_and_the_others_still_run(tmp_path):
    (tmp_path / "boom.py").write_text("def f():\n    raise RuntimeError('kaboom in f')\nf()\n")
    result = run_check(
        tmp_path,
        """\
        entrypoints:
          - {name: raises, run: python boom.py}
          - {name: segfault, run: "python -c 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'"}
          - {name: missing, run: ./no-such-program}
          - {name: fine, run: "true"}
    """,
    )
    assert result["raises"].status is Status.FAILED and result["raises"].exit_code == 1
    assert "RuntimeError: kaboom in f" in result["raises"].error
    assert result["segfault"].status is Status.CRASHED
    assert "killed by signal 11" in result["segfault"].error
    assert result["missing"].status is Status.FAILED and "no-such-program" in result["missing"].error
    # `true` exits 0 without compiling anything: no false green for it either.
    assert result["fine"].status is Status.NO_COMPILE
    assert result["fine"].error == "compiled nothing: no trace files were written"


# Starts a child of its own, notes its pid, and never ends: a timeout must kill both.
HANG = textwrap.dedent("""\
    import subprocess, time
    child = subprocess.Popen(["sleep", "300"])
    open("child.pid", "w").write(str(child.pid))
    time.sleep(300)
""")


def test_hang_past_timeout_kills_the_whole_process_group(tmp_path):
    (tmp_path / "hang.py").write_text(HANG)
    started = time.monotonic()
    result = run_check(tmp_path, "entrypoints: [{name: hang, run: python hang.py, timeout: 2}]\n")
    assert time.monotonic() - started < 60
    entry = result["hang"]
    assert entry.status is Status.TIMEOUT
    assert "timed out after 2 s; process group killed" in entry.error
    child = int((tmp_path / "child.pid").read_text())
    assert not alive(child)


def alive(pid: int) -> bool:
    """Running, and not a zombie waiting for a reaper (PID 1 in a container may never reap)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().split(") ", 1)[1][0] != "Z"


def test_megabytes_of_output_keep_only_the_tail(tmp_path):
    result = run_check(
        tmp_path,
        """\
        entrypoints:
          - name: chatty
            run: "python -c 'import sys; sys.stderr.write(\\"x\\" * 5_000_000 + \\"\\\\nTHE END\\\\n\\"); sys.exit(3)'"
    """,
    )
    entry = result["chatty"]
    assert entry.status is Status.FAILED and entry.exit_code == 3
    assert entry.error.endswith("THE END") and len(entry.error) < 20_000


@pytest.mark.parametrize(("jobs", "overlap"), [(2, True), (1, False)])
def test_jobs_run_entrypoints_side_by_side_reported_in_config_order(tmp_path, jobs, overlap):
    stamp = "python -c 'import time; print(time.time())'"
    body = "entrypoints:\n" + "".join(
        f'  - {{name: {n}, run: "{stamp} > {n}.start; sleep 1; {stamp} > {n}.end"}}\n' for n in ("a", "b")
    )
    result = run_check(tmp_path, body, jobs=jobs)
    assert list(result) == ["a", "b"]
    assert all(e.status is Status.NO_COMPILE for e in result.values())  # ran cleanly, compiled nothing
    start = {n: float((tmp_path / f"{n}.start").read_text()) for n in "ab"}
    end = {n: float((tmp_path / f"{n}.end").read_text()) for n in "ab"}
    assert (start["a"] < end["b"] and start["b"] < end["a"]) is overlap


def test_entrypoint_selection_and_shards(tmp_path):
    body = "entrypoints:\n" + "".join(f"  - {{name: e{i}, run: 'true'}}\n" for i in range(5))
    assert list(run_check(tmp_path, body, only=("e3",))) == ["e3"]
    from gbbot.checks.tree import Shard

    slices = [list(run_check(tmp_path, body, shard=Shard(i, 2))) for i in (1, 2)]
    assert slices == [["e0", "e2", "e4"], ["e1", "e3"]]


def test_cli_exit_code_when_an_entrypoint_fails(tmp_path, capsys):
    write_config(tmp_path, "entrypoints: [{name: bad, run: 'exit 4'}]\n")
    assert main(["check", "--root", str(tmp_path), "--quiet"]) == 1
    assert "did not run cleanly: bad" in capsys.readouterr().err
    assert main(["check", "--root", str(tmp_path), "--quiet", "--fail-on", "none"]) == 0
