"""The suite's tiers (tests/tiers.py), on a small suite of their own run by a pytest subprocess:
a test under tests/e2e/ is slow without saying so, and any other test that starts torch, in its
own process or in a child, directly or behind a swallowed ImportError, fails saying where it
belongs, while finding torch without importing it still works. None of this starts torch."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.conftest import ROOT
from tests.no_torch.sitecustomize import HINT

FAST = """\
import importlib.util
import subprocess
import sys


def test_imports_torch():
    import torch  # noqa: F401


def test_starts_torch_in_a_child():
    subprocess.run([sys.executable, "-c", "import torch"], check=False)


def test_swallows_the_refusal():
    try:
        import torch.nn  # noqa: F401
    except ImportError:
        pass


def test_finds_torch_without_importing_it():
    here = importlib.util.find_spec("torch")
    there = subprocess.run(
        [sys.executable, "-c", "import importlib.util; print(importlib.util.find_spec('torch').origin)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert here.origin == there and there.endswith("__init__.py") and "site-packages" in there
    assert "torch" not in sys.modules


def test_nothing_to_do_with_torch():
    assert subprocess.run([sys.executable, "-c", "import json"]).returncode == 0
"""

SLOW = """\
import os
import sys


def test_is_slow_and_may_start_torch(request):
    assert request.node.get_closest_marker("slow")
    assert not any(type(f).__name__ == "RefuseTorch" for f in sys.meta_path)
    assert "gbbot-no-torch-" not in os.environ.get("PYTHONPATH", "")
"""


def suite(root: Path, files: dict[str, str]) -> Path:
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: end to end\n")
    (root / "conftest.py").write_text('pytest_plugins = ["tests.tiers"]\n')
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def pytest_in(root: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict[str, str]]:
    """Run pytest there with this checkout's tests package importable and without this session's
    own refusal (its directory is on PYTHONPATH while this test runs): the suite's tiers alone
    decide. Returns the run and each test's outcome, with the failure message."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    report = root / "report.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={report}", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    outcomes = {}
    if report.exists():
        for case in ET.parse(report).iter("testcase"):
            problem = case.find("failure")
            if problem is None:
                problem = case.find("error")
            outcomes[case.get("name")] = "passed" if problem is None else problem.get("message", "")
    return done, outcomes


def test_a_test_under_e2e_is_slow_and_any_other_cannot_start_torch(tmp_path):
    root = suite(tmp_path, {"tests/unit/test_fast.py": FAST, "tests/e2e/test_slow.py": SLOW})
    done, outcomes = pytest_in(root)
    assert done.returncode == 1, done.stdout + done.stderr
    assert outcomes["test_finds_torch_without_importing_it"] == "passed"
    assert outcomes["test_nothing_to_do_with_torch"] == "passed"
    assert outcomes["test_is_slow_and_may_start_torch"] == "passed"
    imported = outcomes["test_imports_torch"]
    assert "test_fast.py::test_imports_torch (call) started torch: this process imported torch." in imported
    assert imported.endswith(HINT)
    child = outcomes["test_starts_torch_in_a_child"]
    assert "started torch: pid " in child and "imported torch: -c" in child and child.endswith(HINT)
    assert (
        "test_swallows_the_refusal (call) started torch: this process imported torch."
        in outcomes["test_swallows_the_refusal"]
    )


def test_not_slow_leaves_out_everything_under_e2e(tmp_path):
    root = suite(tmp_path, {"tests/unit/test_fast.py": FAST, "tests/e2e/test_slow.py": SLOW})
    done, outcomes = pytest_in(root, "-m", "not slow", "-k", "nothing_to_do or is_slow")
    assert done.returncode == 0, done.stdout + done.stderr
    assert outcomes == {"test_nothing_to_do_with_torch": "passed"}


def test_a_module_that_imports_torch_cannot_be_collected_outside_e2e(tmp_path):
    root = suite(tmp_path, {"tests/unit/test_top.py": "import torch\n\n\ndef test_x():\n    pass\n"})
    done, _ = pytest_in(root, "--collect-only", "-q")
    assert done.returncode != 0
    assert "collecting the tests started torch: this process imported torch" in done.stderr
    assert HINT in done.stdout + done.stderr


NEXT = """\
import pytest

pytestmark = pytest.mark.torch_next


def test_needs_the_next_torch():
    pass
"""


def test_a_next_torch_test_is_deselected_not_skipped_unless_m_names_it(tmp_path):
    root = suite(tmp_path, {"tests/e2e/test_slow.py": SLOW, "tests/e2e/test_next.py": NEXT})
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: end to end\n    torch_next: the next torch\n")
    done, outcomes = pytest_in(root)  # the main run: the test is not reported at all
    assert done.returncode == 0 and "1 deselected" in done.stdout, done.stdout + done.stderr
    assert outcomes == {"test_is_slow_and_may_start_torch": "passed"}
    done, outcomes = pytest_in(root, "-m", "slow or torch_next")  # .ci/run's second environment
    assert outcomes == {"test_is_slow_and_may_start_torch": "passed", "test_needs_the_next_torch": "passed"}
