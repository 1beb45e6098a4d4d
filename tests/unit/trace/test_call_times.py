"""The timings of `gbbot fix --measure` are written by a process that ran PR code: read within
bounds, field by field, every process's calls added up, and a file that is not what the shim
writes is named as a problem, never half-read."""

from __future__ import annotations

import json

import pytest

from gbbot.core.untrusted_json import Refused
from gbbot.trace import call_times

GOOD = {"device": "cpu", "calls": [
    {"file": "/repo/m.py", "line": 4, "name": "forward", "compiled_calls": 2, "steady_calls": 8, "steady_s": 0.004},
    {"file": "/repo/m.py", "line": 9, "name": "step", "compiled_calls": 1, "steady_calls": 2, "steady_s": 0.006},
]}  # fmt: skip


def test_every_process_is_added_up_and_a_bad_file_is_a_problem(tmp_path):
    (tmp_path / "gbbot-times-1.json").write_text(json.dumps(GOOD))
    (tmp_path / "gbbot-times-2.json").write_text('{"device": "cpu", "calls": [{"steady_calls": -1}]}')
    found, problems = call_times.read(tmp_path)
    assert (found.steady_calls, found.compiled_calls, found.device) == (10, 3, "cpu")
    assert found.per_call == pytest.approx(0.001)
    assert len(problems) == 1 and "gbbot-times-2.json: call times left out" in problems[0]
    assert call_times.read(tmp_path / "none") == (None, ())


def test_a_process_with_no_compiled_call_times_nothing(tmp_path):
    (tmp_path / "gbbot-times-1.json").write_text('{"device": "cuda", "calls": []}')
    found, _ = call_times.read(tmp_path)
    assert found.steady_calls == 0 and found.per_call is None and found.device == "cuda"


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        '{"device": "tpu", "calls": []}',
        '{"device": "cpu", "calls": {"a": 1}}',
        '{"device": "cpu", "calls": [{"steady_calls": true, "compiled_calls": 0, "steady_s": 0}]}',
        '{"device": "cpu", "calls": [{"steady_calls": 1, "compiled_calls": 0, "steady_s": -1}]}',
        '{"device": "cpu", "calls": [{"steady_calls": 1, "compiled_calls": 0, "steady_s": "1"}]}',
        '{"device": "cpu", "calls": [{"steady_calls": 1, "compiled_calls": 0, "steady_s": NaN}]}',
        "[" * 50 + "]" * 50,
    ],
)
def test_what_the_shim_does_not_write_is_refused(text):
    with pytest.raises(Refused):
        call_times.parse(text)
