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
from gbbot.trace.run_counts import MAX_ENTRIES, MAX_FILE_BYTES, MAX_FILES

TIMES_PREFIX = "gbbot-times-"  # the shim's TIMES_PREFIX
DEVICES = ("cpu", "cuda")
BOUNDS = untrusted_json.Bounds(depth=3, values=7 * MAX_ENTRIES + 16, number_chars=32)


def read(trace_dir: Path | None) -> tuple[RunTimes | None, tuple[str, ...]]:
    """Every process's timings of the run, added up (None: no process wrote any — nothing was
    compiled, or the program ended through os._exit), and what could not be read, in words."""
    if trace_dir is None or not trace_dir.is_dir():
        return None, ()
    files = sorted(trace_dir.glob(f"{TIMES_PREFIX}*.json"))[:MAX_FILES]
    found: list[RunTimes] = []
    problems: list[str] = []
    for path in files:
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                raise untrusted_json.Refused(f"over {MAX_FILE_BYTES} bytes")
            found.append(parse(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, untrusted_json.Refused) as exc:
            problems.append(f"{path.name}: call times left out ({exc})")
    return (added(found) if found else None), tuple(problems)


def parse(text: str) -> RunTimes:
    data = untrusted_json.loads(text, BOUNDS)
    if not isinstance(data, dict):
        raise untrusted_json.Refused("not an object")
    device = data.get("device")
    if device not in DEVICES:
        raise untrusted_json.Refused(f"`device` is not one of {', '.join(DEVICES)}")
    calls = data.get("calls", [])
    if not isinstance(calls, list) or len(calls) > MAX_ENTRIES or not all(isinstance(c, dict) for c in calls):
        raise untrusted_json.Refused(f"`calls` is not a list of at most {MAX_ENTRIES} objects")
    return added(_call(c, device) for c in calls) if calls else RunTimes(0, 0.0, 0, device)


def _count(entry: dict, name: str) -> int:
    value = entry.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise untrusted_json.Refused(f"`{name}` is not a count")
    return value


def _call(entry: dict, device: str) -> RunTimes:
    spent = entry.get("steady_s")
    if isinstance(spent, bool) or not isinstance(spent, int | float) or not math.isfinite(spent) or spent < 0:
        raise untrusted_json.Refused("`steady_s` is not a duration")
    return RunTimes(_count(entry, "steady_calls"), float(spent), _count(entry, "compiled_calls"), device)
