"""SARIF 2.1.0 output: valid against the official schema (tests/data/sarif-schema-2.1.0.json, see
tools/fetch_sarif_schema.py), GB ids as rules with help links, gbbot fingerprints as the stable
partial fingerprints code scanning tracks alerts by."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from gbbot.main import main
from gbbot.render import sarif
from tests.publish.reports import graph_break, report

SCHEMA = json.loads((Path(__file__).parents[1] / "data" / "sarif-schema-2.1.0.json").read_text())


def assert_valid(log: dict) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


def test_the_schema_rejects_a_broken_log() -> None:
    """The validator in these tests can fail: a result without a message is refused."""
    log = sarif.sarif(report([graph_break(1)]))
    del log["runs"][0]["results"][0]["message"]
    with pytest.raises(AssertionError):
        assert_valid(log)


def test_valid_sarif_with_rules_help_links_and_fingerprints() -> None:
    print_break = graph_break(1)
    item = graph_break(2, gb_id="GB0124", gb_type="Unsupported Tensor.item() call", doc_url="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html", fix=None)
    no_id = graph_break(3, gb_id=None, gb_type="Some new break <b>", doc_url=None, file="dir with space/ü.py")
    log = sarif.sarif(report([print_break, item, no_id, graph_break(4)], new=[item]))
    assert_valid(log)
    run = log["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert set(rules) == {"GB0059", "GB0124", "gb-type/some-new-break-b"}
    assert rules["GB0124"]["helpUri"] == item.doc_url
    assert "helpUri" not in rules["gb-type/some-new-break-b"]
    results = run["results"]
    assert [r["partialFingerprints"]["gbbotFingerprint/v1"] for r in results] == [
        b.fingerprint for b in (print_break, item, no_id, graph_break(4))
    ]
    assert [r["level"] for r in results] == ["note", "error", "note", "note"]
    for r in results:
        assert run["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
    location = results[2]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "dir%20with%20space/%C3%BC.py"
    assert location["region"]["startLine"] == no_id.line


def test_fingerprints_do_not_move_with_line_numbers() -> None:
    before = sarif.sarif(report([graph_break(1)]))
    after = sarif.sarif(report([replace(graph_break(1), line=500)]))
    assert before["runs"][0]["results"][0]["partialFingerprints"] == after["runs"][0]["results"][0]["partialFingerprints"]
    assert after["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 500


def test_unlocated_breaks_are_counted_not_uploaded() -> None:
    log = sarif.sarif(report([graph_break(1), graph_break(2, file="/abs/path.py")]))
    assert_valid(log)
    assert len(log["runs"][0]["results"]) == 1
    assert log["runs"][0]["properties"]["unlocatedBreaks"] == 1


def test_empty_report_is_valid_sarif(tmp_path: Path) -> None:
    from gbbot import report as report_io

    path = tmp_path / "report.json"
    report_io.write(report([]), path)
    out = tmp_path / "gb.sarif"
    assert main(["render", str(path), "--format", "sarif", "-o", str(out)]) == 0
    log = json.loads(out.read_text())
    assert_valid(log)
    assert log["runs"][0]["results"] == []
