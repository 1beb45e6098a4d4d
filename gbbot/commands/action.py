"""`gbbot action`: the GitHub Actions entrypoint. Inputs come from `INPUT_*` environment variables
(see gbbot/action/inputs.py), the event from `GITHUB_EVENT_NAME` / `GITHUB_EVENT_PATH`."""

from __future__ import annotations

import argparse

from gbbot.action import dispatch, inputs
from gbbot.action.workflow import WorkflowEnv
from gbbot.edges import vault


def add_arguments(parser: argparse.ArgumentParser) -> None:
    names = ", ".join(inputs.env_name(name) for name in inputs.INPUTS)
    parser.epilog = f"inputs (environment): {names}\n\n{parser.epilog}"  # the exit codes stay last


def run(args: argparse.Namespace) -> int:
    return dispatch.run(inputs.read(vault.environ()), WorkflowEnv.read())
