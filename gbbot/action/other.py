"""push and any other event without a handler of its own (schedule and workflow_dispatch are the
audit, in `schedule`): a check of the workspace, written out; there is no pull
request to publish on."""

from __future__ import annotations

from gbbot.action import analysis, outputs
from gbbot.action.context import Context
from gbbot.action.event import OtherEvent
from gbbot.publish.content import Texts


def handle(ctx: Context, event: OtherEvent) -> int:
    ctx.log(f"event {event.name}: checking the workspace; there is no pull request to publish on")
    report = analysis.check(ctx)
    policy = ctx.settings.policy
    outputs.finish(ctx, Texts(report), policy, outputs.content(ctx, report, ctx.env.run_url), None)
    return outputs.exit_code(report, policy, None)
