"""`setup:` steps: run in order in the repository, with the entrypoints' allow-listed environment,
their output folded in the log, and a failure that stops the run naming the step and its output."""

from __future__ import annotations

import io
import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gbbot.checks import setup
from gbbot.core.config import parse_config
from gbbot.core.errors import ConfigError, ExitCode
from gbbot.main import main

PY = sys.executable


def config_with(*steps: str, extra: str = ""):
    listed = "".join(f"  - {json.dumps(step)}\n" for step in steps)
    text = f"version: 1\nentrypoints:\n  - {{name: a, run: 'true'}}\nsetup:\n{listed}{extra}"
    return parse_config(text, ".gbbot.yml")


def log_to_text(actions: bool = False) -> tuple[setup.Log, io.StringIO]:
    out = io.StringIO()
    return setup.Log({"GITHUB_ACTIONS": "true"} if actions else {}, out), out


def test_steps_run_in_order_in_the_repository_without_the_token(tmp_path):
    config = config_with(
        "echo one >> order.txt",
        f"{PY} -c \"import os; open('env.txt', 'w').write(repr(sorted(os.environ)))\"",
        "echo two >> order.txt",
        extra="pass_env: [MY_INDEX]\n",
    )
    base = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GITHUB_TOKEN": "ghs_secret",
        "INPUT_TOKEN": "ghs_secret",
        "ACTIONS_RUNTIME_TOKEN": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "MY_INDEX": "https://pypi.example/simple",
    }
    log, out = log_to_text()
    done = setup.run(tmp_path, config, base, log)
    assert [s.command for s in done] == list(config.setup)
    assert (tmp_path / "order.txt").read_text().split() == ["one", "two"]
    seen = eval((tmp_path / "env.txt").read_text())  # a list of names the step printed
    assert "MY_INDEX" in seen and "PATH" in seen and "HOME" in seen
    assert not {"GITHUB_TOKEN", "INPUT_TOKEN", "ACTIONS_RUNTIME_TOKEN", "AWS_SECRET_ACCESS_KEY"} & set(seen)
    assert "gbbot setup 1/3: echo one >> order.txt" in out.getvalue()


def test_a_failing_step_stops_the_run_naming_the_step_and_showing_its_output(tmp_path):
    config = config_with(
        "echo first step ok",
        f"{PY} -c \"import sys; print('ERROR: No matching distribution found for tinydep==9.9'); sys.exit(1)\"",
        "touch never.txt",
    )
    log, out = log_to_text()
    with pytest.raises(setup.SetupFailed) as raised:
        setup.run(tmp_path, config, dict(os.environ), log)
    message = str(raised.value)
    assert message.startswith("setup failed: step 2 of 3, `")
    assert "exited 1; no entrypoint ran" in message
    assert "\n  | ERROR: No matching distribution found for tinydep==9.9" in message
    assert raised.value.exit_code == ExitCode.POLICY == 1
    assert not (tmp_path / "never.txt").exists()
    assert "first step ok" in out.getvalue()  # the log keeps what each step printed


def test_the_tail_is_the_end_of_a_long_output(tmp_path):
    config = config_with(f'{PY} -c "[print(i) for i in range(1000)]; raise SystemExit(3)"')
    with pytest.raises(setup.SetupFailed) as raised:
        setup.run(tmp_path, config, dict(os.environ), log_to_text()[0])
    lines = str(raised.value).splitlines()
    assert lines[-1] == "  | 999" and "  | 0" not in lines and len(lines) == 1 + setup.TAIL_LINES


def test_in_github_actions_each_step_is_a_group_whose_workflow_commands_are_not_obeyed(tmp_path):
    config = config_with("echo '::error::forged by the repository'", "echo fine")
    log, out = log_to_text(actions=True)
    setup.run(tmp_path, config, dict(os.environ), log)
    lines = out.getvalue().splitlines()
    begin = lines.index("::group::gbbot setup 1/2: echo '::error::forged by the repository'")
    stop = lines[begin + 1]
    assert stop.startswith("::stop-commands::") and len(stop) > len("::stop-commands::") + 16
    resume = f"::{stop.removeprefix('::stop-commands::')}::"
    forged = lines.index("::error::forged by the repository")
    assert begin + 1 < forged < lines.index(resume) < lines.index("::endgroup::")
    assert lines.count("::endgroup::") == 2


def test_a_failing_steps_output_cannot_pass_for_a_workflow_command_in_the_error(tmp_path):
    config = config_with("echo '::error title=forged::x'; echo '  ::set-output name=conclusion::success'; exit 1")
    with pytest.raises(setup.SetupFailed) as raised:
        setup.run(tmp_path, config, dict(os.environ), log_to_text(actions=True)[0])
    shown = str(raised.value).splitlines()[1:]
    assert shown == ["  | ::error title=forged::x", "  |   ::set-output name=conclusion::success"]
    assert not [line for line in shown if line.lstrip().startswith("::")]


def test_a_step_title_is_one_line_in_the_log():
    assert (
        setup.one_line("pip install \\\n  -r req.txt\n::warning::x %0A")
        == "pip install \\ -r req.txt ::warning::x %250A"
    )


def test_a_step_that_hangs_is_killed_with_what_it_started(tmp_path):
    config = config_with(f"{PY} -c 'import time; time.sleep(600)' & echo $! > child.pid; wait")
    with pytest.raises(setup.SetupFailed) as raised:
        setup.run(tmp_path, config, dict(os.environ), log_to_text()[0], timeout=1)
    assert "timed out after 1 s" in str(raised.value)
    child = int((tmp_path / "child.pid").read_text())
    assert gone_soon(child)


def gone_soon(pid: int, seconds: float = 10.0) -> bool:
    """A killed process leaves as soon as the kernel gets to it, which on a loaded machine is not
    always before the next line runs."""
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for a parent that is gone to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_gbbot_check_with_setup_stops_before_any_entrypoint(tmp_path, capsys, monkeypatch):
    (tmp_path / ".gbbot.yml").write_text(
        textwrap.dedent("""\
        version: 1
        setup: ["echo installing; exit 4"]
        entrypoints:
          - {name: a, run: "touch ran.txt"}
        """)
    )
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--root", str(tmp_path), "--setup"]) == 1
    err = capsys.readouterr().err
    assert "gbbot: error: setup failed: step 1 of 1, `echo installing; exit 4`, exited 4" in err
    assert "\n  | installing" in err
    assert not (tmp_path / "ran.txt").exists()


# --- the config ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[]", "setup: expected a non-empty list of shell commands"),
        ('"pip install -r requirements.txt"', "setup: expected a non-empty list of shell commands"),
        ('["pip install .", 3]', "setup[1]: expected a non-empty string"),
        ('["  "]', "setup[0]: expected a non-empty string"),
    ],
)
def test_a_bad_setup_is_a_config_error_naming_the_key(value, message):
    with pytest.raises(ConfigError) as raised:
        parse_config(f"version: 1\nentrypoints: [{{name: a, run: 'true'}}]\nsetup: {value}\n", "c.yml")
    assert message in str(raised.value)


def test_setup_with_the_container_backend_is_refused():
    text = "version: 1\nentrypoints: [{name: a, run: 'true'}]\nsetup: [pip install .]\nrunner: {backend: container, image: x}\n"
    with pytest.raises(ConfigError) as raised:
        parse_config(text, "c.yml")
    assert "c.yml: setup: runs in gbbot's own environment" in str(raised.value)
    assert "install their packages in runner.image" in str(raised.value)


# --- what the base side of a diff is told ---------------------------------------------------------


def test_requirement_changes_are_found_by_name_at_any_depth_and_by_the_steps():
    changed = [
        "model.py",
        "requirements.txt",
        "sub/requirements-dev.txt",
        "deps/gpu.txt",
        "pyproject.toml",
        "README.md",
    ]
    steps = ["pip install -r deps/gpu.txt", "pip install -e ."]
    assert setup.requirement_changes(changed, steps) == (
        "requirements.txt",
        "sub/requirements-dev.txt",
        "deps/gpu.txt",
        "pyproject.toml",
    )
    assert setup.requirement_changes(["model.py", "docs/setup.md"], steps) == ()


def test_the_note_is_none_without_requirement_changes_and_names_them_otherwise():
    assert setup.both_sides_note(()) is None
    note = setup.both_sides_note(("requirements.txt",))
    assert note == (
        "⚠️ Both sides ran with the head's packages: this change touches `requirements.txt`, and the "
        "merge-base's own requirements were not installed for its run."
    )


def test_named_files_understand_pips_spellings():
    assert setup.named_files(["pip install --requirement=a/b.txt -c ./c.txt -r 'd e.txt'"]) == (
        "c.txt",
        "d e.txt",
        "a/b.txt",
    )
    assert Path(setup.named_files(["pip install -r x/../y.txt"])[0]) == Path("y.txt")


def test_a_daemon_a_step_leaves_holding_its_output_prints_nothing_after_the_step(tmp_path):
    """The step starts a daemon in a session of its own that keeps the step's stdout and prints
    workflow commands once gbbot has resumed them (gbbot waits 5 s for the output to end): they
    reach no one."""
    daemon = "sleep 7; echo '::add-mask::x'; echo '::error::obeyed after the step'"
    config = config_with(f'setsid sh -c "{daemon}" & echo started', "echo second")
    log, out = log_to_text(actions=True)
    setup.run(tmp_path, config, dict(os.environ), log)
    time.sleep(4)
    lines = out.getvalue().splitlines()
    stop = next(line for line in lines if line.startswith("::stop-commands::"))
    resumed = lines.index(f"::{stop.removeprefix('::stop-commands::')}::")
    assert "started" in lines[:resumed] and "second" in lines[resumed:]
    assert [line for line in lines[resumed:] if "obeyed" in line or "add-mask" in line] == []


MISSING = {"bench": "Traceback (most recent call last):\nModuleNotFoundError: No module named 'tinydep'"}


@pytest.mark.parametrize(
    ("requirements", "steps"),
    [
        ("./vendor/tinydep\n", ["pip install -r requirements.txt"]),  # a local path in a requirement file
        ("-e ./vendor/tinydep  # vendored\n", ["pip install -r requirements.txt"]),
        ("file:vendor/tinydep\n", ["pip install -r requirements.txt"]),
        ("", ["pip install ./vendor/tinydep[fast]"]),
        ("-e .\n", ["pip install -r requirements.txt"]),  # the repository itself, which provides tinydep
        ("", ["pip install -e ."]),
    ],
)
def test_the_setup_hint_knows_a_local_path_and_the_repository_itself(tmp_path, requirements, steps):
    vendored = tmp_path / "vendor" / "tinydep"
    (vendored / "tinydep").mkdir(parents=True)
    (vendored / "tinydep" / "__init__.py").write_text("")
    (vendored / "pyproject.toml").write_text('[project]\nname = "tiny-dep"\n')
    if "-e ." in requirements or steps == ["pip install -e ."]:
        (tmp_path / "tinydep").mkdir()  # the repository's own flat-layout package
        (tmp_path / "tinydep" / "__init__.py").write_text("")
    (tmp_path / "requirements.txt").write_text(requirements)
    hint = setup.not_run_hint(tmp_path, steps, MISSING)
    assert hint is not None and "run `gbbot check --setup`" in hint
    assert setup.not_run_hint(tmp_path, ["pip install numpy"], MISSING) is None
