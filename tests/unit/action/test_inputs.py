"""The baseline inputs: where the baseline cache lives inside the action's container, and the
audit's data branch whose records may stand in for running the base."""

from pathlib import Path

import pytest

from gbbot.action import inputs
from gbbot.core.errors import GbbotError
from tests.builders import entrypoint, report_of


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


def test_annotations_are_what_the_pr_changed_unless_all_is_asked():
    assert inputs.read({}).annotate_all is False
    assert inputs.read({"INPUT_ANNOTATE": "all"}).annotate_all is True
    with pytest.raises(GbbotError, match="input annotate: 'every' is not one of changed, all"):
        inputs.read({"INPUT_ANNOTATE": "every"})


def test_the_comment_points_at_an_artifact_only_when_the_workflow_names_one():
    from gbbot.action import outputs

    class Ctx:  # what outputs.content reads of the action's context: its inputs and where it runs
        def __init__(self, named: str) -> None:
            self.inputs = inputs.read({"INPUT_ARTIFACT-NAME": named})
            self.env = type("Env", (), {"server_url": "", "repository": "", "workspace": Path("/nonexistent")})()

    report = report_of(entrypoint("train"))
    assert outputs.content(Ctx(""), report, None).pointer == ""  # the default: the minimal workflow uploads none
    named = outputs.content(Ctx("gbbot-report"), report, "https://github.com/o/r/actions/runs/1").pointer
    assert (
        named
        == "📄 The full report is the `gbbot-report` artifact of [this workflow run](https://github.com/o/r/actions/runs/1)."
    )
