"""Fix results as the report's typed `fixes` and its JSON (schema-valid, bounded), markdown lines,
review suggestions and terminal text."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gbbot.analysis import report
from gbbot.core.errors import ReportError
from gbbot.core.fixes import Advice, Counts, FixResult, FixStatus, bounded
from gbbot.core.measured import Measured
from gbbot.core.model import Category, EntrypointReport, GraphBreak, Mode, Origin, Report, Status, Tool
from gbbot.fix import present
from gbbot.fix.patch import FilePatch
from gbbot.fix.rounds import Round
from gbbot.publish.review import review_suggestions
from gbbot.render import markdown
from gbbot.render.fixes import markdown_lines

PATCH = FilePatch(
    "pkg/model.py",
    "def f(x):\n    print(x)\n    return x\n",
    "def f(x):\n    if not torch.compiler.is_compiling():\n        print(x)\n    return x\n",
)


def brk(fingerprint: str = "0123456789abcdef", code: str = "print(x)") -> GraphBreak:
    return GraphBreak(
        fingerprint=fingerprint,
        gb_id="GB0059",
        gb_type="Failed to trace builtin operator",
        category=Category.SUPPORTABLE,
        origin=Origin.USER,
        file="pkg/model.py",
        line=2,
        function="f",
        code=code,
        explanation="",
        hints=(),
        doc_url="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html",
        frame_skipped=False,
        in_loop=False,
        count=1,
        caused=(),
        user_stack=(),
        fix="print",
    )


def verified(fingerprint: str = "0123456789abcdef", patch: FilePatch = PATCH) -> FixResult:
    return FixResult(
        fingerprint,
        FixStatus.VERIFIED,
        patch.path,
        2,
        recipe="print",
        variant="guard",
        title="guard it",
        description="Wraps the print in `if not torch.compiler.is_compiling():`.",
        summary="removes 1 break; graphs 3 → 1; outputs equal",
        diff=patch.diff,
        hunks=patch.hunks,
        entrypoints=("forward",),
        before=Counts(3, 3),
        after=Counts(2, 1),
    )


def a_report(results) -> Report:
    entry = EntrypointReport("forward", Status.OK, 0, 1.0, 3, 1, 0, (brk(),))
    return Report(Tool(version="0"), "2.13.0", Mode.FAST, None, (entry,), fixes=tuple(results))


def test_results_round_trip_through_a_schema_valid_report():
    results = (
        verified(),
        FixResult(
            "1123456789abcdef",
            FixStatus.ADVICE,
            "pkg/model.py",
            9,
            reason="no mechanical fix",
            advice=(Advice("use torch.where", "https://docs.pytorch.org/docs/stable/generated/torch.where.html"),),
        ),
        FixResult("2123456789abcdef", FixStatus.SCAFFOLD, "pkg/model.py", 12, scaffold="class A(B):\n    pass\n"),
    )
    data = report.to_json(a_report(results))
    report.validate(data)
    assert report.from_json(json.loads(json.dumps(data))).fixes == results


def test_a_report_a_fix_step_looked_at_says_so_even_with_no_results():
    assert report.to_json(a_report(()))["extra"] == {"fixes": []}
    assert "extra" not in report.to_json(replace(a_report(()), fixes=None))
    assert report.from_json(report.to_json(a_report(()))).fixes == ()
    assert report.from_json(report.to_json(replace(a_report(()), fixes=None))).fixes is None


def test_the_schema_refuses_unknown_keys_and_paths_outside_the_repo():
    data = report.to_json(a_report((verified(),)))
    bad = json.loads(json.dumps(data))
    bad["extra"]["fixes"][0]["file"] = "../../etc/passwd"
    with pytest.raises(ReportError, match="extra/fixes/0/file"):
        report.validate(bad)
    bad = json.loads(json.dumps(data))
    bad["extra"]["surprise"] = 1
    with pytest.raises(ReportError):
        report.validate(bad)
    bad = json.loads(json.dumps(data))
    bad["extra"]["fixes"][0]["hunks"][0]["path"] = "/abs/path.py"
    with pytest.raises(ReportError):
        report.validate(bad)


def test_long_text_is_cut_to_the_schema_bounds():
    long = FixResult("0123456789abcdef", FixStatus.DROPPED, "a.py", 1, reason="x" * 100_000, tried=("y" * 9000,) * 30)
    data = report.to_json(a_report((long,)))
    report.validate(data)
    fix = data["extra"]["fixes"][0]
    assert len(fix["reason"]) == 8192 and fix["reason"].endswith("…")
    assert len(fix["tried"]) == 20
    assert report.from_json(data).fixes == (bounded(long),)  # what a report keeps is what its JSON says
    assert bounded(bounded(long)) == bounded(long)


def test_markdown_shows_the_verified_diff_and_result_under_the_break():
    results = (verified(),)
    text = markdown.render(a_report(results))
    assert "✅ **Verified fix** (`print` recipe): removes 1 break; graphs 3 → 1; outputs equal." in text
    assert "```diff\n--- a/pkg/model.py\n+++ b/pkg/model.py\n" in text
    assert "+    if not torch.compiler.is_compiling():" in text


def test_markdown_escapes_what_came_from_user_code():
    hostile = FixResult(
        "0123456789abcdef",
        FixStatus.DROPPED,
        "a.py",
        1,
        recipe="print",
        reason="new break at a.py:3 (<img src=x onerror=alert(1)> @admin ``` )",
    )
    lines = "\n".join(markdown_lines(hostile))
    assert "<img" not in lines and "&lt;img" in lines
    assert "@admin" not in lines
    diff = FixResult("0123456789abcdef", FixStatus.VERIFIED, "a.py", 1, diff="+ ```\n+ <b>x</b>\n")
    block = "\n".join(markdown_lines(diff))
    assert "````diff\n+ ```\n+ <b>x</b>\n````" in block


def test_advice_lists_the_options_with_links():
    result = FixResult(
        "0123456789abcdef",
        FixStatus.ADVICE,
        "a.py",
        1,
        reason="no mechanical fix",
        advice=(
            Advice("Use `torch.cond`.", "https://docs.pytorch.org/docs/stable/generated/torch.cond.html"),
            Advice("Move the check out."),
        ),
    )
    lines = markdown_lines(result)
    assert "- Use `torch.cond`. ([docs](https://docs.pytorch.org/docs/stable/generated/torch.cond.html))" in lines
    assert "- Move the check out." in lines


def test_suggestions_cover_exactly_the_replaced_lines_inside_the_pr_diff():
    suggestions = review_suggestions([verified()], {"pkg/model.py": {1, 2, 3}})
    assert len(suggestions) == 1
    s = suggestions[0]
    assert (s.path, s.start_line, s.end_line) == ("pkg/model.py", 2, 2)
    assert s.body.endswith("```suggestion\n    if not torch.compiler.is_compiling():\n        print(x)\n```")
    assert s.body.startswith("gbbot verified fix (`print` recipe): removes 1 break")


def test_a_patch_outside_the_pr_diff_is_not_suggested():
    assert review_suggestions([verified()], {"pkg/model.py": {1, 3}}) == ()
    assert review_suggestions([verified()], {"other.py": {2}}) == ()


def test_a_patch_is_suggested_whole_or_not_at_all():
    before = "class A:\n    def __init__(self):\n        self.n = torch.IntTensor([4])\n\n    def f(self):\n        return self.n.item()\n"
    after = "class A:\n    def __init__(self):\n        self.n = torch.IntTensor([4])\n        self.n_value = 4\n\n    def f(self):\n        return self.n_value\n"
    two_hunks = verified(patch=FilePatch("pkg/model.py", before, after))
    assert len(two_hunks.hunks) == 2
    assert review_suggestions([two_hunks], {"pkg/model.py": {6}}) == ()
    both = review_suggestions([two_hunks], {"pkg/model.py": {3, 6}})
    assert [(s.start_line, s.end_line) for s in both] == [(3, 3), (6, 6)]


def test_a_deletion_is_an_empty_suggestion():
    deletion = verified(patch=FilePatch("m.py", "a\ntorch._dynamo.graph_break()\nb\n", "a\nb\n"))
    (s,) = review_suggestions([deletion], {"m.py": {2}})
    assert s.body.endswith("```suggestion\n```")


def test_at_most_thirty_suggestions_per_review():
    many = [verified(f"{i:016x}") for i in range(40)]
    assert len(review_suggestions(many, {"pkg/model.py": {2}})) == 30
    assert len(review_suggestions(many, {"pkg/model.py": {2}}, limit=5)) == 5


def test_only_verified_patches_become_suggestions():
    dropped = FixResult("0123456789abcdef", FixStatus.DROPPED, "pkg/model.py", 2, hunks=PATCH.hunks)
    assert review_suggestions([dropped], {"pkg/model.py": {2}}) == ()


def test_rounds_say_what_each_fixed_and_what_was_revealed():
    printed = replace(brk(), file="model.py", line=12)
    rounds = [Round(1, 3, (), 2), Round(2, 1, (printed,), 1)]
    assert present.round_lines(rounds, ()) == [
        "round 1: 3 breaks, fixed 2",
        "round 2: revealed 1 break (GB0059 print at model.py:12), fixed 1",
    ]
    lever = Round(3, 1, (), 1, lever=True)  # nested_graph_breaks leaves its break in place: never "fixed"
    assert present.round_lines([lever], ()) == ["round 3: 1 break, nested_graph_breaks kept for 1 (the breaks stay)"]
    assert present.round_lines(rounds[:1], (printed,))[-1] == (
        "round 1 revealed 1 break (GB0059 print at model.py:12), not fixed: no round left (--rounds)"
    )
    assert present.totals_line(Counts(3, 1, 1), Counts(0, 2, 0)) == (
        "breaks 3 → 0, graphs 1 → 2, frames running eagerly 1 → 0"
    )


MEASURED = Measured((1.9e-3, 1.8e-3, 1.7e-3), (1.0e-3, 1.2e-3, 1.1e-3), 3, entrypoints=("forward",))
MEASURED_PHRASE = "measured: 1.8 ms → 1.1 ms per call (1.6x; spread ±0.1 ms over 3 runs each, faithful mode, cpu)"


def test_a_measured_fix_round_trips_and_shows_its_phrase_in_each_view():
    timed = replace(verified(), measured=MEASURED)
    data = report.to_json(a_report((timed,)))
    report.validate(data)
    fix = data["extra"]["fixes"][0]["measured"]
    assert fix["repeat"] == 3 and fix["before_median_s"] == pytest.approx(1.8e-3) and fix["phrase"] == MEASURED_PHRASE
    assert report.from_json(json.loads(json.dumps(data))).fixes == (timed,)
    assert f"⏱️ {MEASURED_PHRASE}." in markdown.render(a_report((timed,)))
    assert f"#   {MEASURED_PHRASE}" in present.terminal_text(timed).splitlines()
    assert "⏱️" not in markdown.render(a_report((verified(),)))  # not asked: nothing said


def test_a_fix_that_could_not_be_measured_says_why():
    compiled = replace(MEASURED, after_s_per_call=(), not_measurable="each call compiled")
    timed = replace(verified(), measured=compiled)
    report.validate(report.to_json(a_report((timed,))))
    assert "⏱️ not measurable: each call compiled." in markdown.render(a_report((timed,)))


def test_one_timing_is_refused_by_the_schema():
    data = report.to_json(a_report((replace(verified(), measured=replace(MEASURED, repeat=1)),)))
    with pytest.raises(ReportError, match="measured/repeat"):
        report.validate(data)


def test_a_lever_whose_break_stays_keeps_the_breaks_documentation_link_a_removed_break_needs_none():
    url = "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html"
    removed = present.terminal_text(verified(), url)
    lever = present.terminal_text(replace(verified(), reason="line 2 is not a pattern the recipes rewrite"), url)
    assert f"documentation: {url}" not in removed
    assert lever.splitlines()[-1] == f"#   documentation: {url}"
