"""The release path, as a user meets it: gbbot built as a wheel, installed into a fresh virtual
environment beside the pinned torch, and the bundled example checked with the installed command
(not this checkout: the example runs from a copy elsewhere, with nothing of the source on sys.path).
pip's own cache is used as it is, so a second run installs from it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

from tests.conftest import ROOT

TORCH_PIN = next(
    line.split("#")[0].strip()
    for line in (ROOT / "requirements-dev.txt").read_text().splitlines()
    if line.startswith("torch==")
)


def _run(argv: list[str], **options) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, **options)
    assert done.returncode == 0, f"{argv}: {done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


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
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    # PIP_CONSTRAINT (set by .ci/run) keeps every install on the pinned CPU torch
    _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel), TORCH_PIN], cwd=tmp_path, env=environ)
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
