"""`pytest:` entrypoints and the pytest plugin: each break is tagged with the test that produced it,
a failing test fails its entrypoint, and `pytest --gbbot` alone prints the breaks per test."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gbbot.analysis import report
from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import parse_config
from gbbot.core.model import Status
from tests.cli_helpers import write

REPO = {
    "pytest.ini": "[pytest]\n",
    "pkg/__init__.py": "",
    "pkg/model.py": """\
        import torch


        @torch.compile(backend="eager")  # a plain `pytest` run compiles too: no kernels to build
        def clean(x):
            return torch.relu(x) * 2


        @torch.compile(backend="eager")
        def noisy(x):
            print("noisy")
            return x + 1
    """,
    "tests/test_model.py": """\
        import torch

        from pkg.model import clean, noisy


        def test_clean():
            assert clean(torch.ones(3)).tolist() == [2.0, 2.0, 2.0]


        def test_breaks():
            assert noisy(torch.ones(2)).tolist() == [2.0, 2.0]
    """,
    "tests/test_failing.py": """\
        import torch

        from pkg.model import clean


        def test_wrong_answer():
            assert clean(torch.ones(1)).item() == 3.0, "clean doubles"
    """,
}
CONFIG = """\
    version: 1
    entrypoints:
      - {name: model-tests, pytest: tests/test_model.py}
      - {name: only-breaking, pytest: [tests/test_model.py, -k, breaks]}
      - {name: failing, pytest: tests/test_failing.py}
"""


def test_breaks_are_attributed_to_the_test_that_produced_them_and_a_failing_test_fails(tmp_path):
    write(tmp_path, {**REPO, ".gbbot.yml": CONFIG})
    config = parse_config((tmp_path / ".gbbot.yml").read_text())
    result = check(tmp_path, config, CheckOptions())
    entries = {e.name: e for e in result.entrypoints}

    model = entries["model-tests"]
    assert model.status is Status.OK, model.error
    assert [(b.function, b.code, b.tests) for b in model.breaks] == [
        ("noisy", 'print("noisy")', ("tests/test_model.py::test_breaks",))
    ]
    assert [b.tests for b in entries["only-breaking"].breaks] == [("tests/test_model.py::test_breaks",)]

    failing = entries["failing"]
    assert failing.status is Status.FAILED
    assert "1 failing test:\n  tests/test_failing.py::test_wrong_answer: AssertionError: clean doubles" in failing.error

    saved = tmp_path / "report.json"
    report.write(result, saved)
    assert report.load(saved) == result  # `tests` survives the schema and the round trip
    data = json.loads(saved.read_text())
    assert [b.get("tests") for e in data["entrypoints"] for b in e["breaks"]] == [
        ["tests/test_model.py::test_breaks"],
        ["tests/test_model.py::test_breaks"],
    ]


def test_no_tests_selected_fails_the_entrypoint_saying_why(tmp_path):
    write(
        tmp_path, {**REPO, ".gbbot.yml": "version: 1\nentrypoints: [{name: none, pytest: tests -k nothing_matches}]\n"}
    )
    (entry,) = check(tmp_path, parse_config((tmp_path / ".gbbot.yml").read_text()), CheckOptions()).entrypoints
    assert entry.status is Status.FAILED and entry.exit_code == 5
    assert "pytest ran no tests: none collected, or all deselected" in entry.error


def pytest_in(repo, *args: str) -> subprocess.CompletedProcess:
    """A plain pytest run in `repo`; the trace directory the plugin makes lands in repo/tmp."""
    (repo / "tmp").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("TORCH_TRACE", "GBBOT_MODE", "PYTEST_ADDOPTS")}
    env["TMPDIR"] = str(repo / "tmp")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_pytest_gbbot_alone_prints_the_breaks_per_test_and_without_the_flag_does_nothing(tmp_path):
    write(tmp_path, REPO)
    traced = pytest_in(tmp_path, "-p", "gbbot.child.pytest_plugin", "--gbbot", "tests/test_model.py")
    assert traced.returncode == 0, traced.stdout + traced.stderr
    summary = traced.stdout.split("gbbot: graph breaks per test", 1)[1]
    assert "tests/test_model.py::test_breaks: 1 graph break\n" in summary
    assert 'pkg/model.py:11 in noisy: print("noisy")' in summary
    assert "test_clean" not in summary and "1 test without graph breaks" in summary
    assert f"trace: {tmp_path / 'tmp'}/gbbot-pytest-" in summary  # set before the tests imported torch

    plain = pytest_in(tmp_path, "-p", "gbbot.child.pytest_plugin", "tests/test_model.py")
    assert plain.returncode == 0 and "graph breaks per test" not in plain.stdout


def test_a_pytest_run_names_its_running_test_in_the_progress_line_and_when_it_times_out(tmp_path, capsys):
    from gbbot.edges.console import progress_printer

    files = {
        "tests/test_slow.py": "import time\n\ndef test_quick():\n    pass\n\ndef test_stuck():\n    time.sleep(120)\n",
        ".gbbot.yml": "version: 1\nentrypoints: [{name: suite, pytest: tests/test_slow.py, timeout: 8}]\n",
    }
    write(tmp_path, files)
    config = parse_config((tmp_path / ".gbbot.yml").read_text())
    (entry,) = check(tmp_path, config, CheckOptions(), progress_printer(1, heartbeat_s=1.0)).entrypoints
    assert entry.status is Status.TIMEOUT
    assert (
        "timed out after 8 s" in entry.error and "the test running then: tests/test_slow.py::test_stuck" in entry.error
    )
    heartbeats = [line for line in capsys.readouterr().err.splitlines() if "entrypoints finished" in line]
    assert any(line.endswith("; running suite: tests/test_slow.py::test_stuck") for line in heartbeats), heartbeats
