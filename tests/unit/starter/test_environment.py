"""`gbbot init` proposes `setup:` from what the repository's root says it installs."""

from __future__ import annotations

from pathlib import Path

from gbbot.core.config import parse_config
from gbbot.starter import discover, environment, template

COMPILES = "import torch\n\n\n@torch.compile\ndef step():\n    return torch.ones(2)\n"


def repo(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in {"model.py": COMPILES, **files}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def proposed(root: Path) -> tuple[str, tuple[str, ...]]:
    text, _ = template.starter(discover.scan(root), environment.found(root))
    return text, parse_config(text).setup  # what init writes, check reads


def test_requirements_and_a_package_become_two_steps(tmp_path):
    root = repo(tmp_path, {"requirements.txt": "einops\n", "pyproject.toml": '[project]\nname = "m"\n'})
    _, steps = proposed(root)
    assert steps == ("pip install -r requirements.txt", "pip install -e .")


def test_requirements_in_a_folder_and_the_others_are_named(tmp_path):
    root = repo(tmp_path, {"requirements/base.txt": "einops\n", "requirements/dev.txt": "pytest\n"})
    text, steps = proposed(root)
    assert steps == ("pip install -r requirements/base.txt",)
    assert "#   Also here: requirements/dev.txt" in text


def test_a_pyproject_without_a_project_is_not_installed(tmp_path):
    root = repo(tmp_path, {"pyproject.toml": "[tool.ruff]\nline-length = 100\n", "requirements-dev.txt": "x\n"})
    _, steps = proposed(root)
    assert steps == ("pip install -r requirements-dev.txt",)


def test_a_named_torch_is_said_to_be_the_one_installed(tmp_path):
    root = repo(tmp_path, {"requirements.txt": "numpy\ntorch==2.4.1 ; python_version >= '3.9'\n"})
    text, _ = proposed(root)
    said = " ".join(line.removeprefix("#").strip() for line in text.splitlines())
    assert "requirements.txt names torch==2.4.1: pip keeps the installed torch when it satisfies that" in said


def test_an_unpinned_torch_is_said_to_stay(tmp_path):
    text, _ = proposed(repo(tmp_path, {"requirements.txt": "torch\nsentencepiece\n"}))
    said = " ".join(line.removeprefix("#").strip() for line in text.splitlines())
    assert "requirements.txt names torch without a version: the torch already installed stays" in said


def test_nothing_to_install_leaves_setup_as_a_comment(tmp_path):
    text, steps = proposed(repo(tmp_path, {}))
    assert steps == ()
    assert "# setup:\n#   - pip install -r requirements.txt\n" in text


def test_a_conda_environment_is_pointed_at_the_own_job_route(tmp_path):
    text, steps = proposed(
        repo(tmp_path, {"environment.yml": "name: x\ndependencies: [python=3.11]\n", "setup.py": ""})
    )
    assert steps == ("pip install -e .",)
    assert "conda environment" in text and "docs/github.md" in text
