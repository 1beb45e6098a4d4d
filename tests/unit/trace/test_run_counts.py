"""The fast-mode counts are written by a process that ran PR code: read within bounds, field by
field, and a file that is not what the shim writes is named as a problem, never half-read."""

from __future__ import annotations

import json

import pytest

from gbbot.core.untrusted_json import Refused
from gbbot.trace import run_counts

GOOD = {"trace_log": "dedicated_log_torch_trace_0.log", "graphs": [{"compile_id": "1/0", "ops": 3, "nodes": 5,
        "runs": 7}], "calls": [{"file": "/repo/m.py", "line": 4, "name": "forward", "calls": 7}]}  # fmt: skip


def test_counts_of_every_process_are_read_and_a_bad_file_is_a_problem(tmp_path):
    (tmp_path / "gbbot-runs-1.json").write_text(json.dumps(GOOD))
    (tmp_path / "gbbot-runs-2.json").write_text('{"graphs": [{"compile_id": "1/0", "ops": -1}]}')
    found, problems = run_counts.read(tmp_path)
    assert [(g.compile_id, g.runs, g.log) for g in found.graphs] == [("1/0", 7, "dedicated_log_torch_trace_0.log")]
    assert found.calls[0].calls == 7
    assert len(problems) == 1 and "gbbot-runs-2.json" in problems[0]
    assert run_counts.read(tmp_path / "none") == (None, ())


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        '{"graphs": {"a": 1}}',
        '{"graphs": [{"compile_id": 3, "ops": 1, "nodes": 1, "runs": 1}]}',
        '{"calls": [{"file": "m.py", "line": true, "name": "f", "calls": 1}]}',
        '{"trace_log": "' + "x" * 300 + '"}',
        "[" * 50 + "]" * 50,
    ],
)
def test_what_the_shim_does_not_write_is_refused(text):
    with pytest.raises(Refused):
        run_counts.parse(text)
