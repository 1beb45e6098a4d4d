"""SARIF 2.1.0 output: valid against the official schema (tests/data/sarif-schema-2.1.0.json, see
tools/fetch_sarif_schema.py), GB ids as rules with help links, gbbot fingerprints as the stable
partial fingerprints code scanning tracks alerts by."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from gbbot.analysis.classify import classify
from gbbot.analysis.source import source_map
from gbbot.core.model import BreakMessage, Frame, RawBreak
from gbbot.main import main
from gbbot.render import sarif
from tests.builders import graph_break, report
from tests.conftest import DATA

SCHEMA = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())


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
    item = graph_break(
        2,
        gb_id="GB0124",
        gb_type="Unsupported Tensor.item() call",
        doc_url="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html",
        fix=None,
    )
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


def _classified(source: str, line: int) -> list:
    """A print break at `line` of `source`, fingerprinted by the real classifier (not by hand)."""
    message = BreakMessage("Failed to trace builtin operator", "GB0059", "print")
    frame = Frame("/repo/pkg/model.py", line, "forward", source.splitlines()[line - 1].strip())
    return list(classify([RawBreak(message, (), (frame,), False)], "/repo", lambda _path: source_map(source)))


def test_fingerprints_do_not_move_with_line_numbers() -> None:
    source = "class Net:\n    def forward(self, x):\n        print('x')\n        return x\n"
    shifted = "import os\n\n\n" + source  # three lines inserted above: the same break, 3 lines down
    before = sarif.sarif(report(_classified(source, 3)))["runs"][0]["results"][0]
    after = sarif.sarif(report(_classified(shifted, 6)))["runs"][0]["results"][0]
    assert before["partialFingerprints"] == after["partialFingerprints"]
    assert (
        before["locations"][0]["physicalLocation"]["region"]["startLine"],
        after["locations"][0]["physicalLocation"]["region"]["startLine"],
    ) == (3, 6)
    edited = source.replace("print('x')", "print('y')")  # another line of code is another break
    other = sarif.sarif(report(_classified(edited, 3)))["runs"][0]["results"][0]
    assert other["partialFingerprints"] != before["partialFingerprints"]


def test_unlocated_breaks_are_counted_not_uploaded() -> None:
    log = sarif.sarif(report([graph_break(1), graph_break(2, file="/abs/path.py")]))
    assert_valid(log)
    assert len(log["runs"][0]["results"]) == 1
    assert log["runs"][0]["properties"]["unlocatedBreaks"] == 1


def test_empty_report_is_valid_sarif(tmp_path: Path) -> None:
    from gbbot.analysis import report as report_io

    path = tmp_path / "report.json"
    report_io.write(report([]), path)
    out = tmp_path / "gb.sarif"
    assert main(["render", str(path), "--format", "sarif", "-o", str(out)]) == 0
    log = json.loads(out.read_text())
    assert_valid(log)
    assert log["runs"][0]["results"] == []
