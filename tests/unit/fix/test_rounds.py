"""What a later round's results say, on values: every line named is a line of the file as the
user has it, not of the patched copy the round planned on."""

from __future__ import annotations

from gbbot.core.fixes import FixResult, FixStatus
from gbbot.fix.rounds import on_original, said_at

ORIGINAL = "import torch\n\n\ndef f(x):\n    log.debug('a')\n    if x.sum() > 0:\n        x = x * 2\n    return x\n"
# round 1 guarded the logger call: everything below it moved one line down
PATCHED = ORIGINAL.replace(
    "    log.debug('a')\n", "    if not torch.compiler.is_compiling():\n        log.debug('a')\n"
)


def test_round_two_advice_names_the_line_of_the_file_as_the_user_has_it():
    advice = FixResult("f" * 16, FixStatus.ADVICE, "m.py", 7, recipe=None, reason="no mechanical fix", round=2)
    assert PATCHED.splitlines()[6] == "    if x.sum() > 0:"
    shown = on_original(advice, None, {"m.py": ORIGINAL}, {"m.py": PATCHED})
    assert shown.line == 6 and ORIGINAL.splitlines()[5] == "    if x.sum() > 0:"


def test_a_result_in_a_file_no_round_patched_keeps_its_line():
    advice = FixResult("f" * 16, FixStatus.ADVICE, "other.py", 7, round=2)
    assert on_original(advice, None, {"m.py": ORIGINAL}, {"m.py": PATCHED}).line == 7


def test_a_later_rounds_words_name_the_line_of_the_file_as_the_user_has_it():
    said = "line 194 is not a pattern the print recipe rewrites; see model.py:194 (not model.py:1945)"
    assert said_at(said, "model.py", 194, 193) == (
        "line 193 is not a pattern the print recipe rewrites; see model.py:193 (not model.py:1945)"
    )
    assert said_at(said, "model.py", 194, 194) == said
