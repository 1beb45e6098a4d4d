"""Which handler answers which workflow event, and the settings it runs with (resolved once, here)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gbbot.action import event, issue_comment, other, pull_request, schedule, workflow_run
from gbbot.action.context import Context, settings
from gbbot.action.inputs import Inputs
from gbbot.action.workflow import WorkflowEnv

# Each handler takes the event its name parses into (see `event.load`) and returns the exit code.
Handler = Callable[[Context, event.Event], int]


def _always(given: Inputs) -> bool:
    return True


@dataclass(frozen=True)
class Route:
    handle: Handler
    reads_config: Callable[[Inputs], bool] = _always  # whether its step opens the config file


ROUTES: dict[str, Route] = {
    "pull_request": Route(pull_request.handle),
    "workflow_run": Route(workflow_run.handle),  # for the fail policy, when the repository has a config
    "schedule": Route(schedule.handle),
    "workflow_dispatch": Route(schedule.handle),
    "issue_comment": Route(issue_comment.handle, issue_comment.reads_config),
}
FOR_OTHER_EVENTS = Route(other.handle)  # push, check_run, … (schedule and workflow_dispatch audit)


def run(given: Inputs, env: WorkflowEnv) -> int:
    found = event.load(env.event_name, env.event_path)
    route = ROUTES.get(env.event_name, FOR_OTHER_EVENTS)
    return route.handle(Context(given, env, settings(given, env, route.reads_config(given))), found)
