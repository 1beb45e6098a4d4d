"""The `call:` launcher, run in a fresh process: what a user reads when the target is not there."""

from __future__ import annotations

import textwrap

from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import parse_config
from tests.cli_helpers import write


def run(root, body: str):
    """`gbbot check` with the launcher in a fresh process: a warm server would import torch."""
    write(root, {".gbbot.yml": "version: 1\nrunner: {warm: false}\n" + textwrap.dedent(body)})
    config = parse_config((root / ".gbbot.yml").read_text())
    return check(root, config, CheckOptions())


def test_a_missing_call_target_is_one_line(tmp_path):
    write(tmp_path, {"model.py": "def main():\n    return 1\n"})
    result = run(
        tmp_path,
        """\
        entrypoints:
          - {name: nomodule, call: 'nowhere.bench:main'}
          - {name: noattr, call: 'model:mian'}
        """,
    )
    by_name = {e.name: e for e in result.entrypoints}
    assert by_name["nomodule"].error.strip().splitlines()[-1] == (
        "gbbot: call target 'nowhere.bench:main' not found: ModuleNotFoundError: No module named 'nowhere'"
    )
    assert "Traceback" not in by_name["noattr"].error
    assert "has no attribute 'mian'" in by_name["noattr"].error


IMPORTS_A_MISSING_PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/bench.py": "from pkg import layers\n\n\ndef main():\n    return layers.ready()\n",
    "pkg/layers.py": "import einops_not_installed\n\n\ndef ready():\n    return 1\n",
    "pkg/model.py": "from pkg import layers\n\n\nclass Net:\n    pass\n",
}


def test_an_import_failure_shows_the_users_frames_only(tmp_path):
    write(tmp_path, IMPORTS_A_MISSING_PACKAGE)
    result = run(
        tmp_path,
        """\
        entrypoints:
          - {name: bench, call: 'pkg.bench:main'}
          - {name: net, model: 'pkg.model:Net', inputs: [[1]]}
        """,
    )
    for entrypoint in result.entrypoints:
        error = entrypoint.error or ""
        assert error.splitlines()[-1] == "ModuleNotFoundError: No module named 'einops_not_installed'", error
        # the user's chain of imports, in order, and nothing of gbbot's launcher or importlib
        files = [line.split('"')[1] for line in error.splitlines() if line.lstrip().startswith('File "')]
        target = "pkg/bench.py" if entrypoint.name == "bench" else "pkg/model.py"
        assert [f.replace(str(tmp_path) + "/", "") for f in files] == [target, "pkg/layers.py"], error
        assert "launch.py" not in error and "<frozen importlib" not in error, error


def test_a_module_the_setup_installs_says_to_run_setup(tmp_path, capsys):
    from gbbot.main import main

    write(
        tmp_path,
        {
            **IMPORTS_A_MISSING_PACKAGE,
            "requirements.txt": "numpy>=1.26\neinops-not-installed==0.8  # the layers need it\n",
            ".gbbot.yml": "version: 1\nrunner: {warm: false}\nsetup: ['pip install -r requirements.txt']\n"
            "entrypoints:\n  - {name: bench, call: 'pkg.bench:main'}\n",
        },
    )
    main(["check", "--root", str(tmp_path)])
    err = capsys.readouterr().err
    assert (
        "bench: no module named 'einops_not_installed', which the config's setup: installs; "
        "locally setup runs only when asked: run `gbbot check --setup`"
    ) in err


def test_a_module_the_setup_does_not_install_gets_no_setup_hint(tmp_path, capsys):
    from gbbot.main import main

    write(
        tmp_path,
        {
            **IMPORTS_A_MISSING_PACKAGE,
            ".gbbot.yml": "version: 1\nrunner: {warm: false}\nsetup: ['pip install numpy']\n"
            "entrypoints:\n  - {name: bench, call: 'pkg.bench:main'}\n",
        },
    )
    main(["check", "--root", str(tmp_path)])
    assert "--setup" not in capsys.readouterr().err
