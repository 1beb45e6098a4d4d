"""The repository's code runs as another user (`GBBOT_RUN_AS`), as gbbot's image runs it: gbbot as
root, the setup steps and entrypoints as an unprivileged user. One `gbbot check --setup` run, as a
process, whose setup step attacks gbbot's installation and Python's, whose second step
`pip install`s a wheel the repository vendors, and whose entrypoint probes gbbot's process.

These tests need root (to create the user with `useradd` and for gbbot to drop to it); elsewhere
they are skipped, saying so. CI runs them as root.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import gbbot
from tests.cli_helpers import write
from tests.conftest import git
from tests.local_package import tinydep_wheel

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("useradd") is None,
    reason="needs root and useradd: gbbot drops to another user only as root",
)

USER = "gbbot-test-runner"
STDLIB_TARGET = Path(json.__file__)  # a standard-library module gbbot imports
GBBOT_TARGET = Path(gbbot.__file__)  # gbbot's own package, imported by every later gbbot
CONFIG = """\
version: 1
setup:
  - python attack.py
  - pip install --no-index vendor/tinydep-1.0-py3-none-any.whl
entrypoints:
  - name: probe
    run: python probe.py
  - name: probe-warm
    call: probe:main
fail_on: none
"""
# A comment for the standard library (it is this machine's, shared); code for gbbot's package,
# which would write a marker file from inside every later gbbot process.
ATTACK = """\
import sys
targets = {
    {stdlib!r}: "\\n# appended by a setup step\\n",
    {package!r}: "\\nopen({marker!r}, 'w').write('ran inside gbbot')\\n",
}
for path, payload in targets.items():
    try:
        with open(path, "a") as f:
            f.write(payload)
        print("WROTE", path)
    except OSError as exc:
        print("DENIED", path, type(exc).__name__)
"""
PROBE = """\
import json, os, signal
import tinydep
import torch


def parent(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def main():
    torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))  # its trace: a directory it may write
    pid = os.getpid()
    while pid > 1:  # up to the gbbot process (`python -m gbbot`), through a shell or the warm server
        pid = parent(pid)
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"-m\\0gbbot" in f.read():
                break
    found = {"uid": os.getuid(), "gbbot": pid, "tinydep": tinydep.__file__}
    found["home_owner"] = os.stat(os.environ["HOME"]).st_uid
    try:
        os.kill(pid, signal.SIGSTOP)
        os.kill(pid, signal.SIGCONT)
        found["signal"] = "sent"
    except PermissionError:
        found["signal"] = "denied"
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            found["environ"] = f.read().decode(errors="replace")
    except PermissionError:
        found["environ"] = "denied"
    print("PROBE", json.dumps(found), flush=True)


if __name__ == "__main__":
    main()
"""


def ensure_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=True)
        return pwd.getpwnam(USER)


@pytest.fixture(scope="module")
def run():
    """One `gbbot check --setup` as root with GBBOT_RUN_AS, in a repository the user can read (a
    pytest tmp_path is root's alone); both attacked files are put back whatever happened."""
    user = ensure_user()
    opened = reachable(Path(os.path.realpath(sys.executable)), Path(sys.prefix))
    reach = [sys.executable, "-c", "import torch"]
    if subprocess.run(reach, user=user.pw_uid, group=user.pw_gid, extra_groups=[], capture_output=True).returncode:
        close(opened)
        pytest.skip(f"{USER} cannot run this Python with torch")
    saved = {path: path.read_bytes() for path in (STDLIB_TARGET, GBBOT_TARGET)}
    top = Path(tempfile.mkdtemp(prefix="gbbot-run-as-test-"))
    try:
        top.chmod(0o755)
        repo, marker = top / "repo", top / "marker"
        repo.mkdir()
        git(repo, "init", "-q")
        attack = ATTACK.replace("{stdlib!r}", repr(str(STDLIB_TARGET))).replace("{package!r}", repr(str(GBBOT_TARGET)))
        write(
            repo,
            {".gbbot.yml": CONFIG, "attack.py": attack.replace("{marker!r}", repr(str(marker))), "probe.py": PROBE},
        )
        tinydep_wheel(repo / "vendor")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "a repository whose setup attacks gbbot")
        report = top / "report.json"
        env = {**os.environ, "GBBOT_RUN_AS": USER}
        done = subprocess.run(
            [sys.executable, "-m", "gbbot", "check", "--setup", "--json", str(report), "--keep-traces", str(top / "work")],
            cwd=repo, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        after = {path: path.read_bytes() for path in saved}
        # a later gbbot process: would the appended code run in it?
        later = subprocess.run([sys.executable, "-m", "gbbot", "--version"], capture_output=True, text=True, timeout=60)
        yield {
            "done": done,
            "report": report,
            "after": after,
            "saved": saved,
            "marker": marker,
            "later": later,
            "user": user,
        }
    finally:
        for path, data in saved.items():
            if path.read_bytes() != data:
                path.write_bytes(data)
        shutil.rmtree(top, ignore_errors=True)
        close(opened)


def reachable(*paths: Path) -> dict[Path, int]:
    """The image's Python is under /usr/local, which everyone reaches; a machine's may be under
    root's home (pyenv): its directories are made traversable (not listable) while the tests run.
    Returns what was changed, with the modes to put back."""
    changed: dict[Path, int] = {}
    for path in paths:
        for parent in path.parents:
            mode = parent.stat().st_mode
            if not mode & stat.S_IXOTH and parent not in changed:
                changed[parent] = stat.S_IMODE(mode)
                parent.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
    return changed


def close(changed: dict[Path, int]) -> None:
    for path, mode in changed.items():
        path.chmod(mode)


def probes(run) -> dict[str, dict]:
    """What each entrypoint found: `probe` a fresh process (through `sh -c`), `probe-warm` a child
    of the warm server."""
    data = json.loads(run["report"].read_text())
    found = {}
    for entry in data["entrypoints"]:
        assert entry["status"] == "ok", entry
        stdout = (run["report"].parent / "work" / entry["name"] / "stdout.txt").read_text()
        line = next(x for x in stdout.splitlines() if x.startswith("PROBE "))
        found[entry["name"]] = json.loads(line.removeprefix("PROBE "))
    assert set(found) == {"probe", "probe-warm"}
    return found


def test_a_setup_step_cannot_append_to_python_or_gbbot(run):
    """Attack 2: a setup step appends to a standard-library module and to gbbot's package."""
    done = run["done"]
    assert done.returncode == 0, done.stderr
    assert f"DENIED {STDLIB_TARGET} PermissionError" in done.stderr
    assert f"DENIED {GBBOT_TARGET} PermissionError" in done.stderr
    assert run["after"] == run["saved"]  # neither file changed
    assert run["later"].returncode == 0 and not run["marker"].exists()  # nothing ran in a later gbbot


def test_an_entrypoint_cannot_signal_gbbot_or_read_its_proc(run):
    for found in probes(run).values():
        assert found["uid"] == run["user"].pw_uid
        assert found["signal"] == "denied"
        assert found["environ"] == "denied"


def test_a_setup_step_installs_for_the_entrypoints(run):
    """`pip install` in a setup step goes into the user's own venv, which the entrypoints use."""
    assert "Successfully installed tinydep-1.0" in run["done"].stderr
    for found in probes(run).values():
        assert "/venv/lib/" in found["tinydep"] and found["tinydep"].endswith("tinydep/__init__.py")
        assert found["home_owner"] == run["user"].pw_uid  # a HOME it may write
