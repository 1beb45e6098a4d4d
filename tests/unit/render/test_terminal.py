"""The terminal view: long code is cut where a reader still recognises it."""

from __future__ import annotations

import re

from gbbot.render import terminal
from gbbot.render.terminal import shorten
from tests.builders import report, traced_break


def test_long_code_is_cut_at_a_token_with_an_ellipsis():
    code = "out = torch.nn.functional.scaled_dot_product_attention(query_states, key_states, value_states)"
    short = shorten(code, 60)
    assert short.endswith("…") and len(short) <= 60
    assert code.startswith(short[:-1]) and code[len(short) - 1] in " (,."
    assert terminal.shorten("x = 1") == "x = 1"


def test_the_summary_is_text_for_the_caller_to_print_styled_only_for_a_terminal():
    made = report([traced_break(1), traced_break(2)], new=[traced_break(2)])
    plain = terminal.render(made, width=120)
    assert "1 new, 0 fixed, 1 persisting vs main" in plain and "\x1b[" not in plain
    assert max(len(line) for line in plain.splitlines()) <= 120
    styled = terminal.render(made, width=120, color_system="standard")
    assert "\x1b[" in styled and re.sub(r"\x1b\[[0-9;]*m", "", styled) == plain
