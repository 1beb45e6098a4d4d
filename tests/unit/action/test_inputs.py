"""The baseline inputs: where the baseline cache lives inside the action's container, and the
audit's data branch whose records may stand in for running the base."""

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


def test_the_audit_record_baseline_is_off_unless_a_branch_is_named():
    assert inputs.read({}).baseline_from_branch == ""
    assert inputs.read({"INPUT_BASELINE-FROM-BRANCH": " gbbot-data "}).baseline_from_branch == "gbbot-data"
