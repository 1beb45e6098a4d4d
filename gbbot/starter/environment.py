"""`gbbot init`'s `setup:` proposal: what the repository says it installs, read from the files at
its root (`requirements*.txt`, `pyproject.toml`, `setup.py`, `setup.cfg`, `environment.yml`).
Nothing is installed or run; `found` reads, `setup_lines` is pure."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

PREFERRED = ("requirements.txt", "requirements-cpu.txt", "requirements/base.txt", "requirements/main.txt")
PACKAGE_FILES = ("pyproject.toml", "setup.py", "setup.cfg")
CONDA_FILES = ("environment.yml", "environment.yaml")
TORCH = re.compile(r"^\s*torch\s*(?P<spec>[=<>!~][^;#\s]*)?", re.MULTILINE)
PYTEST = re.compile(r"^\s*pytest\s*([=<>!~;#]|$)", re.MULTILINE)
MAX_READ = 200_000  # a requirements file is a few KB
PROJECT_TABLE = re.compile(r"^\[(project|tool\.poetry)\]", re.MULTILINE)
WIDTH = 98


@dataclass(frozen=True)
class EnvironmentFiles:
    requirements: tuple[str, ...] = ()  # repo-relative, sorted
    package: str | None = None  # the first of PACKAGE_FILES there is
    has_project: bool = False  # pyproject.toml has a [project] (or poetry) table: pip can install it
    src_layout: bool = False
    conda: str | None = None
    torch: dict[str, str] | None = None  # requirements file → its torch specifier ("" when unpinned)
    pytest: tuple[str, ...] = ()  # the requirements files that name pytest


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:MAX_READ]
    except OSError:
        return ""


def found(root: Path) -> EnvironmentFiles:
    """What the root of `root` holds that says what to install."""
    names = sorted(p.name for p in root.glob("requirements*.txt") if p.is_file())
    names += sorted(f"requirements/{p.name}" for p in (root / "requirements").glob("*.txt") if p.is_file())
    package = next((n for n in PACKAGE_FILES if (root / n).is_file()), None)
    pyproject = _read(root / "pyproject.toml") if (root / "pyproject.toml").is_file() else ""
    installable = package in ("setup.py", "setup.cfg") or bool(PROJECT_TABLE.search(pyproject))
    torch = {name: m["spec"] or "" for name in names if (m := TORCH.search(_read(root / name)))}
    pytest = tuple(name for name in names if PYTEST.search(_read(root / name)))
    return EnvironmentFiles(
        requirements=tuple(names),
        package=package,
        has_project=installable,
        src_layout=(root / "src").is_dir(),
        conda=next((n for n in CONDA_FILES if (root / n).is_file()), None),
        torch=torch or None,
        pytest=pytest,
    )


def _chosen_requirements(files: EnvironmentFiles) -> str | None:
    first = files.requirements[0] if files.requirements else None
    return next((n for n in PREFERRED if n in files.requirements), first)


def setup_lines(files: EnvironmentFiles, tests: bool = False) -> list[str]:
    """Pure: the starter config's `setup:` block (commented out when there is nothing to propose).
    `tests`: a pytest: entrypoint is proposed, so pytest is installed too."""
    steps, notes = [], []
    chosen = _chosen_requirements(files)
    steps += [f"pip install -r {chosen}"] if chosen else []
    if tests and chosen not in files.pytest:
        steps.append(f"pip install -r {files.pytest[0]}" if files.pytest else "pip install pytest")
    if chosen:
        others = [n for n in files.requirements if f"pip install -r {n}" not in steps]
        if others:
            notes.append(f"Also here: {', '.join(others)}; add a step for those the entrypoints need.")
    if files.package and files.has_project:
        steps.append("pip install -e .")
        if files.src_layout:
            notes.append(
                "A src/ layout: a diff's merge-base then imports this checkout's installed package; "
                "keep its dependencies in a requirements file and drop this step if that matters."
            )
    for name, spec in sorted((files.torch or {}).items()):
        if spec:
            said = f"{name} names torch{spec}: pip keeps the installed torch when it satisfies that, else installs it"
        else:
            said = f"{name} names torch without a version: the torch already installed stays"
        notes.append(
            f"{said} (the report records the one the entrypoints ran). PyPI's Linux torch is a CUDA build of "
            "several GB; on CPU runners add --extra-index-url https://download.pytorch.org/whl/cpu."
        )
    if files.conda:
        notes.append(
            f"{files.conda} is a conda environment, which the action's image cannot build: create it in "
            "your own job and run `gbbot action` there (docs/github.md), or list its pip packages in a "
            "requirements file."
        )
    head = ["# What the entrypoints need installed, run once before them (no token, same environment):"]
    head += [f"#   {line}" for note in notes for line in textwrap.wrap(note, WIDTH)]
    if not steps:
        return [*head, "# setup:", "#   - pip install -r requirements.txt"]
    return [*head, "setup:", *(f"  - {step}" for step in steps)]
