"""Classification, attribution, folding and fingerprints, on hand-made RawBreaks (pure)."""

from __future__ import annotations

import pytest

from gbbot.classify import classify, origin_of, path_matches
from gbbot.config import IgnoreRule
from gbbot.model import BreakMessage, Category, Frame, Origin, RawBreak
from gbbot.source import source_map

ROOT = "/repo"
PRINT = BreakMessage("Failed to trace builtin operator", "GB0059", "print", ("Please report an issue to PyTorch.",))
BRANCH = BreakMessage(
    "Data-dependent branching", "GB0170", "",
    ("This graph break is fundamental - it is unlikely that Dynamo will ever be able to trace through your code. "
     "Consider finding a workaround.",),
)
UNKNOWN = BreakMessage("Some new break torch added", None)


def raw(message, *frames, skipped=False, consequences=()):
    return RawBreak(message, tuple(consequences), tuple(frames), skipped)


def frame(line, code='print("x")', file="/repo/pkg/model.py", fn="forward"):
    return Frame(file, line, fn, code)


SOURCE = """\
class Net:
    def forward(self, x):
        print("x")
        y = x + 1
        print("x")
        for i in range(3):
            print("x")
        return y
"""


def lookup(path):
    return source_map(SOURCE) if path == "pkg/model.py" else None


def test_category_from_the_message_sentence_then_the_rules_table():
    (branch,) = classify([raw(BRANCH, frame(3, "if x.sum() > 0:"))], ROOT, lookup)
    assert branch.category is Category.FUNDAMENTAL
    (printed,) = classify([raw(PRINT, frame(3))], ROOT, lookup)
    assert printed.category is Category.SUPPORTABLE and printed.fix == "print"
    (unknown,) = classify([raw(UNKNOWN, frame(3))], ROOT, lookup)
    assert unknown.category is Category.UNKNOWN and unknown.gb_id is None and unknown.fix is None


def test_qualname_and_loop_come_from_the_source():
    found = classify([raw(PRINT, frame(3)), raw(PRINT, frame(7))], ROOT, lookup)
    assert {b.function for b in found} == {"Net.forward"}
    assert [b.in_loop for b in found] == [True, False]  # impact order: the loop first


def test_same_break_reported_twice_is_folded_and_counted():
    (brk,) = classify([raw(PRINT, frame(3)), raw(PRINT, frame(3, fn="torch_dynamo_resume_in_forward_at_2"))], ROOT, lookup)
    assert brk.count == 2


def test_identical_breaks_on_different_lines_stay_distinct():
    found = classify([raw(PRINT, frame(3)), raw(PRINT, frame(5))], ROOT, lookup)
    assert len({b.fingerprint for b in found}) == 2


def test_fingerprint_survives_lines_inserted_above_and_whitespace():
    before = classify([raw(PRINT, frame(3))], ROOT, lookup)[0]
    shifted = classify([raw(PRINT, frame(30, 'print( "x" )'.replace("( ", "(").replace(" )", ")")))], ROOT,
                       lambda p: source_map("\n" * 27 + SOURCE) if p == "pkg/model.py" else None)[0]
    assert shifted.line == 30 and shifted.fingerprint == before.fingerprint
    spaced = classify([raw(PRINT, frame(3, '   print("x")   # a new comment'))], ROOT, lookup)[0]
    assert spaced.fingerprint == before.fingerprint


def test_fingerprint_changes_with_the_code_or_the_function():
    base = classify([raw(PRINT, frame(3))], ROOT, lookup)[0]
    other_code = classify([raw(PRINT, frame(3, 'print("y")'))], ROOT, lookup)[0]
    other_file = classify([raw(PRINT, frame(3, file="/repo/pkg/other.py"))], ROOT, lookup)[0]
    assert len({base.fingerprint, other_code.fingerprint, other_file.fingerprint}) == 3


def test_attribution_to_the_innermost_repository_frame():
    stack = (
        frame(3),
        Frame("/usr/lib/python3.11/logging/__init__.py", 1700, "isEnabledFor", "return ..."),
    )
    (brk,) = classify([raw(PRINT, *stack)], ROOT, lookup)
    assert (brk.file, brk.line, brk.origin) == ("pkg/model.py", 3, Origin.USER)
    assert brk.user_stack[-1].file == "logging/__init__.py"
    assert not any(f.file.startswith("/") for f in brk.user_stack)


@pytest.mark.parametrize(("path", "origin"), [
    ("/repo/pkg/model.py", Origin.USER),
    ("/venv/lib/python3.11/site-packages/transformers/models/bart.py", Origin.THIRD_PARTY),
    ("/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", Origin.TORCH),
    ("/usr/lib/python3.11/copy.py", Origin.USER),
    ("/opt/other/thing.py", Origin.THIRD_PARTY),
])
def test_origin(path, origin):
    assert origin_of(path, ROOT) is origin


def test_loop_consequence_folds_into_its_root():
    loop = BreakMessage("graph break in loop", "GB7000", "", ("This graph break may have been caused by an earlier graph break.",))
    (brk,) = classify([raw(PRINT, frame(7), skipped=True, consequences=[loop])], ROOT, lookup)
    assert brk.gb_id == "GB0059" and brk.frame_skipped and len(brk.caused) == 1
    assert brk.category is Category.SUPPORTABLE  # the root's category, not the consequence's


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("scripts/**", "scripts/a/b.py", True),
    ("scripts/**", "src/scripts/a.py", False),
    ("**/test_*.py", "tests/unit/test_x.py", True),
    ("**/test_*.py", "test_x.py", True),
    ("*.py", "pkg/a.py", False),
    ("pkg/?.py", "pkg/a.py", True),
])
def test_ignore_globs(pattern, path, expected):
    assert path_matches(path, pattern) is expected


def test_ignore_rules_mark_breaks_ignored():
    rules = [IgnoreRule(gb_id="GB0059", path="pkg/**"), IgnoreRule(gb_id="GB0170", entrypoint="other")]
    found = classify([raw(PRINT, frame(3)), raw(BRANCH, frame(4, "if x:"))], ROOT, lookup, rules, entrypoint="train")
    assert {b.gb_id: b.ignored for b in found} == {"GB0059": True, "GB0170": False}


def test_a_break_without_any_frame_is_dropped_not_crashing():
    assert classify([raw(PRINT)], ROOT, lookup) == ()
