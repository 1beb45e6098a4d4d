"""A virtual environment over gbbot's Python: made without starting a process (venv.EnvBuilder,
no pip bootstrap), its own site-packages first, then gbbot's site directories (torch, pip,
setuptools, with their .pth files: editable installs) through a .pth file, and `pip`/`pip3`
shims that run gbbot's pip with the venv's interpreter. `pip install` there installs into the
venv and shadows gbbot's copy of a package (pip leaves the copy "outside environment" alone), so
nothing lands in gbbot's own environment. Used for the run-as user's venv (edges/runas) and for
each side's environment of a dependency-bump diff (checks/environments).
"""

from __future__ import annotations

import os
import site
import sysconfig
import venv as venv_module
from pathlib import Path

PIP_SCRIPT = "#!{python}\nimport sys\nfrom pip._internal.cli.main import main\nsys.exit(main())\n"
PTH_NAME = "gbbot-site.pth"


def purelib(venv: Path) -> Path:
    """The venv's own site-packages."""
    return Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))


def gbbot_site_dirs() -> tuple[str, ...]:
    """gbbot's site directories, in the order its interpreter reads them."""
    return tuple(p for p in site.getsitepackages() if os.path.isdir(p))


def create(venv: Path) -> Path:
    """Make the overlay venv at `venv` (no process: nothing of a repository's runs); its python."""
    venv_module.EnvBuilder(symlinks=True, with_pip=False).create(venv)
    added = "; ".join(f"site.addsitedir({p!r})" for p in gbbot_site_dirs())
    (purelib(venv) / PTH_NAME).write_text(f"import site; {added}\n")
    python = venv / "bin" / "python"
    for script in ("pip", "pip3"):
        path = venv / "bin" / script
        path.write_text(PIP_SCRIPT.format(python=python))
        path.chmod(0o755)
    return python


def environment(env: dict[str, str], venv: Path) -> dict[str, str]:
    """`env` with `venv` activated: VIRTUAL_ENV, and its bin/ first on PATH (`python`, `pip`)."""
    path = env.get("PATH", os.defpath)
    return {**env, "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{path}"}
