"""Entrypoint names become directory names under gbbot's work dir: none may reach outside it."""

from __future__ import annotations

import dataclasses

import pytest

from gbbot.backends.contract import entrypoint_dir
from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import Entrypoint, parse_config
from gbbot.core.errors import ConfigError, GbbotError
from gbbot.main import main


@pytest.mark.parametrize("name", [".", ".."])
def test_dot_names_are_a_config_error_naming_file_and_key(tmp_path, capsys, name):
    path = tmp_path / "cfg.yml"
    path.write_text(f"version: 1\nentrypoints: [{{name: a, run: 'true'}}, {{name: '{name}', run: 'true'}}]\n")
    with pytest.raises(ConfigError) as info:
        parse_config(path.read_text(), "cfg.yml")
    message = (
        f"cfg.yml: entrypoints[1].name: {name!r} is not allowed: an entrypoint's name is also its directory's name"
    )
    assert str(info.value) == message
    assert main(["check", "--config", str(path), "--root", str(tmp_path), "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == "gbbot: error: " + message.replace("cfg.yml", str(path))


@pytest.mark.parametrize("name", [".", "..", "../x", "a/../..", "/etc", "sub/../../out"])
def test_the_directory_builder_refuses_names_that_leave_the_parent(tmp_path, name):
    with pytest.raises(GbbotError, match="would leave"):
        entrypoint_dir(tmp_path / "work", name)


def test_the_directory_builder_refuses_a_symlink_out_and_accepts_a_plain_name(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "planted").symlink_to(tmp_path)
    with pytest.raises(GbbotError, match="would leave"):
        entrypoint_dir(work, "planted")
    assert entrypoint_dir(work, "train-step.v2") == work / "train-step.v2"


def test_check_refuses_an_escaping_name_even_if_validation_was_bypassed(tmp_path):
    """Before anything runs or is deleted: the kept-traces dir's parent stays as it was."""
    keep = tmp_path / "keep"
    (keep / "work").mkdir(parents=True)
    (keep / "trace").mkdir()
    (keep / "trace" / "precious.txt").write_text("mine")
    (tmp_path / "repo").mkdir()
    config = parse_config("version: 1\nentrypoints: [{name: ok, run: 'touch ran'}]\n")
    config = dataclasses.replace(config, entrypoints=(Entrypoint("..", run="touch ran"),))
    with pytest.raises(GbbotError, match="would leave"):
        check(tmp_path / "repo", config, CheckOptions(keep_traces=keep / "work"))
    assert (keep / "trace" / "precious.txt").read_text() == "mine"
    assert not (tmp_path / "repo" / "ran").exists()
    assert not (keep / "stdout.txt").exists()
