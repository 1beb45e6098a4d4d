"""The terminal view as a person reads it: at 80 columns nothing is cut off at the right and code
stays readable, at 120 no column stays blank while code is cut, and a failed entrypoint says why.
The golden files are the exact text at 80 and 120 columns (`GBBOT_UPDATE_GOLDEN=1` rewrites them)."""

from __future__ import annotations

import os
import re
from dataclasses import replace

import pytest

from gbbot.core.model import Category, FrameRef, LibrarySite, Status
from gbbot.render import markdown, terminal
from gbbot.render.width import shorten
from tests.builders import (
    DTYPE,
    INFO,
    entrypoint,
    recompile_reason,
    recompiled_frame,
    recompiled_report,
    report,
    report_of,
    traced_break,
)
from tests.conftest import GOLDEN

LONG_CODE = "hidden_states = self.attentions[i](hidden_states, encoder_hidden_states=encoder_hidden_states).sample"
FAILED_OUTPUT = "\n".join(f"epoch {n}: loss {1 / (n + 1):.3f}" for n in range(30)) + "\nValueError: loss is nan"


def _breaks() -> list:
    model = FrameRef("src/diffusion/models/unets/unet_2d_condition.py", 1020, "forward", "UNet2DConditionModel.forward")
    return [
        traced_break(
            1,
            file="src/diffusion/models/unets/unet_2d_blocks.py",
            line=1187,
            function="CrossAttnDownBlock2D.forward",
            code=LONG_CODE,
        ),
        traced_break(
            2,
            file="src/diffusion/models/unets/unet_2d_blocks.py",
            line=880,
            function="ResnetBlock2D.forward",
            code="logger.info('resnet: %s', hidden_states.shape)",
            gb_id="GB0291",
            frame_skipped=True,
            makes_eager=(model,),
            fix="logger",
            count=4,
        ),
        traced_break(
            3,
            file="train.py",
            line=42,
            function="train_step",
            code="logger.warning_once(f'step {step}: loss {loss.item():.4f}')",
            category=Category.FUNDAMENTAL,
            library_site=LibrarySite("transformers", "transformers/utils/logging.py", 328, "warning_once"),
            fix=None,
        ),
    ]


def _seen_report():
    """Three breaks (one makes a caller run eagerly, one is in a library), recompiles (a dtype flip
    as on the base, one a new break made, automatic dynamic), a failed and a timed-out entrypoint."""
    breaks = _breaks()
    by_break = recompiled_frame(
        "ResnetBlock2D.forward",
        871,
        5,
        (recompile_reason("shape", count=4, guard="tensor 'x' size mismatch at index 1. expected 64, actual 128"),),
        new_break=breaks[1].fingerprint,
        file="src/diffusion/models/unets/unet_2d_blocks.py",
    )
    seen = recompiled_report(breaks, (by_break, DTYPE, INFO), persisting=(DTYPE,))
    failed = entrypoint("evaluate", (), status=Status.FAILED, exit_code=1, error=FAILED_OUTPUT, graph_count=0)
    hung = entrypoint(
        "sample",
        (),
        status=Status.TIMEOUT,
        exit_code=None,
        graph_count=0,
        error="timed out after 60 s; process group killed\nstdout:\nloading weights\nsampling step 1/50",
    )
    return replace(seen, entrypoints=(*seen.entrypoints, failed, hung))


@pytest.mark.parametrize("columns", [80, 120])
def test_the_terminal_is_the_golden_file(columns):
    text = terminal.render(_seen_report(), columns)
    golden = GOLDEN / "terminal" / f"{columns}.txt"
    if os.environ.get("GBBOT_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_no_line_is_wider_than_the_terminal_and_every_table_is_closed_on_the_right(columns):
    lines = terminal.render(_seen_report(), columns).splitlines()
    assert max(len(line) for line in lines) <= columns
    for line in lines:
        if line[:1] in "│┃┏┡└├":
            assert line.rstrip()[-1] in "│┃┓┩┘┤", line


def test_at_80_columns_the_code_keeps_most_of_its_line_and_notes_stay_apart():
    text = terminal.render(_seen_report(), 80)
    assert "│ hidden_states = self.attentions[i](hidden_states,…" in text
    assert "logger.info('resnet: %s', hidden_states.shape)" in text
    # each note on a line of its own, never run into the next
    assert re.search(r"│ gbbot fix: logger +│\n", text) and re.search(r"│ NEW +│ ", text)
    assert not re.search(r"eagerly (gbbot )?fix:", text)


def test_at_120_columns_code_is_whole_and_no_column_is_left_blank():
    text = terminal.render(_seen_report(), 120)
    assert "logger.warning_once(f'step {step}: loss {loss.item():.4f}')" in text
    assert "hidden_states = self.attentions[i](hidden_states, encoder_hidden_states=encoder_hidden_states)…" in text
    header = next(line for line in text.splitlines() if line.startswith("┃ #"))
    assert [cell.strip() for cell in header.strip("┃").split("┃")] == ["#", "break", "where, code and notes"]


def test_the_breaks_column_counts_distinct_breaks_as_the_summary_line_does():
    seen = report_of(entrypoint("train", [traced_break(1, count=3), traced_break(2, count=4)]))
    text = terminal.render(seen, 120)
    row = next(line for line in text.splitlines() if line.startswith("│ train"))
    assert [cell.strip() for cell in row.strip("│").split("│")][3] == "2"
    assert "2 graph breaks (7 occurrences) in 1 entrypoint" in text


def test_a_break_that_makes_a_frame_run_eagerly_comes_first_in_the_terminal_and_the_markdown():
    seen = _seen_report()
    text = terminal.render(seen, 120)
    assert text.index("logger.info('resnet") < text.index("hidden_states = self.attentions")
    md = markdown.render(seen)
    assert md.index("logger.info('resnet") < md.index("hidden_states = self.attentions")


def test_a_failed_entrypoint_shows_its_exit_code_and_last_lines_saying_how_many_were_left_out():
    text = terminal.render(_seen_report(), 80)
    block = text[text.index("evaluate: failed") :]
    assert block.startswith("evaluate: failed (exit code 1)\n  … 19 lines omitted")
    assert "  ValueError: loss is nan" in block and "epoch 19:" in block and "epoch 18:" not in block


def test_a_timeout_shows_the_last_output_before_it():
    text = terminal.render(_seen_report(), 80)
    block = text[text.index("sample: timeout") :]
    assert "timed out after 60 s" in block and "sampling step 1/50" in block


def test_a_recompile_a_new_break_made_gets_no_advice_and_names_the_break():
    text = terminal.render(_seen_report(), 120)
    block = text[text.index("ResnetBlock2D.forward", text.index("Recompilations")) :]
    block = block[: block.index("├")]
    assert "because of the new break at src/diffusion/models/unets/unet_2d_blocks.py:880" in block
    assert "Advice" not in block and "→" not in block
    assert "→ Advice for dtype." in text


def test_long_code_is_cut_at_a_token_with_an_ellipsis():
    short = shorten(LONG_CODE, 60)
    assert short.endswith("…") and len(short) <= 60
    assert LONG_CODE.startswith(short[:-1]) and LONG_CODE[len(short) - 1] in " (,."
    assert shorten("x = 1", terminal.CODE_CHARS) == "x = 1"


def test_the_summary_is_text_for_the_caller_to_print_styled_only_for_a_terminal():
    made = report([traced_break(1), traced_break(2)], new=[traced_break(2)])
    plain = terminal.render(made, columns=120)
    assert "1 new, 0 fixed, 1 persisting vs main" in plain and "\x1b[" not in plain
    assert max(len(line) for line in plain.splitlines()) <= 120
    styled = terminal.render(made, columns=120, color_system="standard")
    assert "\x1b[" in styled and re.sub(r"\x1b\[[0-9;]*m", "", styled) == plain


def test_a_log_with_no_terminal_and_no_columns_gets_tables_of_120_columns():
    import subprocess
    import sys

    probe = "from gbbot.edges.console import width; print(width())"
    env = {**os.environ, "COLUMNS": "93"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True).stdout
    assert out.strip() == "93"
    env.pop("COLUMNS")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True).stdout
    assert out.strip() == "120"  # a pipe with no COLUMNS: a CI log's width
    assert max(len(line) for line in terminal.render(_seen_report(), int(out)).splitlines()) <= 120
