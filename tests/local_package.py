"""A small pure-Python package that only a test repository's requirements name, as a wheel written
by hand (PEP 427), so installing it needs no build backend, no index and no network.

`tinydep.scale(x)` calls `describe(x)`. In 1.0 `describe` prints: a graph break inside a
third-party package, one call below the function the repository compiles. 2.0 (the release a
dependency-bump pull request moves to) no longer prints, and reads a tensor as a Python number
in `scale` instead: one break fixed, another one new, without a line of the repository changing.

And the virtual environment a test installs into (a job's, a user's), with pip, made offline.
"""

from __future__ import annotations

import base64
import ensurepip
import hashlib
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

TINYDEP = """\
def describe(x):
    print("tinydep: shape", tuple(x.shape))
    return x


def scale(x):
    return describe(x) * 3
"""
TINYDEP_2 = """\
def describe(x):
    return x


def scale(x):
    peak = x.abs().max().item()
    return describe(x) * 3 / max(peak, 1.0)
"""
CONTENTS = {"1.0": TINYDEP, "2.0": TINYDEP_2}


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def tinydep_wheel(directory: Path, version: str = "1.0") -> Path:
    """A pure-Python wheel, written as the format says (PEP 427): no build backend, no index. 2.0
    has its own contents; any other version is 1.0's."""
    files = {
        "tinydep/__init__.py": CONTENTS.get(version, TINYDEP).encode(),
        f"tinydep-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: tinydep\nVersion: {version}\n".encode(),
        f"tinydep-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = f"tinydep-{version}.dist-info/RECORD"
    lines = [record_line(p, d) for p, d in files.items()] + [f"{record},,"]
    files[record] = ("\n".join(lines) + "\n").encode()
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / f"tinydep-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


# A repository whose compiled model calls tinydep, which its requirements.txt installs from the
# wheels it vendors (REQUIREMENTS.format(version="1.0")): the setup and dependency-bump tests'.
CONFIG = """\
version: 1
setup:
  - pip install -r requirements.txt
entrypoints:
  - name: forward
    call: model:forward
fail_on: new
"""
REQUIREMENTS = "--no-index\n--find-links vendor\ntinydep=={version}\n"
MODEL = """\
import torch
import tinydep


def block(x):
    x = tinydep.scale(x)
    return x + 1


def f(x):
    x = x * 2
    return block(x)


def forward():
    return torch.compile(f)(torch.ones(3))
"""


def write_tinydep_project(repo: Path) -> None:
    """The files of main for a bump of tinydep: both wheels vendored, the config, the model, and
    requirements.txt naming 1.0."""
    tinydep_wheel(repo / "vendor", "1.0")
    tinydep_wheel(repo / "vendor", "2.0")
    (repo / ".gbbot.yml").write_text(CONFIG)
    (repo / "model.py").write_text(MODEL)
    (repo / "requirements.txt").write_text(REQUIREMENTS.format(version="1.0"))


def venv_with_pip(where: Path) -> Path:
    """A fresh virtual environment with pip, as `python -m venv` makes one, in a second instead of
    ten: the pip wheel the standard library bundles, installed by this interpreter's pip without
    compiling bytecode (ensurepip compiles every module). Its python."""
    venv.create(where, with_pip=False)
    python = where / "bin" / "python"
    [wheel] = (Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl")
    install = ["install", "-q", "--no-compile", "--no-index", "--no-deps", str(wheel)]
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), *install], check=True, capture_output=True)
    return python
