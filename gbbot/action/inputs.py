"""The action's inputs: the one place their names are defined (action.yml declares the same).

A Docker container action gets each input as the environment variable `INPUT_<NAME>`, the name
upper-cased with its hyphens kept (`INPUT_FAIL-ON`). bash passes such names on to what it runs;
Debian's dash drops them, which is why the container's entrypoint is a bash script. Inputs reach
gbbot only this way, never interpolated into a shell line. The underscore spelling (`INPUT_FAIL_ON`)
is accepted too, for running `gbbot action` by hand.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gbbot.core import jobs
from gbbot.core.config import FAIL_ON
from gbbot.core.errors import GbbotError
from gbbot.core.model import Mode
from gbbot.publish.comment import CommentMode

# name → (default, description); action.yml's `inputs:` mirror this table.
INPUTS: dict[str, tuple[str, str]] = {
    "config": ("", "path of the gbbot config (default: .gbbot.yml at the repository root)"),
    "base-ref": ("", "compare with this ref (default: the pull request's base commit)"),
    "mode": ("", "fast | faithful (default: the config's)"),
    "fail-on": ("", "new | any | none: what fails the check (default: the config's)"),
    "comment-mode": ("changes", "always | changes | off: when to create or update the PR comment"),
    "header": ("", "a name for this report, so that several workflows keep separate comments and check runs"),
    "token": ("", "GitHub token used to publish (the workflow passes github.token)"),
    "report-path": ("gbbot-report/report.json", "where the report is written (pull_request) or read (workflow_run)"),
    "sarif-path": ("gbbot-report/gbbot.sarif", "where the SARIF file is written (empty: none)"),
    "check-name": ("gbbot", "name of the check run (the header is appended)"),
    "annotate": ("changed", "changed | all: annotate what the PR changed, or every break (the old ones too)"),
    "artifact-name": (
        "",
        "name of the artifact the workflow uploads the report as; the comment points at it (empty: none)",
    ),
    "bot-login": ("", "login the token comments as (default: GET /user, else github-actions[bot])"),
    "jobs": ("1", "entrypoints run in parallel; auto: one per core the memory allows, 1 with a GPU"),
    "setup": ("true", "false: skip the config's setup: steps (the job built the entrypoints' environment already)"),
    "cache-dir": (
        "gbbot-cache",
        "baseline cache of merge-base reports; relative paths are under $RUNNER_TEMP (outside the workspace,"
        " where actions/cache keeps runner.temp + /gbbot-cache); empty: no cache",
    ),
    "baseline-from-branch": (
        "",
        "the audit's data branch (e.g. gbbot-data): its record of the merge-base is the baseline when it fits;"
        " empty: off",
    ),
    "fix": ("false", "true: verify fix patches for the new breaks (re-runs entrypoints) and suggest them"),
    "gb-fix": ("", "issue_comment: the /gb-fix stage this step runs: authorize | fix | push"),
    "head-sha": ("", "/gb-fix fix and push stages: the PR head commit the authorize stage pinned"),
    "fix-permission": ("write", "/gb-fix: the least role a commenter needs: write | maintain | admin"),
}
GB_FIX_STAGES = ("authorize", "fix", "push")
FIX_PERMISSIONS = ("write", "maintain", "admin")
ANNOTATE = ("changed", "all")


def env_name(name: str) -> str:
    return f"INPUT_{name.upper()}"


def raw_input(name: str, environ: Mapping[str, str]) -> str:
    default = INPUTS[name][0]
    value = environ.get(env_name(name), environ.get(env_name(name).replace("-", "_"), ""))
    return value.strip() or default


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value and value not in allowed:
        raise GbbotError(f"input {name}: {value!r} is not one of {', '.join(allowed)}")
    return value


@dataclass(frozen=True)
class Inputs:
    config: Path | None
    base_ref: str
    mode: str  # "" = the config's
    fail_on: str  # "" = the config's
    comment_mode: CommentMode
    header: str
    token: str
    report_path: Path
    sarif_path: Path | None
    check_name: str
    artifact_name: str
    bot_login: str
    annotate_all: bool
    jobs: int | str  # a number or `auto` (resolved with the config, in context.py)
    fix: bool
    setup: bool
    cache_dir: Path | None
    baseline_from_branch: str = ""  # "" = off
    gb_fix: str = ""  # "" = not a /gb-fix step
    head_sha: str = ""
    fix_permission: str = "write"

    def __repr__(self) -> str:  # never print the token
        return f"Inputs(header={self.header!r}, comment_mode={self.comment_mode.value}, fail_on={self.fail_on!r})"


def _jobs(value: str) -> int | str:
    try:
        return jobs.parse(value)
    except ValueError as exc:
        raise GbbotError(f"input jobs: {exc}") from None


def read(environ: Mapping[str, str] = os.environ) -> Inputs:
    """Every input from the environment, checked; a bad value is a usage error (exit 2)."""
    get = lambda name: raw_input(name, environ)  # noqa: E731 - a short local alias
    comment_mode = _choice("comment-mode", get("comment-mode"), tuple(m.value for m in CommentMode))
    return Inputs(
        config=Path(get("config")) if get("config") else None,
        base_ref=get("base-ref"),
        mode=_choice("mode", get("mode"), tuple(m.value for m in Mode)),
        fail_on=_choice("fail-on", get("fail-on"), FAIL_ON),
        comment_mode=CommentMode(comment_mode),
        header=get("header"),
        token=get("token"),
        report_path=Path(get("report-path")),
        sarif_path=Path(get("sarif-path")) if get("sarif-path") else None,
        check_name=get("check-name"),
        artifact_name=get("artifact-name"),
        bot_login=get("bot-login"),
        annotate_all=_choice("annotate", get("annotate"), ANNOTATE) == "all",
        jobs=_jobs(get("jobs")),
        fix=_choice("fix", get("fix").lower(), ("true", "false")) == "true",
        setup=_choice("setup", get("setup").lower(), ("true", "false")) == "true",
        cache_dir=cache_dir(environ.get(env_name("cache-dir"), None), environ),
        baseline_from_branch=get("baseline-from-branch"),
        gb_fix=_choice("gb-fix", get("gb-fix"), GB_FIX_STAGES),
        head_sha=_sha("head-sha", get("head-sha")),
        fix_permission=_choice("fix-permission", get("fix-permission"), FIX_PERMISSIONS),
    )


def _sha(name: str, value: str) -> str:
    if value and not (len(value) == 40 and all(c in "0123456789abcdef" for c in value)):
        raise GbbotError(f"input {name}: {value!r} is not a full commit SHA")
    return value


def cache_dir(value: str | None, environ: Mapping[str, str]) -> Path | None:
    """The baseline cache: absolute as given; relative under $RUNNER_TEMP (the runner maps it into
    the container), so it never makes the checked-out tree look dirty; none without RUNNER_TEMP."""
    value = INPUTS["cache-dir"][0] if value is None else value.strip()
    if not value:
        return None
    if Path(value).is_absolute():
        return Path(value)
    temp = environ.get("RUNNER_TEMP")
    return Path(temp) / value if temp else None
