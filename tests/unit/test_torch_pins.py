"""Every place this project installs torch for its tests or demo pins torch==2.13.0, the image
the newer release CI also tests: an open range (or a bare `torch`) lets pip fetch a CUDA build of
several GB. The others name no torch."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TORCH_REQUIREMENT = re.compile(r"^\s*torch(?![\w.-])\s*(?P<spec>[^#;\s]*)", re.IGNORECASE)


def torch_specs(lines: list[str]) -> list[str]:
    return [m["spec"] for line in lines if (m := TORCH_REQUIREMENT.match(line))]


def test_the_test_and_demo_requirements_pin_torch_exactly():
    lines = (ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()
    assert torch_specs(lines) == ["==2.13.0"]


def test_gbbot_itself_depends_on_no_torch():
    """pyproject.toml's requirement strings (dependencies and any extras): none is a torch."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    requirements = re.findall(r'^\s*"([^"]+)",?\s*(?:#.*)?$', text, re.MULTILINE)
    assert "PyGithub>=2.1" in requirements  # the list is read at all
    assert torch_specs(requirements) == []


def test_the_image_pins_the_torch_of_cis_second_tier_and_the_docker_tests_the_pinned_one():
    """The image's default is exact, and is the release whose real-torch and warm-up tests CI runs
    in its second environment; the Docker tests' user image installs the tests' pin offline."""
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    tested = torch_specs((ROOT / ".ci/torch-next-constraint.txt").read_text(encoding="utf-8").splitlines())
    assert re.findall(r"^ARG TORCH_SPEC=(.*)$", dockerfile, re.MULTILINE) == [f"torch{spec}" for spec in tested]
    assert tested[0].startswith("==")
    docker_tests = (ROOT / "tests/e2e/test_docker.py").read_text(encoding="utf-8")
    assert re.findall(r'^TORCH = "(.*)"$', docker_tests, re.MULTILINE) == ["torch==2.13.0"]


def test_no_other_requirement_file_in_the_repository_names_torch():
    """Requirement files the tests install (a test project's, the local wheel's) stay torch-free."""
    found = [
        path.relative_to(ROOT).as_posix()
        for path in ROOT.rglob("*requirements*.txt")
        if ".venv" not in path.parts and torch_specs(path.read_text(encoding="utf-8").splitlines())
    ]
    assert found == ["requirements-dev.txt"]


def test_ci_constrains_every_pip_run_it_starts_to_the_pinned_torch():
    """.ci/run exports PIP_CONSTRAINT before its first pip install, so a test that installs a
    project's requirements (tests/e2e/action/test_setup.py) cannot pull another torch either."""
    run = (ROOT / ".ci/run").read_text(encoding="utf-8")
    export = run.index('export PIP_CONSTRAINT="$PWD/.ci/torch-constraint.txt"')
    assert export < run.index("pip install")
    constraint = (ROOT / ".ci/torch-constraint.txt").read_text(encoding="utf-8").splitlines()
    assert torch_specs(constraint) == ["==2.13.0"]


def test_ci_runs_the_real_torch_patterns_again_under_the_newer_torch_gbbot_reads():
    from gbbot.trace import wording

    run = (ROOT / ".ci/run").read_text(encoding="utf-8")
    second = run[run.index('export PIP_CONSTRAINT="$PWD/.ci/torch-next-constraint.txt"') :]
    assert "tests/e2e/test_patterns.py" in second and "pip install" in second
    constraint = (ROOT / ".ci/torch-next-constraint.txt").read_text(encoding="utf-8").splitlines()
    [spec] = torch_specs(constraint)
    assert spec.startswith("==") and spec != "==2.13.0"
    assert wording.support_note(spec.removeprefix("==")) is None  # a release gbbot reads without a caveat
    ci = (ROOT / ".github/workflows/ci.yml").read_text(encoding="utf-8")
    assert 'GBBOT_CI_NEXT_TORCH: "1"' in ci  # the GitHub job, which passes pytest arguments, asks for it
