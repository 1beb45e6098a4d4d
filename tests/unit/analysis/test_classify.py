"""Classification, attribution, folding and fingerprints, on hand-made RawBreaks (pure)."""

from __future__ import annotations

import pytest

from gbbot.analysis import break_diff, report
from gbbot.analysis.classify import classify, normalise_code, origin_of, path_matches
from gbbot.analysis.source import source_map
from gbbot.core.config import IgnoreRule
from gbbot.core.model import BreakMessage, Category, Frame, Mode, Origin, RawBreak, Report, Tool
from tests.builders import entrypoint, listed

ROOT = "/repo"
PRINT = BreakMessage("Failed to trace builtin operator", "GB0059", "print", ("Please report an issue to PyTorch.",))
BRANCH = BreakMessage(
    "Data-dependent branching",
    "GB0170",
    "",
    (
        "This graph break is fundamental - it is unlikely that Dynamo will ever be able to trace through your code. "
        "Consider finding a workaround.",
    ),
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
    assert unknown.category is Category.UNKNOWN and unknown.gb_id is None
    assert unknown.fix == "side_effect"  # no rule for the kind, but a print-only line is guarded


def test_qualname_and_loop_come_from_the_source():
    found = classify([raw(PRINT, frame(3)), raw(PRINT, frame(7))], ROOT, lookup)
    assert {b.function for b in found} == {"Net.forward"}
    assert [b.in_loop for b in found] == [True, False]  # impact order: the loop first


def test_same_break_reported_twice_is_folded_and_counted():
    (brk,) = classify(
        [raw(PRINT, frame(3)), raw(PRINT, frame(3, fn="torch_dynamo_resume_in_forward_at_2"))], ROOT, lookup
    )
    assert brk.count == 2


def test_identical_breaks_on_different_lines_stay_distinct():
    found = classify([raw(PRINT, frame(3)), raw(PRINT, frame(5))], ROOT, lookup)
    assert len({b.fingerprint for b in found}) == 2


def test_fingerprint_survives_lines_inserted_above_and_whitespace():
    before = classify([raw(PRINT, frame(3))], ROOT, lookup)[0]
    shifted = classify(
        [raw(PRINT, frame(30, 'print( "x" )'.replace("( ", "(").replace(" )", ")")))],
        ROOT,
        lambda p: source_map("\n" * 27 + SOURCE) if p == "pkg/model.py" else None,
    )[0]
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


@pytest.mark.parametrize(
    ("path", "origin"),
    [
        ("/repo/pkg/model.py", Origin.USER),
        ("/venv/lib/python3.11/site-packages/transformers/models/bart.py", Origin.THIRD_PARTY),
        ("/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", Origin.TORCH),
        ("/usr/lib/python3.11/copy.py", Origin.USER),
        ("/opt/other/thing.py", Origin.THIRD_PARTY),
        ("/repo/../outside/mod.py", Origin.THIRD_PARTY),
    ],
)
def test_origin(path, origin):
    assert origin_of(path, ROOT) is origin


def test_loop_consequence_folds_into_its_root():
    loop = BreakMessage(
        "graph break in loop", "GB7000", "", ("This graph break may have been caused by an earlier graph break.",)
    )
    (brk,) = classify([raw(PRINT, frame(7), skipped=True, consequences=[loop])], ROOT, lookup)
    assert brk.gb_id == "GB0059" and brk.frame_skipped and len(brk.caused) == 1
    assert brk.category is Category.SUPPORTABLE  # the root's category, not the consequence's


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("scripts/**", "scripts/a/b.py", True),
        ("scripts/**", "src/scripts/a.py", False),
        ("**/test_*.py", "tests/unit/test_x.py", True),
        ("**/test_*.py", "test_x.py", True),
        ("*.py", "pkg/a.py", False),
        ("pkg/?.py", "pkg/a.py", True),
    ],
)
def test_ignore_globs(pattern, path, expected):
    assert path_matches(path, pattern) is expected


def test_ignore_rules_mark_breaks_ignored():
    rules = [IgnoreRule(gb_id="GB0059", path="pkg/**"), IgnoreRule(gb_id="GB0170", entrypoint="other")]
    found = classify([raw(PRINT, frame(3)), raw(BRANCH, frame(4, "if x:"))], ROOT, lookup, rules, entrypoint="train")
    assert {b.gb_id: b.ignored for b in found} == {"GB0059": True, "GB0170": False}


def test_a_break_without_any_frame_is_dropped_not_crashing():
    assert classify([raw(PRINT)], ROOT, lookup) == ()


# --- comments and identical lines ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "normalised"),
    [
        ("x = 1 # one-space comment", "x = 1"),
        ("x = 1  # two spaces", "x = 1"),
        ('s = "a  # not a comment"', 's = "a  # not a comment"'),
        ("s = 'a # no' # but this is", "s = 'a # no'"),
        ('call(f"{x}  # kept",', 'call(f"{x}  # kept",'),  # a line of a longer statement
        ('"""unterminated  # kept', '"""unterminated # kept'),  # no string token: all of it is code
    ],
)
def test_comments_are_stripped_by_token_not_by_text(code, normalised):
    assert normalise_code(code) == normalised


def test_a_comment_added_with_one_space_keeps_the_fingerprint_a_hash_in_a_string_does_not():
    (plain,) = classify([raw(PRINT, frame(3))], ROOT, lookup)
    (commented,) = classify([raw(PRINT, frame(3, 'print("x") # why'))], ROOT, lookup)
    assert commented.fingerprint == plain.fingerprint
    first = classify([raw(PRINT, frame(3, 'print("a  # b")'))], ROOT, lookup)[0]
    second = classify([raw(PRINT, frame(3, 'print("a  # c")'))], ROOT, lookup)[0]
    assert first.fingerprint != second.fingerprint


def _report(*breaks):
    return Report(Tool(), "2.13.0", Mode.FAST, None, (entrypoint("train", breaks),))


def test_identical_breaks_added_above_leave_the_old_one_persisting():
    source = "def forward(x):\n    print(x)\n    return x\n"
    added = "def forward(x):\n    print(x)\n    print(x)\n    print(x)\n    return x\n"
    base = classify([raw(PRINT, frame(2, "print(x)"))], ROOT, lambda _p: source_map(source))
    head = classify([raw(PRINT, frame(n, "print(x)")) for n in (2, 3, 4)], ROOT, lambda _p: source_map(added))
    result = break_diff.diff(_report(*head), _report(*base), break_diff.Comparison("main", "abc1234"))
    old = next(b for b in head if b.line == 4)  # the original line, pushed down by the two added above
    assert listed(result).persisting == (old.fingerprint,)
    assert sorted(b.line for b in head if b.fingerprint in listed(result).new) == [2, 3]


# --- paths outside the repository ---------------------------------------------------------------


def test_a_frame_reached_through_dotdot_is_outside_the_repository():
    stack = (frame(3), Frame("/repo/../outside/mod.py", 4, "helper", "torch._dynamo.graph_break()"))
    (brk,) = classify([raw(PRINT, *stack)], ROOT, lookup)
    assert (brk.file, brk.origin) == ("pkg/model.py", Origin.THIRD_PARTY)
    assert brk.user_stack[-1].file == "mod.py"
    assert (brk.library_site.path, brk.library_site.line) == ("mod.py", 4)
    report.validate(report.to_json(_report(brk)))  # never a `..` path in the report


@pytest.mark.parametrize(
    ("gb_type", "gb_id", "advice"),
    [
        ("torch.* op returned non-Tensor", "GB0208", "sdpa_kernel"),  # torch.backends.cuda.sdp_kernel()
        ("Unsupported context manager", "GB0142", "torch.device"),  # `with torch.device("cpu"):`
    ],
)
def test_common_breaks_have_a_category_and_advice(gb_type, gb_id, advice):
    from gbbot.analysis.classify import load_rules
    from gbbot.core.model import BreakMessage, Category

    rules = load_rules()
    message = BreakMessage(gb_type, gb_id)
    assert rules.category(message) is Category.SUPPORTABLE and advice in rules.rule(message).title
