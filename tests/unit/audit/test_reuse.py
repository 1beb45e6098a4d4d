"""The audit's record as the base side of the diff: a flaky break of the record is neither fixed
when gone nor new when seen. (`gbbot diff` with and without a record, run whole:
tests/e2e/audit/test_baseline_from_record.py.)"""

from __future__ import annotations

import json

from gbbot.analysis import break_diff, report
from gbbot.audit import record, reuse
from gbbot.core.model import EntrypointReport, GraphBreak, Mode, Report, Status
from tests.builders import listed


def record_with(breaks: list[dict]) -> record.Record:
    entry = {"name": "fwd", "status": "ok", "graphs": 2, "breaks": 1, "frames_eager": 0, "by_category": {}}
    data = {
        "gbbot_audit": 1,
        "commit": "a" * 40,
        "date": "2026-01-01T00:00:00Z",
        "torch": "2.13.0",
        "mode": "fast",
        "config_hash": "c0ffee",
        "repeat": 2,
        "entrypoints": [{**entry, "fingerprints": breaks}],
    }
    return record.loads(json.dumps(data).encode())


def brk(fingerprint: str, **flags) -> dict:
    fields = {"gb_type": "print", "category": "SUPPORTABLE", "file": "m.py", "line": 3, "function": "f", "count": 1}
    return {"fingerprint": fingerprint, "gb_id": "GB0059", **fields, **flags}


def head_with(*breaks: GraphBreak) -> Report:
    entry = EntrypointReport("fwd", Status.OK, 0, 1.0, 2, len(breaks), 0, breaks)
    return report.new_report([entry], Mode.FAST, "2.13.0", "b" * 40, "c0ffee")


def test_a_flaky_break_of_the_record_is_neither_fixed_when_gone_nor_new_when_seen():
    base = reuse.baseline_from_record(record_with([brk("aaaaaaaa"), brk("bbbbbbbb", flaky=True)]))
    steady, flaky = base.entrypoints[0].breaks
    assert steady.explanation == "" and steady.hints == () and steady.fix is None  # nothing made up

    gone = head_with(steady)
    result = break_diff.diff(
        gone, reuse.settle_flaky(base, gone), break_diff.Comparison("main", "a" * 40, source="record")
    )
    assert (listed(result).new, listed(result).fixed, listed(result).persisting) == ((), (), ("aaaaaaaa",))

    seen = head_with(steady, flaky)
    result = break_diff.diff(
        seen, reuse.settle_flaky(base, seen), break_diff.Comparison("main", "a" * 40, source="record")
    )
    assert (listed(result).new, listed(result).fixed, listed(result).persisting) == ((), (), ("aaaaaaaa", "bbbbbbbb"))
