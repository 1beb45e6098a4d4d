"""`gbbot init`'s builds: its model candidates built small and called once, uncompiled, in one
child (gbbot/child/try_models.py finds their arguments and inputs), with the entrypoints'
allow-listed environment (no token), offline switches for the usual model hubs, and time limits.
What the child writes back is data: each result is checked like a config's values before init
writes it, and a candidate the child never reported (it crashed or ran out of time there) is
failed with why, the others tried again in a new child.

This runs the repository's code: `gbbot init --no-build` skips it.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from gbbot.backends.contract import PACKAGE_PARENT, inherited
from gbbot.core import call_args
from gbbot.core.errors import ConfigError
from gbbot.edges import process

SECONDS_PER_SCALE = 5.0  # one candidate's build and call at one size
BUILD_TIMEOUT_S = 90.0  # all of them, imports included
# Libraries that download weights or data read these: a proposal is built from what is on disk
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
ERROR_CHARS = 200
MAX_RESULTS_BYTES = 1 << 20


def last_line(text: str) -> str:
    """An error's last line (`ValueError: …`), short enough for a comment."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    found = lines[-1] if lines else "it failed and printed nothing"
    return found if len(found) <= ERROR_CHARS else found[: ERROR_CHARS - 1] + "…"


def environment(base: Mapping[str, str]) -> dict[str, str]:
    env = inherited(base, (), ())
    paths = [str(PACKAGE_PARENT), *filter(None, [env.get("PYTHONPATH", "")])]
    return {**env, **OFFLINE, "PYTHONPATH": os.pathsep.join(paths), "PYTHONUNBUFFERED": "1"}


Result = dict  # args, kwargs, inputs, input_kwargs (checked config values), error (None: it ran)


def _result(line: str, names: set[str]) -> tuple[str, Result] | None:
    """One result line, checked as a config's values are; None when it is not one."""
    try:
        data = json.loads(line)
        name = data["name"]
        if name not in names:
            return None
        found = {key: call_args.check_args("init", key, data.get(key, [])) for key in ("args", "inputs")}
        found |= {key: call_args.check_kwargs("init", key, data.get(key, {})) for key in ("kwargs", "input_kwargs")}
        return name, {**found, "error": None if data["ok"] is True else last_line(str(data.get("error", "")))}
    except (ValueError, KeyError, TypeError, ConfigError):
        return None


def failed(error: str) -> Result:
    return {"args": (), "kwargs": (), "inputs": (), "input_kwargs": (), "error": error}


def _run(root: Path, candidates: Sequence[Mapping], request: dict, timeout: float) -> tuple[dict, str]:
    """One child over `candidates`: what it reported, and why it stopped before it had tried them
    all or had as many that ran as wanted ("" when it did not)."""
    with tempfile.TemporaryDirectory(prefix="gbbot-init-") as folder:
        asked, results = Path(folder, "request.json"), Path(folder, "results.jsonl")
        asked.write_text(json.dumps({**request, "candidates": list(candidates), "seconds": SECONDS_PER_SCALE}))
        command = [sys.executable, "-m", "gbbot.child.try_models", str(asked), str(results)]
        try:
            finished = process.run(command, cwd=root, env=environment(os.environ), timeout=timeout)
            stopped = last_line(finished.stderr.decode("utf-8", "replace"))
        except process.TimeoutExpired:
            stopped = f"init's builds took longer than {BUILD_TIMEOUT_S:.0f}s in all"
        text = results.read_bytes()[:MAX_RESULTS_BYTES].decode("utf-8", "replace") if results.exists() else ""
    names = {c["name"] for c in candidates}
    reported = dict(filter(None, (_result(line, names) for line in text.splitlines())))
    finished = len(reported) == len(names) or sum(r["error"] is None for r in reported.values()) >= request["wanted"]
    return reported, "" if finished else stopped or "init's child ended before it"


def try_models(
    root: Path, candidates: Sequence[Mapping], settings: Mapping[str, object], wanted: int
) -> dict[str, Result]:
    """The candidates' results by `name`, in order, until `wanted` of them ran (the rest are not
    tried): a child that stopped on one fails it with why and starts again after it, until
    BUILD_TIMEOUT_S is spent."""
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    found: dict[str, Result] = {}
    rest = list(candidates)
    while rest and sum(r["error"] is None for r in found.values()) < wanted:
        request = {"settings": dict(settings), "wanted": wanted - sum(r["error"] is None for r in found.values())}
        reported, stopped = _run(root, rest, request, max(1.0, deadline - time.monotonic()))
        found.update(reported)
        if not stopped:
            break
        rest = [c for c in rest if c["name"] not in found]
        if rest:
            found[rest[0]["name"]] = failed(stopped)
            rest = rest[1:] if time.monotonic() < deadline else []
    return found
