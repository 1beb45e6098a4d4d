"""Running `gbbot action` as the Docker entrypoint does: a subprocess whose inputs and event come
only from the environment, against the GitHub stand-in."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.github_standin import GitHubStandin

WEBHOOKS = Path(__file__).parent / "data" / "webhooks"
REPOSITORY = "octo-org/octo-repo"
RUN_ID = "4242"


def webhook(name: str) -> dict:
    """One of @octokit/webhooks-examples' payloads (tests/data/webhooks)."""
    return copy.deepcopy(json.loads((WEBHOOKS / f"{name}.json").read_text()))


def pull_request_event(number: int, head_sha: str, base_sha: str, fork: bool = False) -> dict:
    payload = webhook("pull_request.opened")
    payload["number"] = payload["pull_request"]["number"] = number
    payload["pull_request"]["head"]["sha"] = head_sha
    payload["pull_request"]["base"]["sha"] = base_sha
    if fork:
        payload["pull_request"]["head"]["repo"]["full_name"] = "forker/octo-repo"
    return payload


def workflow_run_event(head_sha: str, same_repo_pull: int | None = None) -> dict:
    """A completed run of the pull_request workflow; a fork's PR is not listed in pull_requests[]."""
    payload = webhook("workflow_run.completed")
    run = payload["workflow_run"]
    run["head_sha"] = head_sha
    run["event"] = "pull_request"
    run["pull_requests"] = []
    if same_repo_pull is not None:
        run["pull_requests"] = [{"number": same_repo_pull, "head": {"sha": head_sha, "ref": "feature"}}]
    return payload


@dataclass(frozen=True)
class ActionRun:
    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str


def parse_outputs(text: str) -> dict[str, str]:
    found = {}
    for match in re.finditer(r"^([\w-]+)<<(\S+)\n(.*?)\n\2$", text, flags=re.M | re.S):
        found[match.group(1)] = match.group(3)
    return found


def run_action(
    workspace: Path,
    scratch: Path,
    standin: GitHubStandin,
    event_name: str,
    payload: dict,
    token: str,
    extra_env: dict[str, str] | None = None,
    python: str = sys.executable,
    program: tuple[str, ...] = ("-m", "gbbot"),
    **inputs: str,
) -> ActionRun:
    """`python -m gbbot action` in `workspace`; `python` is the job's interpreter (another virtual
    environment's, whose bin/ then comes first on PATH as activating it would put it); `program`:
    what runs gbbot (tests/render_count.py counts its renders)."""
    scratch.mkdir(parents=True, exist_ok=True)
    event_path, output, summary = scratch / "event.json", scratch / "output.txt", scratch / "summary.md"
    event_path.write_text(json.dumps(payload))
    for path in (output, summary):
        path.write_text("")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GITHUB_", "INPUT_", "ACTIONS_", "RUNNER_"))
    }
    env.update(
        GITHUB_ACTIONS="true",
        GITHUB_EVENT_NAME=event_name,
        GITHUB_EVENT_PATH=str(event_path),
        GITHUB_REPOSITORY=REPOSITORY,
        GITHUB_API_URL=standin.url,
        GITHUB_SERVER_URL="https://github.com",
        GITHUB_RUN_ID=RUN_ID,
        GITHUB_RUN_ATTEMPT="1",
        GITHUB_WORKSPACE=str(workspace),
        GITHUB_STEP_SUMMARY=str(summary),
        GITHUB_OUTPUT=str(output),
        TMPDIR=str(scratch),
        GBBOT_SECONDS_BETWEEN_WRITES="0",  # the stand-in has no secondary rate limits to pace for
    )
    if python != sys.executable:
        env.update(PATH=f"{Path(python).parent}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(Path(python).parent.parent))
    env.update(extra_env or {})
    env["INPUT_TOKEN"] = token
    env.update({f"INPUT_{name.upper().replace('_', '-')}": value for name, value in inputs.items()})
    done = subprocess.run(
        [python, *program, "action"], cwd=workspace, env=env, capture_output=True, text=True, timeout=600
    )
    return ActionRun(done.returncode, done.stdout, done.stderr, parse_outputs(output.read_text()), summary.read_text())
