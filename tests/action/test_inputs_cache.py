"""The cache-dir input: where the baseline cache lives inside the action's container."""

from pathlib import Path

from gbbot.action import inputs


def test_relative_cache_dir_is_under_runner_temp():
    got = inputs.read({"RUNNER_TEMP": "/github/runner_temp"})
    assert got.cache_dir == Path("/github/runner_temp/gbbot-cache")


def test_absolute_cache_dir_and_off():
    assert inputs.read({"INPUT_CACHE-DIR": "/cache/x", "RUNNER_TEMP": "/t"}).cache_dir == Path("/cache/x")
    assert inputs.read({"INPUT_CACHE-DIR": "", "RUNNER_TEMP": "/t"}).cache_dir is None


def test_no_runner_temp_means_no_cache():
    assert inputs.read({}).cache_dir is None
