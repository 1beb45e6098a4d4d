"""The timed calls of one faithful-mode run (`gbbot fix --measure`): the shim
(gbbot/child/_shim/sitecustomize.py, with GBBOT_TIME=1) writes one file per process beside the
trace, each compiled callable's steady-state calls and their wall time. Written by a process that
ran the entrypoint's code, so read within bounds and checked field by field, like the run counts
(trace/run_counts.py); a file that is not what the shim writes is left out and named."""

from __future__ import annotations

import math
from pathlib import Path

from gbbot.core import untrusted_json
from gbbot.core.measured import RunTimes, added
from gbbot.trace.run_counts import MAX_ENTRIES, count, entries, read_files

TIMES_PREFIX = "gbbot-times-"  # the shim's TIMES_PREFIX
DEVICES = ("cpu", "cuda")
BOUNDS = untrusted_json.Bounds(depth=3, values=7 * MAX_ENTRIES + 16, number_chars=32)


def read(trace_dir: Path | None) -> tuple[RunTimes | None, tuple[str, ...]]:
    """Every process's timings of the run, added up (None: no process wrote any — nothing was
    compiled, or the program ended through os._exit), and what could not be read, in words."""
    found, problems = read_files(trace_dir, TIMES_PREFIX, parse, "call times")
    return (added(found) if found else None), problems


def parse(text: str) -> RunTimes:
    data = untrusted_json.loads(text, BOUNDS)
    if not isinstance(data, dict):
        raise untrusted_json.Refused("not an object")
    device = data.get("device")
    if device not in DEVICES:
        raise untrusted_json.Refused(f"`device` is not one of {', '.join(DEVICES)}")
    calls = entries(data, "calls")
    return added(_call(c, device) for c in calls) if calls else RunTimes(0, 0.0, 0, device)


def _call(entry: dict, device: str) -> RunTimes:
    spent = entry.get("steady_s")
    if isinstance(spent, bool) or not isinstance(spent, int | float) or not math.isfinite(spent) or spent < 0:
        raise untrusted_json.Refused("`steady_s` is not a duration")
    return RunTimes(count(entry, "steady_calls"), float(spent), count(entry, "compiled_calls"), device)
