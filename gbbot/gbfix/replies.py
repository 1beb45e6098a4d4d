"""What `/gb-fix` says on the pull request: one reply per command. Pure. Text that comes from a
report (break messages, reasons) is the fix job's word and is escaped like any untrusted text."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gbbot.core import limits
from gbbot.core.fixes import FixResult, FixStatus
from gbbot.core.model import GraphBreak, Report
from gbbot.deliver.scope import Scope
from gbbot.gbfix.command import USAGE, Command
from gbbot.render.escape import md_code, md_text

MARKER = "<!-- gbbot:gb-fix -->"
LISTED_MAX = 20
PATCH_NAME = "gbbot-fix.patch"
WHOSE_WORD = "_Which breaks there are, and why no fix was verified, is the word of the job that ran the PR's code._"


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


def _where(brk: GraphBreak) -> str:
    return f"{md_code(brk.gb_id or brk.gb_type)} {md_code(f'{brk.file}:{brk.line}')}"


def _capped(lines: list[str]) -> list[str]:
    more = len(lines) - LISTED_MAX
    return lines[:LISTED_MAX] + ([f"- … and {more} more"] if more > 0 else [])


def remaining_lines(report: Report, fixed: Iterable[str], command: Command, chosen: Scope) -> list[str]:
    """The breaks in the command's scope that the commit leaves, once each, with why no fix was
    committed."""
    done = set(fixed)
    results = {r.fingerprint: r for r in report.fixes or ()}
    lines = [
        f"- {_where(b)}: {md_text(_why_not(results.get(b.fingerprint)))}"
        for b in chosen.breaks
        if b.fingerprint not in done and selected(b, command)
    ]
    return _capped(lines)


def not_attempted_lines(command: Command, chosen: Scope) -> list[str]:
    """The breaks /gb-fix did not try to fix, once each, with why: outside its scope, or not among
    those the command names."""
    named = "the command names other breaks"
    lines = [f"- {_where(b)}: {md_text(named)}" for b in chosen.breaks if not selected(b, command)]
    lines += [f"- {_where(left.brk)}: {md_text(left.reason)}" for left in chosen.left]
    return _capped(lines)


def in_scope(command: Command, chosen: Scope) -> bool:
    """Whether any break is for this command to fix."""
    return any(selected(b, command) for b in chosen.breaks)


@dataclass(frozen=True)
class Sections:
    """What a reply lists, one line per fix or break: pushed (or in the patch); not pushed, with
    why (verified fixes gbbot left out, then the breaks in scope the fix job found no verified fix
    for); not attempted, with why."""

    fixed: Sequence[str] = ()
    dropped: Sequence[str] = ()
    remaining: Sequence[str] = ()
    not_attempted: Sequence[str] = ()
    fixed_title: str = "Pushed"

    def text(self) -> str:
        parts = []
        if self.fixed:
            parts.append(f"**{self.fixed_title}**\n" + "\n".join(self.fixed))
        if self.dropped or self.remaining:
            parts.append("**Not pushed**\n" + "\n".join([*self.dropped, *self.remaining]))
        if self.not_attempted:
            parts.append("**Not attempted**\n" + "\n".join(self.not_attempted))
        if self.remaining or self.not_attempted:
            parts.append(WHOSE_WORD)
        return "\n\n".join(parts)


def pushed(commit_url: str, sha: str, said: Sections) -> str:
    head = f"🚀 `/gb-fix`: pushed [{md_code(sha[:12])}]({commit_url}) with {len(said.fixed)} verified fix(es)."
    if said.dropped:
        head += f" {len(said.dropped)} verified fix(es) not pushed: see below."
    return limits.fit(_line(f"{head}\n\n{said.text()}"), limits.COMMENT_BODY_MAX)


def nothing_to_fix(said: Sections) -> str:
    head = "😕 `/gb-fix`: no verified fix for the breaks this pull request added; nothing was pushed."
    return limits.fit(_line(f"{head}\n\n{said.text()}"), limits.COMMENT_BODY_MAX)


def nothing_left(said: Sections, command: Command) -> str:
    """No break is the command's to fix (a second `/gb-fix` after the first was pushed)."""
    where = "in the files it changed" if command.widen else "that this pull request added on the lines it changed"
    named = f" is {md_code(command.args.removeprefix('dry-run').strip())}" if command.selects else " is left"
    head = f"👍 `/gb-fix`: nothing left to fix: no break {where}{named}."
    return limits.fit(_line(f"{head}\n\n{said.text()}".rstrip()), limits.COMMENT_BODY_MAX)


def refused_fixes(reason: str, said: Sections) -> str:
    """The fix job's patch refused, with each verified fix's own reason."""
    head = f"😕 `/gb-fix`: {md_text(reason)}"
    return limits.fit(_line(f"{head}\n\n{said.text()}".rstrip()), limits.COMMENT_BODY_MAX)


def diff_block(patch: str) -> str:
    """The patch fenced verbatim: a fence longer than any backtick run in it, and no stripping (a
    diff's last context line can be a single space, and `git apply` needs it)."""
    longest = max((len(run) for run in re.findall(r"`{3,}", patch)), default=2)
    fence = "`" * (longest + 1)
    text = patch if patch.endswith("\n") else patch + "\n"
    return f"{fence}diff\n{text}{fence}"


def patch_comment(why: str, patch: str, said: Sections) -> str:
    """The verified patch to apply by hand, collapsed, sized under GitHub's comment limit (a patch
    that cannot fit whole is not shown cut: a cut patch would not apply)."""
    head = f"`/gb-fix`: {md_text(why)}"
    save = md_code(PATCH_NAME)
    how = f"To apply it: save the diff as {save} at the repository root and run `git apply {PATCH_NAME}`."
    body = diff_block(patch)
    tail = said.text()
    text = _line(f"{head}\n\n<details><summary>The verified patch</summary>\n\n{body}\n\n</details>\n\n{how}\n\n{tail}")
    if len(text) <= limits.COMMENT_BODY_MAX:
        return text
    too_big = "The patch is too large for a comment; run `gbbot fix --apply` locally to make it."
    return limits.fit(_line(f"{head}\n\n{too_big}\n\n{tail}"), limits.COMMENT_BODY_MAX)
