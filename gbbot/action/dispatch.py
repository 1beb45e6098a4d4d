"""Which handler answers which workflow event."""

from __future__ import annotations

from collections.abc import Callable

from gbbot.action import event, issue_comment, other, pull_request, schedule, workflow_run
from gbbot.action.context import Context

# Each handler takes the event its name parses into (see `event.load`) and returns the exit code.
Handler = Callable[[Context, event.Event], int]

HANDLERS: dict[str, Handler] = {
    "pull_request": pull_request.handle,
    "workflow_run": workflow_run.handle,
    "schedule": schedule.handle,
    "workflow_dispatch": schedule.handle,
    "issue_comment": issue_comment.handle,
}
FOR_OTHER_EVENTS: Handler = other.handle  # push, check_run, … (schedule and workflow_dispatch audit)


def run(ctx: Context) -> int:
    found = event.load(ctx.env.event_name, ctx.env.event_path)
    return HANDLERS.get(ctx.env.event_name, FOR_OTHER_EVENTS)(ctx, found)
