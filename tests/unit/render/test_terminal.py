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
    plain = terminal.render(made, columns=120)
    assert "1 new, 0 fixed, 1 persisting vs main" in plain and "\x1b[" not in plain
    assert max(len(line) for line in plain.splitlines()) <= 120
    styled = terminal.render(made, columns=120, color_system="standard")
    assert "\x1b[" in styled and re.sub(r"\x1b\[[0-9;]*m", "", styled) == plain


def _at(columns: int, report) -> str:
    return terminal.render(report, columns)


def _break_report():
    from gbbot.core.model import LibrarySite
    from tests.builders import entrypoint, report_of, traced_break

    breaks = [
        traced_break(
            1,
            file="src/diffusion/models/unets/unet_2d_blocks.py",
            line=1187,
            function="CrossAttnDownBlock2D.forward",
            code="hidden_states = self.attentions[i](hidden_states, encoder_hidden_states=encoder_hidden_states).sample",
        ),
        traced_break(2, file="src/diffusion/pipelines/stable_diffusion/pipeline_stable_diffusion.py", line=88),
        traced_break(
            3,
            file="train.py",
            line=42,
            code="logger.warning_once(f'step {step}: loss {loss.item():.4f}')",
            library_site=LibrarySite("transformers", "transformers/utils/logging.py", 328, "warning_once"),
        ),
    ]
    return report_of(entrypoint("train", breaks))


def test_the_table_fits_100_columns_without_splitting_file_line_or_a_token():
    out = _at(100, _break_report())
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 100, out
    # every place stays on one line, its line number whole: a long path loses its leading directories
    for place in ("/unet_2d_blocks.py:1187 ", "_stable_diffusion.py:88 ", "/logging.py:328 "):
        assert place in out, out
    # the long code is cut after a whole token, saying so
    assert "│ hidden_states = self… " in out, out
    assert "encoder_hid" not in out, out


def test_a_wide_terminal_shows_the_whole_code():
    out = _at(220, _break_report())
    assert "logger.warning_once(f'step {step}: loss {loss.item():.4f}')" in out


def test_piped_output_honours_columns(monkeypatch):
    import subprocess
    import sys

    probe = "from gbbot.edges.console import width; print(width())"
    env = {**__import__("os").environ, "COLUMNS": "93"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True).stdout
    assert out.strip() == "93"
    env.pop("COLUMNS")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True).stdout
    assert out.strip() == "160"  # a pipe with no COLUMNS: a CI log's width
