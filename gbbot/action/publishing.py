"""From the action's inputs to a publication: where it goes (the pull request, under which
header and check name) and, without a token, the annotations instead."""

from __future__ import annotations

from gbbot.action.context import Context
from gbbot.api import Policy
from gbbot.publish.comment import header_key
from gbbot.publish.content import Texts
from gbbot.publish.fallback import fallback
from gbbot.publish.sink import Destination, Published, publish
from gbbot.render.markdown import Options


def destination(ctx: Context, number: int, head_sha: str, policy: Policy, run_url: str | None) -> Destination:
    header = ctx.inputs.header
    return Destination(
        repository=ctx.env.repository,
        pull_number=number,
        head_sha=head_sha,
        header=header,
        check_name=ctx.inputs.check_name + (f" ({header})" if header else ""),
        external_id=f"{header_key(header)}:{ctx.env.run_id}:{ctx.env.run_attempt}",
        details_url=run_url,
        comment_mode=ctx.inputs.comment_mode,
        policy=policy,
        bot_login=ctx.inputs.bot_login,
        annotate_all=ctx.inputs.annotate_all,
    )


def publish_or_fallback(ctx: Context, texts: Texts, text: Options, where: Destination) -> Published:
    if not ctx.inputs.token:
        ctx.log("no token given: not publishing; the breaks are shown as annotations instead")
        reason = "no token was given to the action"
        return Published(fallback=fallback(texts.report, where.policy, reason))
    return publish(ctx.connect(ctx.inputs.token, ctx.env.api_url), texts, text, where, ctx.retries, ctx.log)
