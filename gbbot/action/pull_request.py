"""`pull_request`: run the diff against the PR's base (no token is used until every entrypoint has
finished; their environment is scrubbed of tokens), write report.json, SARIF, the job summary and
the outputs, then publish — or fall back to annotations when the token is read-only (a fork's PR).
With `autofix: true` in the config, a same-repository PR also gets the verified fixes of its new
breaks pushed to its branch (gbbot/action/autofix.py), and the comment says what was pushed."""

from __future__ import annotations

from gbbot.action import analysis, autofix, outputs
from gbbot.action.context import Context
from gbbot.action.event import PullRequestEvent
from gbbot.action.publishing import destination, publish_or_fallback


def handle(ctx: Context, event: PullRequestEvent) -> int:
    report = analysis.diff(ctx, ctx.inputs.base_ref or event.base_sha)
    wanted = ctx.config().autofix
    why_not = autofix.ineligible(ctx, event) if wanted else None
    if ctx.inputs.fix or (wanted and why_not is None):
        report = analysis.with_fixes(ctx, report)
    policy = ctx.policy()
    text = outputs.content(ctx, report, ctx.env.run_url)
    if wanted:
        text = text.noted(autofix.run(ctx, event, report, why_not).note)
    where = destination(ctx, event.number, event.head_sha, policy, ctx.env.run_url)
    published = publish_or_fallback(ctx, report, text, where)
    outputs.finish(ctx, report, policy, text, published)
    return outputs.exit_code(report, policy, published)
