"""The fail policy: resolved once from the config and the override, and its one verdict."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gbbot.analysis.policy import DEFAULT, Policy, Verdict
from gbbot.core.config import parse_config
from gbbot.core.errors import ConfigError, ExitCode
from gbbot.core.model import Status
from tests.builders import graph_break, report

CONFIG = "version: 1\nentrypoints:\n  - {{name: a, run: 'true'}}\n{fail_on}"


def config(fail_on: str = ""):
    return parse_config(CONFIG.format(fail_on=fail_on), "cfg.yml")


@pytest.mark.parametrize(
    ("fail_on", "override", "expected"),
    [
        ("", None, Policy("new", "limit")),
        ("fail_on: any\n", None, Policy("any", "limit")),
        ("fail_on: none\n", None, Policy("none", "none")),
        ("fail_on: new\n", "none", Policy("none", "none")),  # the override's default for recompilations
        ("fail_on: {breaks: new, recompiles: any}\n", "none", Policy("none", "any")),  # it sets breaks only
        ("fail_on: {breaks: any, recompiles: new}\n", None, Policy("any", "new")),
    ],
)
def test_resolved_once_from_the_config_and_the_override(fail_on, override, expected):
    assert Policy.resolve(config(fail_on), override) == expected


@pytest.mark.parametrize(
    ("text", "breaks", "recompiles"),
    [
        ("fail_on: new\n", "new", None),
        ("fail_on: {breaks: any, recompiles: new}\n", "any", "new"),
        ("fail_on: {recompiles: none}\n", "new", "none"),
    ],
)
def test_fail_on_string_and_mapping_forms(text, breaks, recompiles):
    parsed = config(text)
    assert (parsed.fail_on, parsed.fail_on_recompiles) == (breaks, recompiles)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "fail_on: {breaks: new, recompile: new}\n",
            "cfg.yml: fail_on.recompile: unknown key; did you mean 'recompiles'?",
        ),
        ("fail_on: {recompiles: always}\n", "cfg.yml: fail_on.recompiles: expected one of limit, new, any, none"),
        ("fail_on: {breaks: limit}\n", "cfg.yml: fail_on.breaks: expected one of new, any, none, got 'limit'"),
        (
            "fail_on: {}\n",
            "cfg.yml: fail_on: expected one of new, any, none, or a mapping with breaks: and recompiles:",
        ),
    ],
)
def test_fail_on_mapping_errors_name_the_file_and_key(text, message):
    with pytest.raises(ConfigError) as info:
        config(text)
    assert str(info.value).startswith(message)


def test_the_default_is_new_breaks_and_frames_newly_at_the_limit():
    assert DEFAULT == Policy.of() == Policy("new", "limit")


def test_an_unknown_policy_is_a_bug_not_a_silent_pass():
    with pytest.raises(ValueError, match="no such fail policy"):
        Policy("limit", "new")  # arguments swapped


def test_the_verdict_says_why_in_the_words_the_cli_prints():
    breaks = [graph_break(1), graph_break(2)]
    both_new = report(breaks, new=breaks)
    assert Policy.of("new").verdict(both_new) == Verdict(False, "policy fail_on=new: 2 new graph breaks")
    assert Policy.of("any").verdict(report(breaks, new=[])).reason == "policy fail_on=any: 2 graph breaks"
    assert Policy.of("new").verdict(report(breaks, new=[])) == Verdict(True)
    assert Policy.of("none").verdict(both_new).passed


def test_without_a_baseline_every_break_is_new_but_not_called_new():
    no_diff = report([graph_break(1)])  # no base compared
    assert Policy.of("new").verdict(no_diff).reason == "policy fail_on=new: 1 graph break"


def test_an_entrypoint_that_did_not_run_cleanly_fails_unless_breaks_is_none():
    result = report([], new=[])
    crashed = replace(result, entrypoints=(replace(result.entrypoints[0], status=Status.CRASHED),))
    verdict = Policy.of("new").verdict(crashed)
    assert not verdict.passed and verdict.reason.startswith("entrypoints did not run cleanly: ")
    assert (verdict.conclusion, verdict.exit_code) == ("failure", ExitCode.POLICY)
    passed = Policy.of("none").verdict(crashed)
    assert (passed.conclusion, passed.exit_code, passed.reason) == ("success", ExitCode.OK, None)


def test_which_breaks_count():
    new, old = Policy.of("new"), Policy.of("any")
    assert new.counts_break(True) and not new.counts_break(False)
    assert old.counts_break(True) and old.counts_break(False)
    assert not Policy.of("none").counts_break(True)
