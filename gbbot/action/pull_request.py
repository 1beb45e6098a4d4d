"""`pull_request`: run the diff against the PR's base (no token is used until every entrypoint has
finished; their environment is scrubbed of tokens), write report.json, SARIF, the job summary and
the outputs, then publish — or fall back to annotations when the token is read-only (a fork's PR)."""

from __future__ import annotations

from gbbot.action import analysis, outputs
from gbbot.action.context import Context
from gbbot.action.event import PullRequestEvent
from gbbot.action.publishing import destination, publish_or_fallback


def handle(ctx: Context, event: PullRequestEvent) -> int:
    report = analysis.diff(ctx, ctx.inputs.base_ref or event.base_sha)
    if ctx.inputs.fix:
        report = analysis.with_fixes(ctx, report)
    policy = ctx.fail_on()
    text = outputs.content(ctx, report, ctx.env.run_url)
    where = destination(ctx, event.number, event.head_sha, policy, ctx.env.run_url)
    published = publish_or_fallback(ctx, report, text, where)
    outputs.finish(ctx, report, policy, text, published)
    return outputs.exit_code(report, policy, published, ctx.fail_on_recompiles())
