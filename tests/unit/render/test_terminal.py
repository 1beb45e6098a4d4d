"""The terminal view: long code is cut where a reader still recognises it."""

from __future__ import annotations

from gbbot.render import terminal
from gbbot.render.terminal import shorten


def test_long_code_is_cut_at_a_token_with_an_ellipsis():
    code = "out = torch.nn.functional.scaled_dot_product_attention(query_states, key_states, value_states)"
    short = shorten(code, 60)
    assert short.endswith("…") and len(short) <= 60
    assert code.startswith(short[:-1]) and code[len(short) - 1] in " (,."
    assert terminal.shorten("x = 1") == "x = 1"
