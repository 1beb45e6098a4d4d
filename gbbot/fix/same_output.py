"""Compare two saved `call:` results without unpickling them in gbbot's process: a pickle may run
code while it loads, and gbbot's process holds the tokens. A child started through the configured
runner (the entrypoint's own `env:`, the same allow-list) loads both files and prints a verdict
line (gbbot/child/launch.py `compare_saved`); gbbot reads only that bounded JSON line."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gbbot.backends.contract import Backend, RunRequest
from gbbot.child.launch import AFTER_VARIABLE, BEFORE_VARIABLE, REASON_CHARS, VERDICT_PREFIX
from gbbot.core.config import Config, Entrypoint
from gbbot.core.model import Mode, Status

COMPARER = "gbbot.child.launch:compare_saved"
VERDICT_LINE_MAX = 4 * REASON_CHARS
# Inside the scratch tree, so that a container (which sees the tree at the same path) finds them.
INPUTS = ".gbbot-compare"


@dataclass(frozen=True)
class Verdict:
    equal: bool | None  # None: the child could not load or compare the results
    reason: str = ""


def parse_verdict(stdout: str) -> Verdict | None:
    """The last verdict line of the child's output; None when there is none or it is malformed."""
    lines = [line for line in stdout.splitlines() if line.startswith(VERDICT_PREFIX)]
    if not lines or len(lines[-1]) > VERDICT_LINE_MAX:
        return None
    try:
        data = json.loads(lines[-1].removeprefix(VERDICT_PREFIX))
    except json.JSONDecodeError:
        return None
    equal, reason = (data.get("equal"), data.get("reason")) if isinstance(data, dict) else (0, 0)
    if equal not in (True, False, None) or not isinstance(reason, str):
        return None
    return Verdict(equal, reason[:REASON_CHARS])


def difference(verdict: Verdict | None, why_none: str) -> str | None:
    """What `judge` records: None when equal, else why not (or why it could not tell)."""
    if verdict is None:
        return f"could not compare the results: {why_none}"
    if verdict.equal is None:
        return f"could not compare the results: {verdict.reason}"
    return None if verdict.equal else verdict.reason or "the returned values differ"


@contextlib.contextmanager
def _inputs(tree: Path, before: str, after: str) -> Iterator[tuple[str, str]]:
    """The two result files inside the tree, as paths relative to it; removed afterwards."""
    folder = tree / INPUTS
    folder.mkdir(exist_ok=True)
    try:
        for name, source in (("before.pt", before), ("after.pt", after)):
            try:
                os.link(source, folder / name)
            except OSError:
                shutil.copyfile(source, folder / name)
        yield f"{INPUTS}/before.pt", f"{INPUTS}/after.pt"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class ChildComparer:
    """A `ResultComparer` that compares in a child of `backend`, in the scratch tree `tree`."""

    tree: Path
    work: Path  # a private directory for the child's output
    config: Config
    backend: Backend

    def __call__(self, entrypoint: Entrypoint, before: str, after: str) -> str | None:
        with _inputs(self.tree, before, after) as (old, new):
            child = Entrypoint(
                name="compare",
                call=COMPARER,
                timeout=entrypoint.timeout,
                env=(*entrypoint.env, (BEFORE_VARIABLE, old), (AFTER_VARIABLE, new)),
            )
            request = RunRequest(
                child, self.tree, self.work, Mode.FAITHFUL, self.config.scrub_env, False, self.config.pass_env
            )
            outcome = self.backend(request)
        why_none = f"the comparing process ended {outcome.status.value} (exit {outcome.exit_code})"
        verdict = parse_verdict(outcome.stdout_tail) if outcome.status is Status.OK else None
        return difference(verdict, f"{why_none}: {outcome.reason or _last_line(outcome.stderr_tail)}")


def _last_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[-1][:REASON_CHARS]
