"""Running `gbbot action` as the Docker entrypoint does: a subprocess whose inputs and event come
only from the environment, against the GitHub stand-in."""

from __future__ import annotations

import copy
import json
import os
import pwd
import re
import subprocess
import sys
from collections.abc import Sequence
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
    command: Sequence[str] | None = None,
    uid: int | None = None,
    merged: bool = False,
    **inputs: str,
) -> ActionRun:
    """`python -m gbbot action` in `workspace`; `python` is the job's interpreter (another virtual
    environment's, whose bin/ then comes first on PATH as activating it would put it); `program`:
    what runs gbbot (tests/render_count.py counts its renders); `command`: what starts instead
    (the image's entrypoint script); `uid`: the user it runs as, with that user's group and no
    other (the files it writes are made that user's); `merged`: stderr into stdout, interleaved
    as a job log reads them."""
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
    gid = pwd.getpwuid(uid).pw_gid if uid is not None else None
    if uid is not None:
        for path in (output, summary):
            os.chown(path, uid, gid)
    done = subprocess.run(
        list(command or (python, *program, "action")),
        cwd=workspace,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        text=True,
        timeout=600,
        **({"user": uid, "group": gid, "extra_groups": []} if uid is not None else {}),
    )
    return ActionRun(
        done.returncode, done.stdout, done.stderr or "", parse_outputs(output.read_text()), summary.read_text()
    )


def obeyed(log: str) -> list[str]:
    """The workflow commands a runner obeys in `log`, read as it reads a step's output: after
    `::stop-commands::TOKEN` none until a line `::TOKEN::`."""
    stopped, found = None, []
    for line in log.splitlines():
        text = line.strip()
        if stopped is not None:
            stopped = None if text == f"::{stopped}::" else stopped
        elif text.startswith("::stop-commands::"):
            stopped = text.removeprefix("::stop-commands::")
        elif text.startswith("::"):
            found.append(text)
    return found
