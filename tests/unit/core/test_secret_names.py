"""Which variables gbbot keeps, holds and hands on (gbbot/core/secret_names.py and
backends/contract.inherits): pure rules, one table each."""

from __future__ import annotations

import pytest

from gbbot.backends.contract import inherits
from gbbot.core import secret_names
from gbbot.core.secret_names import held_at_start, widening


@pytest.mark.parametrize(
    ("name", "held"),
    [
        ("PATH", False), ("GITHUB_REPOSITORY", False), ("GITHUB_EVENT_PATH", False), ("RUNNER_TEMP", False),
        ("GBBOT_PASS_ENV", False), ("HTTPS_PROXY", False), ("TORCH_LOGS", False),
        ("GITHUB_TOKEN", True), ("INPUT_TOKEN", True), ("ACTIONS_RUNTIME_TOKEN", True), ("ACTIONS_CACHE_URL", True),
        ("GITHUB_PAT", True), ("GH_PAT", True), ("DATABASE_URL", True), ("SLACK_WEBHOOK_URL", True),
        ("GPG_PASSPHRASE", True), ("PIP_INDEX_URL", True), ("GBBOT_API_TOKEN", True),
    ],
)  # fmt: skip
def test_gbbot_keeps_the_allow_list_and_what_it_reads_and_holds_the_rest(name, held):
    assert held_at_start(name) is held


HELD = frozenset({"DATABASE_URL", "HF_TOKEN", "WANDB_MODE"})


@pytest.mark.parametrize(
    ("name", "pass_env", "widened", "passes"),
    [
        ("LANG", (), (), True),
        ("MY_APP_MODE", ("MY_APP_*",), (), True),  # not held: the config may pass it
        ("WANDB_MODE", ("WANDB_MODE",), (), False),  # held: the config may not
        ("DATABASE_URL", ("*",), (), False),
        ("WANDB_MODE", (), ("WANDB_*",), True),  # the workflow may
        ("HF_TOKEN", (), ("HF_*",), False),  # a secret-looking name only when named exactly
        ("HF_TOKEN", (), ("HF_TOKEN",), True),
        ("INPUT_TOKEN", ("INPUT_TOKEN",), ("INPUT_TOKEN",), False),  # never, whoever asks
        ("ACTIONS_RUNTIME_TOKEN", (), ("ACTIONS_RUNTIME_TOKEN",), False),
        ("GH_TOKEN", ("GH_TOKEN",), ("GH_TOKEN",), False),
    ],
)
def test_only_whoever_started_gbbot_widens_beyond_what_it_did_not_hold(name, pass_env, widened, passes):
    assert inherits(name, pass_env, (), HELD, widened) is passes


def test_the_widening_is_names_or_globs_separated_by_commas_or_spaces():
    assert widening(" WANDB_API_KEY,HF_*  PIP_INDEX_URL ") == ("WANDB_API_KEY", "HF_*", "PIP_INDEX_URL")
    assert widening(None) == ()


def test_a_proxy_url_with_a_password_carries_credentials_whatever_its_name():
    assert secret_names.carries_credentials("HTTPS_PROXY", "http://user:pass@proxy:3128")
    assert secret_names.carries_credentials("https_proxy", "user@proxy:3128")
    assert not secret_names.carries_credentials("HTTPS_PROXY", "http://proxy:3128/a@b")  # not before the host
    assert not secret_names.carries_credentials("NO_PROXY", "localhost,127.0.0.1")
    assert not secret_names.carries_credentials("HOME", "/home/user@example")


def test_a_proxy_carrying_credentials_passes_only_when_whoever_started_gbbot_names_it():
    """The PR's config asks for every variable: a proxy's password is no more its to have than a
    token; the workflow's GBBOT_PASS_ENV, naming it exactly, still passes it."""
    held = {"HTTPS_PROXY"}
    assert not inherits("HTTPS_PROXY", pass_env=("*",), credentials=held)
    assert not inherits("HTTPS_PROXY", pass_env=("HTTPS_PROXY",), credentials=held)
    assert not inherits("HTTPS_PROXY", widened=("*_PROXY",), credentials=held)
    assert inherits("HTTPS_PROXY", widened=("https_proxy",), credentials=held)
    assert inherits("HTTPS_PROXY", pass_env=("*",))  # without credentials, as any variable
