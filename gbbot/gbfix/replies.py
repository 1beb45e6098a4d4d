"""What `/gb-fix` says on the pull request: one reply per command. Pure. Text that comes from a
report (break messages, reasons) is the fix job's word and is escaped like any untrusted text."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from gbbot.core import limits
from gbbot.core.fixes import FixResult, FixStatus
from gbbot.core.model import GraphBreak, Report
from gbbot.gbfix.command import USAGE, Command
from gbbot.render.escape import md_code, md_text

MARKER = "<!-- gbbot:gb-fix -->"
LISTED_MAX = 20
PATCH_NAME = "gbbot-fix.patch"


def _line(text: str) -> str:
    return f"{MARKER}\n{text}"


def refusal(reason: str) -> str:
    return _line(f"😕 `/gb-fix`: {md_text(reason)}")


def usage(word: str = "") -> str:
    lead = f"😕 `/gb-fix`: {md_code(word)} is not a sub-command. " if word else ""
    return _line(f"{lead}{USAGE}")


def selected(brk: GraphBreak, command: Command) -> bool:
    if command.gb_id:
        return (brk.gb_id or "").upper() == command.gb_id
    if command.fingerprint:
        return brk.fingerprint == command.fingerprint
    return brk.file == command.path if command.path else True


def _why_not(result: FixResult | None) -> str:
    if result is None:
        return "no fix recipe applies"
    if result.status is FixStatus.VERIFIED:
        return "a verified patch that was not committed"
    return result.reason or result.status.value


def remaining_lines(report: Report, fixed: Iterable[str], command: Command) -> list[str]:
    """The selected breaks the commit leaves, once each, with why no fix was committed."""
    done = set(fixed)
    results = {r.fingerprint: r for r in _results(report)}
    seen: dict[str, GraphBreak] = {}
    for brk in report.breaks:
        if not brk.ignored and brk.fingerprint not in done and selected(brk, command):
            seen.setdefault(brk.fingerprint, brk)
    lines = [
        f"- {md_code(b.gb_id or b.gb_type)} {md_code(f'{b.file}:{b.line}')}: {md_text(_why_not(results.get(f)))}"
        for f, b in list(seen.items())[:LISTED_MAX]
    ]
    more = len(seen) - LISTED_MAX
    return lines + ([f"- … and {more} more"] if more > 0 else [])


def _results(report: Report) -> tuple[FixResult, ...]:
    return report.fixes or ()


def _sections(fixed: list[str], remaining: list[str], dropped: Sequence[str] = ()) -> str:
    parts = []
    if fixed:
        parts.append("**Fixed**\n" + "\n".join(fixed))
    if dropped:
        why = "gbbot's recipes did not make them again from the pinned commit"
        parts.append(f"**Verified but not pushed** ({why})\n" + "\n".join(dropped))
    none_left = "**Remaining**: none of the selected breaks."
    parts.append("**Remaining**\n" + "\n".join(remaining) if remaining else none_left)
    parts.append("_What remains, and why, is the word of the job that ran the PR's code._")
    return "\n\n".join(parts)


def pushed(commit_url: str, sha: str, fixed: list[str], remaining: list[str], dropped: Sequence[str] = ()) -> str:
    head = f"🚀 `/gb-fix`: pushed [{md_code(sha[:12])}]({commit_url}) with {len(fixed)} verified fix(es)."
    if dropped:
        head += f" {len(dropped)} verified fix(es) left out: see below."
    return limits.fit(_line(f"{head}\n\n{_sections(fixed, remaining, dropped)}"), limits.COMMENT_BODY_MAX)


def nothing_to_fix(remaining: list[str]) -> str:
    head = "😕 `/gb-fix`: no verified fix for the selected breaks; nothing was pushed."
    return limits.fit(_line(f"{head}\n\n{_sections([], remaining)}"), limits.COMMENT_BODY_MAX)


def diff_block(patch: str) -> str:
    """The patch fenced verbatim: a fence longer than any backtick run in it, and no stripping (a
    diff's last context line can be a single space, and `git apply` needs it)."""
    longest = max((len(run) for run in re.findall(r"`{3,}", patch)), default=2)
    fence = "`" * (longest + 1)
    text = patch if patch.endswith("\n") else patch + "\n"
    return f"{fence}diff\n{text}{fence}"


def patch_comment(why: str, patch: str, fixed: list[str], remaining: list[str], dropped: Sequence[str] = ()) -> str:
    """The verified patch to apply by hand, collapsed, sized under GitHub's comment limit (a patch
    that cannot fit whole is not shown cut: a cut patch would not apply)."""
    head = f"`/gb-fix`: {md_text(why)}"
    save = md_code(PATCH_NAME)
    how = f"To apply it: save the diff as {save} at the repository root and run `git apply {PATCH_NAME}`."
    body = diff_block(patch)
    tail = _sections(fixed, remaining, dropped)
    text = _line(f"{head}\n\n<details><summary>The verified patch</summary>\n\n{body}\n\n</details>\n\n{how}\n\n{tail}")
    if len(text) <= limits.COMMENT_BODY_MAX:
        return text
    too_big = "The patch is too large for a comment; run `gbbot fix --apply` locally to make it."
    return limits.fit(_line(f"{head}\n\n{too_big}\n\n{tail}"), limits.COMMENT_BODY_MAX)
