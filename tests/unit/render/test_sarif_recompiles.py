"""Recompilations in SARIF: valid against the official schema, a rule per guard kind (and one for the
recompile limit) with help and a help link, a result per problem after the breaks' results,
tracked by the problem's own fingerprint."""

from __future__ import annotations

from dataclasses import replace

from gbbot.analysis import recompile
from gbbot.analysis.policy import Policy
from gbbot.render import recompile_findings, sarif
from tests.builders import AT_LIMIT, DTYPE, INFO, RECOMPILE_DOC, graph_break, recompiled_report
from tests.unit.render.test_sarif import assert_valid

INT_ARGUMENT = AT_LIMIT.reasons[0]


def test_a_result_per_recompilation_problem_after_the_breaks() -> None:
    log = sarif.sarif(recompiled_report([graph_break(1)]))
    assert_valid(log)
    run = log["runs"][0]
    results = run["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("GB0059", "error"),
        ("recompile/limit", "error"),  # newly at the limit: fails the default policy
        ("recompile/int_argument", "warning"),  # new, not counted by the default policy
        ("recompile/dtype", "note"),  # on the base too
    ]  # automatic dynamic shapes at work (`grow`) has no result: nothing to fix
    assert [r["partialFingerprints"]["gbbotFingerprint/v1"] for r in results[1:]] == [
        recompile.limit_fingerprint(AT_LIMIT),
        INT_ARGUMENT.fingerprint,
        DTYPE.reasons[0].fingerprint,
    ]
    assert [r["locations"][0]["physicalLocation"]["region"] for r in results[1:]] == [
        {"startLine": 3},
        {"startLine": 3},
        {"startLine": 27},
    ]
    assert results[2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "model/loops.py"
    assert results[2]["message"]["text"].splitlines() == [
        "New recompilation: repeat compiled 8× and hit the recompile limit",
        "Failing guard (int argument, ×7): n == 1 at line 5: for _ in range(n):",
        "Cause of int_argument.",
        "Hint: Advice for int_argument.",
        "Entrypoints: train-step",
        RECOMPILE_DOC,
    ]
    assert results[2]["properties"] == {
        "state": "new",
        "entrypoints": ["train-step"],
        "compilations": 8,
        "count": 7,
        "limitHit": True,
    }
    for r in results:
        assert run["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] == r["ruleId"]


def test_a_rule_per_guard_kind_with_help_and_the_recompilation_doc() -> None:
    rules = {r["id"]: r for r in sarif.sarif(recompiled_report())["runs"][0]["tool"]["driver"]["rules"]}
    assert set(rules) == {"recompile/limit", "recompile/int_argument", "recompile/dtype"}
    assert {r["helpUri"] for r in rules.values()} == {RECOMPILE_DOC}
    assert rules["recompile/dtype"]["help"]["text"] == "Cause of dtype.\nHint: Advice for dtype."
    assert rules["recompile/dtype"]["shortDescription"]["text"] == "torch.compile recompilation: dtype guard"
    limit = recompile.load_rules()
    assert rules["recompile/limit"]["help"]["text"] == f"{limit.limit_cause}\nHint: {limit.limit_advice}"


def test_the_recompilation_policy_sets_the_level() -> None:
    results = sarif.sarif(recompiled_report(), Policy.of("new", "new"))["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("recompile/limit", "error"),
        ("recompile/int_argument", "error"),
        ("recompile/dtype", "note"),
    ]


def test_fingerprints_do_not_move_with_the_frames_line() -> None:
    moved = replace(AT_LIMIT, line=300)
    before = sarif.sarif(recompiled_report(recompiles=(AT_LIMIT,)))["runs"][0]["results"]
    after = sarif.sarif(recompiled_report(recompiles=(moved,)))["runs"][0]["results"]
    assert [r["partialFingerprints"] for r in before] == [r["partialFingerprints"] for r in after]
    assert after[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 300


def test_a_frame_without_a_safe_path_is_counted_not_uploaded() -> None:
    outside = replace(DTYPE, file="/abs/elsewhere.py")
    log = sarif.sarif(recompiled_report(recompiles=(outside, INFO), persisting=()))
    assert_valid(log)
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["properties"]["unlocatedRecompiles"] == 1


def test_a_resume_function_a_new_break_made_points_at_the_break_not_at_a_hint() -> None:
    made = recompiled_report(recompiles=(replace(DTYPE, new_break="f" * 16),), persisting=())
    (finding,) = recompile_findings.recompile_findings(made, Policy.of())
    text = recompile_findings.message(finding, finding.problems)
    assert "it recompiles because of that break" in text
    assert "Hint:" not in text and DTYPE.reasons[0].advice not in text
    (plain,) = recompile_findings.recompile_findings(recompiled_report(recompiles=(DTYPE,)), Policy.of())
    assert "Hint:" in recompile_findings.message(plain, plain.problems)
