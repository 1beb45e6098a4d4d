"""The parser on real recorded torch 2.13 traces (tests/fixtures, see record.py) and damaged copies."""

from __future__ import annotations

import json

import pytest

from gbbot.analysis import classify
from gbbot.main import main
from gbbot.trace import logfiles, registry, tracelog, wording
from tests.conftest import FIXTURES

TRACE = FIXTURES / "small.trace.log"
LOGS = FIXTURES / "small.graph_breaks.txt"
ROOT = "/tmp/gbbot-fixture"  # where record.py ran the program


def summary(log) -> list[tuple]:
    breaks = classify.classify(log.breaks, ROOT)
    return [(b.gb_id, b.file, b.line, b.function, b.frame_skipped, b.count) for b in breaks]


EXPECTED = [
    ("GB0025", "small.py", 18, "g", True, 1),
    ("GB0059", "small.py", 10, "f", False, 1),
    ("GB0291", "small.py", 11, "f", False, 1),
]


def test_trace_file_gives_every_break_with_its_frame():
    log = tracelog.read_path(TRACE)
    assert summary(log) == EXPECTED
    assert log.torch_version == "2.13.0+cpu"
    assert log.problems == ()


def test_trace_directory_reads_every_log_file(tmp_path):
    (tmp_path / "rank0.log").write_bytes(TRACE.read_bytes())
    assert summary(tracelog.read_path(tmp_path)) == EXPECTED


def test_loop_break_is_one_root_with_the_gb7000_consequence_folded_in():
    log = tracelog.read_path(TRACE)
    (root,) = [b for b in log.breaks if b.root.gb_id == "GB0025"]
    assert root.frame_skipped
    assert [c.gb_id for c in root.consequences] == ["GB7000"]
    (brk,) = [b for b in classify.classify(log.breaks, ROOT) if b.gb_id == "GB0025"]
    assert brk.gb_type == "Call to `torch._dynamo.graph_break()`"
    assert len(brk.caused) == 1 and brk.consequences == ("graph break in loop",)


def test_metrics_count_graphs_and_frames_that_fell_back_to_eager():
    log = tracelog.read_path(TRACE)
    # f, and the resume function after log.info; the one between print and log.info is empty
    assert sum(1 for m in log.metrics if m.graph_op_count) == 2
    assert [m.co_name for m in log.metrics if m.fail_type] == ["g"]


def test_message_fields():
    log = tracelog.read_path(TRACE)
    brk = next(b for b in log.breaks if b.root.gb_id == "GB0059")
    assert brk.root.gb_type == "Failed to trace builtin operator"
    assert brk.root.explanation.startswith("Dynamo does not know how to trace builtin operator `print`")
    assert any("reorderable_logging_functions" in h for h in brk.root.hints)
    assert brk.root.doc_url == "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html"
    assert brk.stack[-1].code == 'print("hi")  # GB0059'


def test_saved_torch_logs_text_gives_the_same_breaks():
    log = tracelog.read_path(LOGS)
    assert summary(log) == EXPECTED
    assert log.metrics == ()


def _cut_inside_second_break(text: str) -> str:
    marker = '"dynamo_graph_break_reason"'
    second = text.index(marker, text.index(marker) + 1)
    return text[: text.index("Explanation", second)]


def test_truncated_trace_keeps_what_it_can_and_says_what_it_skipped(tmp_path):
    damaged = tmp_path / "cut.log"
    damaged.write_text(_cut_inside_second_break(TRACE.read_text()))
    log = tracelog.read_path(damaged)
    ids = [b.root.gb_id for b in log.breaks]
    assert ids[0] == "GB0059"
    assert len(log.problems) == 1 and "truncated" in log.problems[0]
    assert "GB0025" not in ids  # after the cut: never written


def test_corrupted_records_are_skipped_with_a_reason(tmp_path):
    lines = TRACE.read_text().splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if '"dynamo_graph_break_reason"' in line)
    lines[header] = lines[header][: lines[header].index('"frame_id"')] + "\n"  # broken JSON header
    lines.insert(5, "\x00\xff garbage that is no record\n")
    damaged = tmp_path / "bad.log"
    damaged.write_text("".join(lines), encoding="utf-8", errors="replace")
    log = tracelog.read_path(damaged)
    assert [b.root.gb_id for b in log.breaks] == ["GB0291", "GB0025"]
    assert any("unreadable record header" in p for p in log.problems)


def test_edited_payload_fails_its_checksum_but_is_still_read(tmp_path):
    damaged = tmp_path / "edited.log"
    damaged.write_text(TRACE.read_text().replace('print("hi")  # GB0059', 'print("HI")  # GB0059', 1))
    log = tracelog.read_path(damaged)
    assert len(log.breaks) == 3
    assert any("checksum" in p for p in log.problems)


def test_an_edited_record_is_a_trace_problem_in_the_report_and_its_break_is_kept(tmp_path):
    damaged = tmp_path / "edited.log"
    damaged.write_text(TRACE.read_text().replace('print("hi")  # GB0059', 'print("HI")  # GB0059', 1))
    out = tmp_path / "report.json"
    assert main(["parse", str(damaged), "--root", ROOT, "--json", str(out), "--quiet"]) == 0
    (entry,) = json.loads(out.read_text())["entrypoints"]
    assert [b["gb_id"] for b in entry["breaks"]] == ["GB0025", "GB0059", "GB0291"]
    assert any("checksum mismatch" in p for p in entry["trace_problems"])


def test_not_a_break_message_is_ignored():
    assert tracelog.parse_break_message("hello\nworld") is None


def test_empty_directory_is_a_problem_not_a_crash(tmp_path):
    log = tracelog.read_path(tmp_path)
    assert log.breaks == () and "no trace files" in log.problems[0]


def test_cli_parse_writes_a_valid_report(tmp_path, capsys):
    out = tmp_path / "report.json"
    assert main(["parse", str(TRACE), "--root", ROOT, "--json", str(out), "--quiet"]) == 0
    data = json.loads(out.read_text())
    assert [b["gb_id"] for b in data["entrypoints"][0]["breaks"]] == ["GB0025", "GB0059", "GB0291"]
    assert data["entrypoints"][0]["graph_count"] == 2


def test_cli_parse_fail_on_any_and_warnings(tmp_path, capsys):
    damaged = tmp_path / "cut.log"
    damaged.write_text(_cut_inside_second_break(TRACE.read_text()))
    assert main(["parse", str(damaged), "--root", ROOT, "--quiet", "--fail-on", "any"]) == 1
    assert "truncated" in capsys.readouterr().err


def test_cli_parse_missing_path(capsys):
    assert main(["parse", "/no/such/trace"]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["small.trace.log", "small.graph_breaks.txt"])
def test_fixtures_are_real_torch_output(name):
    text = (FIXTURES / name).read_text()
    assert "compile-graph-break-site/gb/gb0059.html" in text


# --- identity across torch releases -------------------------------------------------------------

TRACE_2_12 = FIXTURES / "small.2.12.trace.log"
TRACE_2_14 = FIXTURES / "small.2.14.trace.log"  # torch 2.14.1 (its CUDA build, run on a CPU)
REGISTRY = registry.read(registry.registry_path())
IDS = registry.index(REGISTRY)


def _recorded(gb_id: str) -> str:
    """The text of one recorded break message (torch 2.13)."""
    records = logfiles.iter_trace_records(logfiles.open_lines(TRACE), TRACE.name)
    texts = [r.payload for r in records if getattr(r, "kind", "") == "break"]
    return next(t for t in texts if f"/gb/{gb_id.lower()}.html" in t)


def _worded(text: str, gb_type: str, gb_id: str | None) -> str:
    """The recorded GB0059 message as a release that words the break `gb_type`; without an id,
    printed with no doc link (as torch did before the registry)."""
    text = text.replace("Failed to trace builtin operator", gb_type)
    if gb_id is None:
        return "\n".join(line for line in text.split("\n") if "please visit:" not in line)
    return text.replace("/gb/gb0059.html", f"/gb/{gb_id.lower()}.html")


def test_a_break_torch_rewords_keeps_its_id_and_fingerprint():
    names = [entry["Gb_type"] for entry in REGISTRY["GB0039"]]
    assert names[0] == "Dynamo recompile limit exceeded" and "Dynamo cache limit exceeded" in names
    recorded = _recorded("GB0059")
    now = tracelog.parse_break_message(_worded(recorded, names[0], "GB0039"))
    before = tracelog.parse_break_message(_worded(recorded, "Dynamo cache limit exceeded", None))
    assert before.root.gb_id is None  # the older wording carries no id ...
    (new,) = classify.classify([now], ROOT, ids=IDS)
    (old,) = classify.classify([before], ROOT, ids=IDS)
    assert old.gb_id == new.gb_id == "GB0039"  # ... and gets it from the registry's history
    assert old.fingerprint == new.fingerprint


def test_a_message_without_an_id_is_mapped_to_its_id_and_rule():
    recorded = _recorded("GB0059")
    (with_link,) = classify.classify([tracelog.parse_break_message(recorded)], ROOT, ids=IDS)
    (without,) = classify.classify(
        [tracelog.parse_break_message(_worded(recorded, "Failed to trace builtin operator", None))], ROOT, ids=IDS
    )
    assert (without.gb_id, without.fix, without.fingerprint) == ("GB0059", "print", with_link.fingerprint)


def test_a_torch_2_12_trace_gives_the_same_breaks_and_fingerprints():
    old, new = tracelog.read_path(TRACE_2_12), tracelog.read_path(TRACE)
    assert old.torch_version.startswith("2.12") and old.problems == ()
    assert summary(old) == EXPECTED
    fingerprints = [{b.fingerprint for b in classify.classify(log.breaks, ROOT)} for log in (old, new)]
    assert fingerprints[0] == fingerprints[1]


def test_a_torch_2_14_trace_gives_the_same_breaks_and_fingerprints_without_a_caveat():
    newer, now = tracelog.read_path(TRACE_2_14), tracelog.read_path(TRACE)
    assert newer.torch_version.startswith("2.14.1")
    assert newer.problems == ()  # read as a release gbbot knows: no "outside the releases" note
    assert summary(newer) == EXPECTED
    fingerprints = [{b.fingerprint for b in classify.classify(log.breaks, ROOT)} for log in (newer, now)]
    assert fingerprints[0] == fingerprints[1]


@pytest.mark.parametrize("version", ["2.14.1+cu130", "2.15.0+cpu"])
def test_the_releases_after_2_13_are_read_without_a_caveat(version):
    assert wording.support_note(version) is None


def test_a_gb_type_2_14_renamed_keeps_its_id():
    """torch 2.14 renamed three gb_types (str_impl → tp_str_impl, …); its registry keeps both."""
    renamed = registry.read(FIXTURES / "registry.2.14.renamed.json")
    ids = registry.index(renamed)
    for gb_id, old, new in (
        ("GB2483", "str_impl not implemented", "tp_str_impl not implemented"),
        ("GB6053", "repr_impl not implemented", "tp_repr_impl not implemented"),
        ("GB9648", "Missing richcompare_impl override", "Missing tp_richcompare_impl override"),
    ):
        assert ids.id_for(old) == ids.id_for(new) == gb_id
        assert ids.current[gb_id] == new


def test_a_torch_outside_the_supported_range_is_read_and_said(tmp_path):
    older = tmp_path / "old.log"
    older.write_text(TRACE.read_text().replace('"pytorch_version": "2.13.0+cpu"', '"pytorch_version": "2.3.1"'))
    log = tracelog.read_path(older)
    assert summary(log) == EXPECTED
    assert any("torch 2.3.1 is outside the releases gbbot reads (2.6–2.15)" in p for p in log.problems)


# --- several ranks -------------------------------------------------------------------------------


def test_a_break_seen_on_two_ranks_is_one_break_on_two_ranks(tmp_path):
    for rank in (0, 1):
        (tmp_path / f"dedicated_log_torch_trace_rank_{rank}_abcd1234.log").write_bytes(TRACE.read_bytes())
    breaks = classify.classify(tracelog.read_path(tmp_path).breaks, ROOT)
    assert summary(tracelog.read_path(tmp_path)) == EXPECTED  # counts stay per rank: 1 each
    assert {b.ranks for b in breaks} == {2}


def test_a_torch_break_reached_through_contextlib_is_a_torch_break():
    """Recorded: DistributedDataParallel compiled in one gloo process (programs/ddp.py)."""
    log = tracelog.read_path(FIXTURES / "ddp.trace.log")
    skipped = [b for b in classify.classify(log.breaks, ROOT) if b.gb_id == "GB0007"]
    assert skipped and all(b.user_stack[-1].file == "contextlib.py" for b in skipped)
    for brk in skipped:
        assert (brk.origin, brk.file, brk.fix) == (classify.Origin.TORCH, "ddp.py", None)
        assert brk.library_site.package == "torch"
        assert brk.library_site.path == "torch/nn/parallel/distributed.py"
