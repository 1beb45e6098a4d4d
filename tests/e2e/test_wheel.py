"""The release path, as a user meets it: gbbot built as a wheel, installed into a fresh virtual
environment beside the pinned torch, and the bundled example checked with the installed command
(not this checkout: the example runs from a copy elsewhere, with nothing of the source on sys.path).
pip's own cache is used as it is, so a second run installs from it.

The pinned torch is the one this test runs with, and what it requires, linked into a directory
that the fresh environment reads through a .pth line: pip sees `torch==2.13.0` installed and does
not unpack its 700 MB again. Everything else the wheel requires pip installs from the wheel's own
metadata, so a requirement it fails to declare fails here (jinja2 excepted: torch requires it too)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.conftest import ROOT
from tests.local_package import venv_with_pip

TORCH_PIN = next(
    line.split("#")[0].strip()
    for line in (ROOT / "requirements-dev.txt").read_text().splitlines()
    if line.startswith("torch==")
)


def _run(argv: list[str], **options) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, **options)
    assert done.returncode == 0, f"{argv}: {done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _requires(name: str) -> set[str]:
    """`name` and the distributions it requires, as installed here (extras and setuptools left out)."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        dist = importlib.metadata.distribution(todo.pop())
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen or key == "setuptools":
            continue
        seen.add(key)
        for requirement in dist.requires or []:
            if "extra ==" not in requirement:
                todo.append(re.match(r"[A-Za-z0-9_.-]+", requirement)[0])
    return seen


def _torch_linked(into: Path) -> Path:
    """This interpreter's torch and what it requires, each distribution's top-level entries and
    its metadata directory linked into `into`."""
    into.mkdir()
    for name in _requires("torch"):
        dist = importlib.metadata.distribution(name)
        tops = {Path(str(f)).parts[0] for f in dist.files or () if not str(f).startswith("..")}
        for top in tops - {"__pycache__"}:
            source = Path(str(dist.locate_file(top)))
            if source.exists() and not (into / top).exists():
                (into / top).symlink_to(source)
    return into


def test_the_wheel_installs_beside_the_pinned_torch_and_checks_the_example(tmp_path: Path):
    # nothing of this checkout on the path: pip would take it for an installed gbbot and skip the wheel
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    dist = tmp_path / "dist"
    _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(ROOT)],
        cwd=tmp_path,
    )
    [wheel] = dist.glob("gbbot-*.whl")
    env_dir = tmp_path / "venv"
    bin_dir = venv_with_pip(env_dir).parent
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(env_dir), "platbase": str(env_dir)}))
    (purelib / "pinned-torch.pth").write_text(f"{_torch_linked(tmp_path / 'torch-site')}\n")
    # PIP_CONSTRAINT (set by .ci/run) keeps every install on the pinned CPU torch; no bytecode
    # compiled ahead (a third of pip's time here): Python compiles what the check imports
    install = ["install", "-q", "--no-compile", str(wheel), TORCH_PIN]
    _run([str(bin_dir / "python"), "-m", "pip", *install], cwd=tmp_path, env=environ)
    example = tmp_path / "example"
    shutil.copytree(ROOT / "examples", example)
    environ["PATH"] = f"{bin_dir}{os.pathsep}{environ.get('PATH', '')}"  # as `source venv/bin/activate`
    where = _run([str(bin_dir / "python"), "-c", "import gbbot; print(gbbot.__file__)"], env=environ, cwd=example)
    assert where.stdout.strip().startswith(str(env_dir)), where.stdout  # the installed copy, not ROOT
    report = tmp_path / "report.json"
    done = subprocess.run(
        [str(bin_dir / "gbbot"), "check", "--json", str(report), "-q"],
        capture_output=True,
        text=True,
        env=environ,
        cwd=example,
        timeout=600,
    )
    assert done.returncode == 1, done.stderr  # the example's breaks fail `fail_on: new` without a base
    found = json.loads(report.read_text())
    assert [e["status"] for e in found["entrypoints"]] == ["ok", "ok"], found["entrypoints"]
    assert found["torch_version"].startswith(TORCH_PIN.removeprefix("torch=="))
    assert len({b["fingerprint"] for e in found["entrypoints"] for b in e["breaks"]}) >= 5
