"""The Actions runner's side of a step: its environment variables and its file commands
($GITHUB_OUTPUT, $GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gbbot.core import limits

REPOSITORY = re.compile(r"^[A-Za-z0-9-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
SERVER = re.compile(r"^https?://[A-Za-z0-9.:-]+$")

# The action's outputs (action.yml's `outputs:` mirror this table).
OUTPUTS: dict[str, str] = {
    "new-breaks": "distinct new graph breaks (all breaks when there was no baseline)",
    "fixed-breaks": "distinct graph breaks the change fixed",
    "hidden-breaks": "distinct base graph breaks no longer traced because a new break makes their frame run eagerly",
    "revealed-breaks": "distinct head graph breaks the base did not trace, their frame running eagerly there (not new)",
    "total-breaks": "distinct graph breaks found, not counting ignored ones",
    "occurrences": "how often those breaks were hit, all entrypoints together",
    "not-clean-entrypoints": "entrypoints that failed, timed out, crashed or compiled nothing (breaks unknown)",
    "report-path": "path of report.json (schema v1)",
    "sarif-path": "path of the SARIF 2.1.0 file (empty when none was written)",
    "conclusion": "success | failure, from the fail-on policy",
    "comment-url": "the sticky comment (empty when none was written)",
    "check-run-url": "the check run (empty when none was made)",
    "regressions": "scheduled audit: new breaks plus entrypoints that stopped running since the previous audit",
    "issue-url": "scheduled audit: the tracking issue (empty when none was written)",
    "allowed": "/gb-fix authorize: true when the command may run (a permitted commenter, a fix to make)",
    "head-sha": "/gb-fix authorize: the PR head commit pinned when the command came",
    "head-ref": "/gb-fix authorize: the PR's head branch",
    "base-sha": "/gb-fix authorize: the PR's base commit, the fix stage's base-ref (what the PR added is judged by)",
    "pr-number": "/gb-fix authorize: the pull request the command is on",
    "args": "/gb-fix authorize: the command's words, normalised",
    "fix-commit": "/gb-fix push or autofix: the commit pushed to the PR's branch (empty when none was)",
}


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


@dataclass(frozen=True)
class WorkflowEnv:
    event_name: str
    event_path: Path | None
    repository: str  # owner/name
    api_url: str
    server_url: str
    run_id: str
    run_attempt: str
    workspace: Path
    step_summary: Path | None
    output: Path | None

    @classmethod
    def read(cls, environ: Mapping[str, str] = os.environ) -> WorkflowEnv:
        return cls(
            event_name=environ.get("GITHUB_EVENT_NAME", ""),
            event_path=_path(environ.get("GITHUB_EVENT_PATH")),
            repository=environ.get("GITHUB_REPOSITORY", ""),
            api_url=environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/"),
            server_url=environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/"),
            run_id=environ.get("GITHUB_RUN_ID", ""),
            run_attempt=environ.get("GITHUB_RUN_ATTEMPT", "1"),
            workspace=Path(environ.get("GITHUB_WORKSPACE") or os.getcwd()),
            step_summary=_path(environ.get("GITHUB_STEP_SUMMARY")),
            output=_path(environ.get("GITHUB_OUTPUT")),
        )

    @property
    def run_url(self) -> str | None:
        """This workflow run's page, when the variables that make it have the expected shape."""
        if SERVER.match(self.server_url) and REPOSITORY.match(self.repository) and self.run_id.isdigit():
            return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"
        return None


def write_outputs(path: Path | None, values: Mapping[str, str]) -> None:
    """Append `name<<DELIMITER` blocks, as the Actions toolkit does: safe for any value."""
    if path is None:
        return
    unknown = set(values) - set(OUTPUTS)
    if unknown:
        raise ValueError(f"not declared in OUTPUTS: {sorted(unknown)}")
    with path.open("a", encoding="utf-8") as out:
        for name, value in values.items():
            delimiter = f"ghadelimiter_{uuid.uuid4()}"
            out.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")


def write_step_summary(path: Path | None, text: str) -> None:
    """Append to the job summary, keeping the step's file within GitHub's 1 MiB."""
    if path is None:
        return
    used = path.stat().st_size if path.exists() else 0
    room = max(limits.STEP_SUMMARY_MAX_BYTES - used, 0)
    with path.open("a", encoding="utf-8") as out:
        out.write(limits.fit_bytes(text, room))
