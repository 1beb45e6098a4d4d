"""What `/gb-fix` says: one line per break, under pushed, not pushed (why) and not attempted (why);
"nothing left to fix" when no break is the command's. Pure, on hand-made reports."""

from __future__ import annotations

from dataclasses import replace

from gbbot.core.fixes import FixResult, FixStatus
from gbbot.deliver import scope
from gbbot.gbfix import replies
from gbbot.gbfix.command import parse
from tests.builders import report, traced_break

ADDED = traced_break(1, file="pkg/net.py", line=12)
NO_FIX = traced_break(2, file="pkg/net.py", line=14, gb_id="GB0170", fix=None)
OLD = traced_break(3, file="pkg/net.py", line=40)
CHANGED = {"pkg/net.py": {12, 14}}


def diffed(**changes):
    return replace(report([ADDED, NO_FIX, OLD], new=[ADDED, NO_FIX]), **changes)


def test_the_reply_lists_each_break_once_under_what_became_of_it():
    made = diffed(fixes=(FixResult(NO_FIX.fingerprint, FixStatus.ADVICE, "pkg/net.py", 14, reason="no recipe fits"),))
    command = parse("/gb-fix")
    chosen = scope.scope(made, CHANGED)
    said = replies.Sections(
        fixed=["- `GB0059` `pkg/net.py:12` (print): guarded"],
        remaining=replies.remaining_lines(made, {ADDED.fingerprint}, command, chosen),
        not_attempted=replies.not_attempted_lines(command, chosen),
    )
    text = replies.pushed("https://x/commit/abc", "abc" * 14, said)
    assert "with 1 verified fix(es)." in text and "not pushed: see below" not in text
    pushed, not_pushed, not_attempted, whose = text.split("\n\n")[1:]
    assert pushed == "**Pushed**\n- `GB0059` `pkg/net.py:12` (print): guarded"
    assert not_pushed == "**Not pushed**\n- `GB0170` `pkg/net.py:14`: no recipe fits"
    assert not_attempted.startswith("**Not attempted**\n- `GB0059` `pkg/net.py:40`: it predates this pull request")
    assert whose == replies.WHOSE_WORD


def test_a_selector_names_the_breaks_in_scope_it_leaves_out():
    command = parse("/gb-fix GB0170")
    chosen = scope.scope(diffed(), CHANGED)
    assert replies.in_scope(command, chosen)
    lines = replies.not_attempted_lines(command, chosen)
    assert lines[0] == "- `GB0059` `pkg/net.py:12`: the command names other breaks"


def test_with_nothing_in_scope_the_answer_is_nothing_left_to_fix():
    chosen = scope.scope(diffed(), {"pkg/net.py": {1}})
    command = parse("/gb-fix")
    assert not replies.in_scope(command, chosen)
    text = replies.nothing_left(replies.Sections(not_attempted=replies.not_attempted_lines(command, chosen)), command)
    assert text.splitlines()[1] == (
        "👍 `/gb-fix`: nothing left to fix: no break that this pull request added on the lines it changed is left."
    )
    named = parse("/gb-fix dry-run GB0170")
    assert "no break that this pull request added on the lines it changed is `GB0170`." in replies.nothing_left(
        replies.Sections(), named
    )
    assert "no break in the files it changed is left." in replies.nothing_left(replies.Sections(), parse("/gb-fix all"))
