"""What an entrypoint inherits of gbbot's environment: an allow-list, never a token, and the report
names (never shows) what was withheld."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from gbbot.core.config import parse_config
from gbbot.core.errors import ConfigError
from gbbot.main import main

SECRETS = (
    "API_KEY", "AWS_ACCESS_KEY_ID", "SSH_PRIVATE_KEY", "GITHUB_PAT", "NPM_AUTH", "DOCKER_AUTH_CONFIG",
    "GOOGLE_CREDENTIALS", "HF_AUTH", "TOKEN", "DB_PASSWD", "HF_TOKEN", "GH_TOKEN", "INPUT_GITHUB-TOKEN",
    "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL", "NPM_TOKEN", "AWS_SECRET_ACCESS_KEY",
    "MY_APP_TOKEN", "TORCH_SECRET", "CUSTOM_CRED", "github_token",
)  # fmt: skip
ALLOWED = {"LANG": "C.UTF-8", "OMP_NUM_THREADS": "3", "HF_HOME": "/hf", "TORCHINDUCTOR_CACHE_DIR": "/ind"}
LISTED = {"MY_APP_MODE": "fast", "CUSTOM_FLAG": "1"}
DUMP_ENV = "python -c 'import json, os; print(json.dumps(dict(os.environ)))' > seen.json"


def test_entrypoints_inherit_only_the_allow_list_and_the_report_names_what_was_withheld(tmp_path, monkeypatch):
    for name in (*SECRETS, "GITHUB_TOKEN", "WANDB_API_KEY", "UNLISTED"):
        monkeypatch.setenv(name, "s3cr3t-" + name)
    for name, value in {**ALLOWED, **LISTED}.items():
        monkeypatch.setenv(name, value)
    (tmp_path / ".gbbot.yml").write_text(
        textwrap.dedent(f"""\
            version: 1
            entrypoints:
              - {{name: env, run: "{DUMP_ENV}", env: {{SEED: "7"}}}}
            pass_env: ["MY_APP_*", "CUSTOM_*", "WANDB_API_KEY", "GITHUB_TOKEN"]
            scrub_env: ["CUSTOM_CRED"]
        """)
    )
    report_path = tmp_path / "report.json"
    # The entrypoint compiles nothing (no_compile fails the default policy): only its environment is tested.
    assert main(["check", "--root", str(tmp_path), "--json", str(report_path), "-q", "--fail-on", "none"]) == 0

    seen = json.loads((tmp_path / "seen.json").read_text())
    assert [name for name, value in seen.items() if "s3cr3t" in value] == ["WANDB_API_KEY"]  # listed exactly
    assert "GITHUB_TOKEN" not in seen  # never, even listed
    assert {name: seen.get(name) for name in {**ALLOWED, **LISTED}} == {**ALLOWED, **LISTED}
    assert seen["SEED"] == "7" and seen["PATH"] == os.environ["PATH"] and "TORCH_TRACE" in seen

    report_text = report_path.read_text()
    [entry] = json.loads(report_text)["entrypoints"]
    assert {*SECRETS, "GITHUB_TOKEN", "UNLISTED"} <= set(entry["env_withheld"])
    assert entry["env_withheld"] == sorted(entry["env_withheld"])
    assert not {"WANDB_API_KEY", "PATH", *ALLOWED, *LISTED} & set(entry["env_withheld"])
    assert "s3cr3t" not in report_text


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("WANDB_MODE", "cfg.yml: pass_env: expected a list of strings, got 'WANDB_MODE'"),
        ("[WANDB_MODE, '']", "cfg.yml: pass_env[1]: expected a non-empty string, got ''"),
    ],
)
def test_pass_env_must_be_a_list_of_names(value, message):
    with pytest.raises(ConfigError) as info:
        parse_config(f"version: 1\nentrypoints: [{{name: a, run: x}}]\npass_env: {value}\n", "cfg.yml")
    assert str(info.value) == message


def test_timed_calls_put_the_shim_first_in_faithful_mode(tmp_path):
    """`gbbot fix --measure`: in faithful mode the shim is loaded only to time the compiled calls."""
    from gbbot.backends.contract import SHIM_DIR, RunRequest, environment
    from gbbot.core.config import Entrypoint
    from gbbot.core.model import Mode

    entrypoint = Entrypoint("fwd", call="m:run", env={"PYTHONPATH": "src"})
    plain = RunRequest(entrypoint, tmp_path, tmp_path / "work", Mode.FAITHFUL)
    timed = RunRequest(entrypoint, tmp_path, tmp_path / "work", Mode.FAITHFUL, time_calls=True)
    assert "GBBOT_TIME" not in environment(plain, {}) and str(SHIM_DIR) not in environment(plain, {})["PYTHONPATH"]
    env = environment(timed, {"GBBOT_TIME": "0"})
    assert env["GBBOT_TIME"] == "1" and env["GBBOT_MODE"] == "faithful"
    assert env["PYTHONPATH"].split(os.pathsep)[:2] == [str(SHIM_DIR), "src"]


def test_once_gbbot_is_stopping_no_entrypoint_starts_and_a_stopped_one_reads_interrupted(tmp_path):
    """Ctrl-C or SIGTERM: a request whose turn comes later is not started (no process, status
    `interrupted`), and one gbbot stopped is `interrupted`, not `crashed` by the signal it sent."""
    from gbbot.backends import contract, local
    from gbbot.core.config import Entrypoint
    from gbbot.core.model import Status
    from gbbot.edges.interrupt import STOPPING

    entry = Entrypoint(name="hang", run=f"touch {tmp_path / 'ran'}", timeout=30)
    request = contract.RunRequest(entry, tmp_path, tmp_path / "work")
    STOPPING.set()
    try:
        outcome = local.run_local(request)
        killed = contract.ended(request, -9, 9, False, 1.0, {})
    finally:
        STOPPING.clear()
    assert (outcome.status, outcome.reason) == (Status.INTERRUPTED, contract.STOPPED)
    assert not (tmp_path / "ran").exists()
    assert killed.status is Status.INTERRUPTED and "interrupted" in killed.reason
    assert contract.ended(request, -9, 9, False, 1.0, {}).status is Status.CRASHED  # not stopping: a crash
