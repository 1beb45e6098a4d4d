"""`gbbot init`'s check of its `model:` proposals: each built and called once, uncompiled, in a
child started through the same launcher a `model:` entrypoint uses (gbbot/child/launch.py
`--try-model`), with the entrypoints' allow-listed environment (no token), offline switches for the
usual model hubs, and a time limit. A proposal that fails is written commented out, with its
error's last line, instead of an entry that `gbbot check` would only report as failed.

This runs the repository's code: `gbbot init --no-build` skips it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from gbbot.backends.contract import PACKAGE_PARENT, inherited
from gbbot.core import call_args
from gbbot.core.config import Entrypoint
from gbbot.edges import process

BUILD_TIMEOUT_S = 60.0
# Libraries that download weights or data read these: a proposal is built from what is on disk
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
ERROR_CHARS = 200


def last_line(stderr: str) -> str:
    """The error's last line (`ValueError: …`), short enough for a comment."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    found = lines[-1] if lines else "it failed and printed nothing"
    return found if len(found) <= ERROR_CHARS else found[: ERROR_CHARS - 1] + "…"


def environment(base: Mapping[str, str]) -> dict[str, str]:
    env = inherited(base, (), ())
    paths = [str(PACKAGE_PARENT), *filter(None, [env.get("PYTHONPATH", "")])]
    return {**env, **OFFLINE, "PYTHONPATH": os.pathsep.join(paths), "PYTHONUNBUFFERED": "1"}


def try_model(root: Path, entrypoint: Entrypoint, timeout: float = BUILD_TIMEOUT_S) -> str | None:
    """None when the model was built and its method returned; else why not, in one line."""
    command = [sys.executable, "-m", "gbbot.child.launch", "--try-model"]
    command += [call_args.encode_model(entrypoint), str(entrypoint.model)]
    try:
        finished = process.run(command, cwd=root, env=environment(os.environ), timeout=timeout)
    except process.TimeoutExpired:
        return f"building and calling it took longer than {timeout:.0f}s"
    if finished.code == 0:
        return None
    return last_line(finished.stderr.decode("utf-8", "replace"))


def try_models(root: Path, entrypoints: Sequence[Entrypoint]) -> dict[str, str]:
    """The `model:` entrypoints that failed, by name: their error's last line."""
    failed = {}
    for entrypoint in entrypoints:
        if entrypoint.kind == "model":
            error = try_model(root, entrypoint)
            if error is not None:
                failed[entrypoint.name] = error
    return failed
