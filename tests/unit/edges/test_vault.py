"""Credentials in gbbot's own process, attacked from an entrypoint (gbbot/edges/vault.py): the
entrypoint reads every /proc/<pid>/environ and cmdline it can, gbbot's memory and its file
descriptors (tests/red_team.py), and finds no token, while GBBOT_PASS_ENV (set by whoever started
gbbot, never by the repository's files) still hands over the one secret it names."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

from tests.cli_helpers import write
from tests.red_team import ATTACK, leaked


def canary() -> str:
    return f"canary_{secrets.token_hex(8)}"


def run_check(repo: Path, env_extra: dict[str, str], *options: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "ACTIONS_", "GITHUB_"))}
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "-m", "gbbot", "check", "--no-warm", *options, "--json", str(repo / "report.json")],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_an_entrypoint_reads_no_token_from_gbbots_environment_memory_or_pipes(tmp_path):
    repo = tmp_path / "repo"
    write(repo, {
        "attack.py": ATTACK,
        "passed.py": "import os, sys\nopen(sys.argv[1], 'w').write(os.environ.get('MY_SERVICE_TOKEN', ''))\n",
        ".gbbot.yml": f"""\
            version: 1
            entrypoints:
              - name: attack
                run: {sys.executable} attack.py {tmp_path / "found.json"}
              - name: passed
                run: {sys.executable} passed.py {tmp_path / "passed.txt"}
            """,
    })  # fmt: skip
    values = {name: canary() for name in (
        "INPUT_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "GITHUB_TOKEN",
        "DEPLOY_KEY", "MY_SERVICE_TOKEN",
    )}  # fmt: skip
    done = run_check(repo, {**values, "GBBOT_PASS_ENV": "MY_SERVICE_TOKEN"})
    assert done.returncode == 1, done.stderr  # 1: the entrypoints compile nothing (not a gbbot error)
    found = json.loads((tmp_path / "found.json").read_text())
    assert found["gbbot_pid"] > 1  # the attack found gbbot and tried it
    read = [*found["environ"].values(), *found["cmdline"].values(), *found["fd"].values(), *found["mem"]]
    handed_on = values.pop("MY_SERVICE_TOKEN")  # GBBOT_PASS_ENV gives this one to the entrypoints
    assert leaked(list(values.values()), *read) == []
    gbbot_pid = found["gbbot_pid"]
    # Non-dumpable: its memory and descriptors are refused. (Its environ is refused too on Linux;
    # gVisor serves it, and it holds no secret: the re-execution started gbbot without them.)
    assert f"/proc/{gbbot_pid}/mem" in found["refused"]
    assert f"/proc/{gbbot_pid}/fd" in found["refused"] or found["fd"] == {}
    # What whoever started gbbot hands over on purpose still arrives: the held values are gbbot's to pass.
    assert (tmp_path / "passed.txt").read_text() == handed_on
    report = json.loads((repo / "report.json").read_text())
    withheld = next(e for e in report["entrypoints"] if e["name"] == "attack")["env_withheld"]
    assert {"INPUT_TOKEN", "DEPLOY_KEY", "GITHUB_TOKEN"} <= set(withheld)


def test_without_secrets_in_its_environment_gbbot_runs_as_started(tmp_path):
    """No secret-looking variable: nothing to hold, no re-execution; still not dumpable."""
    repo = tmp_path / "repo"
    write(repo, {
        "attack.py": ATTACK,
        ".gbbot.yml": f"version: 1\nentrypoints:\n  - name: attack\n    run: {sys.executable} attack.py {tmp_path / 'f.json'}\n",
    })  # fmt: skip
    done = run_check(repo, {})
    assert done.returncode == 1, done.stderr
    found = json.loads((tmp_path / "f.json").read_text())
    assert f"/proc/{found['gbbot_pid']}/mem" in found["refused"]


DUMP = "import json, os, sys\njson.dump(dict(os.environ), open(sys.argv[1], 'w'))\n"


def test_the_config_cannot_widen_the_environment_only_whoever_started_gbbot_can(tmp_path):
    """The pull request's own .gbbot.yml asks for the token and for everything (`pass_env:
    [INPUT_TOKEN, "*"]`): neither the setup step nor the entrypoint gets the action's input or a
    secret whose name the patterns miss, none is left in gbbot's own environment, and what the
    workflow widens (GBBOT_PASS_ENV) still arrives."""
    repo = tmp_path / "repo"
    write(repo, {
        "attack.py": ATTACK,
        "dump.py": DUMP,
        ".gbbot.yml": f"""\
            version: 1
            setup: ["{sys.executable} dump.py {tmp_path / "setup.json"}"]
            entrypoints:
              - name: attack
                run: {sys.executable} attack.py {tmp_path / "found.json"}
              - name: dump
                run: {sys.executable} dump.py {tmp_path / "entrypoint.json"}
            pass_env: [INPUT_TOKEN, INPUT_GITHUB-TOKEN, GITHUB_PAT, DATABASE_URL, "*"]
            """,
    })  # fmt: skip
    values = {name: canary() for name in (
        "INPUT_TOKEN", "INPUT_GITHUB-TOKEN", "GITHUB_PAT", "GH_PAT", "DATABASE_URL", "SLACK_WEBHOOK_URL",
        "GPG_PASSPHRASE", "SENTRY_DSN",
    )}  # fmt: skip
    values["PIP_INDEX_URL"] = f"https://user:{canary()}@pypi.example.com/simple"
    wanted = canary()
    done = run_check(repo, {**values, "WANDB_API_KEY": wanted, "GBBOT_PASS_ENV": "WANDB_API_KEY"}, "--setup")
    assert done.returncode == 1, done.stderr
    setup_env = json.loads((tmp_path / "setup.json").read_text())
    entrypoint_env = json.loads((tmp_path / "entrypoint.json").read_text())
    found = json.loads((tmp_path / "found.json").read_text())
    read = [*found["environ"].values(), *found["cmdline"].values()]
    secrets_ = [v.split(":")[-1].split("@")[0] if "@" in v else v for v in values.values()]
    assert leaked(secrets_, json.dumps(setup_env), json.dumps(entrypoint_env), *read) == []
    assert setup_env["WANDB_API_KEY"] == entrypoint_env["WANDB_API_KEY"] == wanted
