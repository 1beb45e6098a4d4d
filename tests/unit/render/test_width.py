"""Text fitted to the terminal: `gbbot fix`'s block at 100 columns, places and code never split."""

from __future__ import annotations

from dataclasses import replace

from gbbot.fix import present
from gbbot.recipes.tensor_branch import WhereInsteadOfBranch
from gbbot.render import width
from tests.unit.fix.test_present import verified


def test_a_fix_block_fits_100_columns_and_its_diff_is_untouched():
    # a recipe's description is a paragraph (this one is over 450 characters on one line)
    result = replace(verified(), description=WhereInsteadOfBranch.description)
    text = present.terminal_text(result)
    assert max(len(line) for line in text.splitlines()) > 400
    fitted = width.fitted_comments(text, 100)
    assert max(len(line) for line in fitted.splitlines()) <= 100
    diff = [line for line in text.splitlines() if not line.startswith("#")]
    assert [line for line in fitted.splitlines() if not line.startswith("#")] == diff  # still applies
    # the paragraph reads the same, each continuation marked as a comment
    words = " ".join(line.lstrip("#").strip() for line in fitted.splitlines() if line.startswith("#"))
    assert WhereInsteadOfBranch.description in words


def test_summary_lines_wrap_with_an_indent():
    line = "gbbot fix: " + ", ".join(f"GB0059 print at pkg/model_{n}.py:{n}" for n in range(12))
    lines = width.fitted_lines([line], 80)
    assert len(lines) > 1 and all(len(part) <= 80 for part in lines)
    assert all(part.startswith("  ") for part in lines[1:])


def test_a_place_keeps_its_line_number_and_file_name():
    assert width.place("src/pkg/models/unets/unet_2d_blocks.py", 1187, 30) == "…/unets/unet_2d_blocks.py:1187"
    assert width.place("a.py", 3, 30) == "a.py:3"
    assert width.place("pkg/a_very_long_module_name_indeed.py", 12, 20).endswith("indeed.py:12")
