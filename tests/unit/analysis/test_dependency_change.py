"""Which breaks a dependency bump brought and which the code change did: the changed lines read
from `git diff -U0` as git writes it, and the causes settled from a break's frames."""

from __future__ import annotations

from dataclasses import replace

from gbbot.analysis import dependency_change as dependency
from gbbot.analysis import report as report_json
from gbbot.core.model import (
    Cause,
    ChangeState,
    Frame,
    LibrarySite,
    PackageChange,
    Recompilation,
    RecompileReason,
    Report,
)
from gbbot.render import markdown, terminal
from tests.builders import report, traced_break

# A PR that bumps tinydep, adds a line to block(), replaces one in train.py, adds a module, and
# drops another (`git diff -M -U0 main`, trimmed of index lines).
UNIFIED = """\
diff --git a/requirements.txt b/requirements.txt
--- a/requirements.txt
+++ b/requirements.txt
@@ -3 +3 @@
-tinydep==1.0
+tinydep==2.0
diff --git a/src/pkg/model.py b/src/pkg/model.py
--- a/src/pkg/model.py
+++ b/src/pkg/model.py
@@ -7,0 +8 @@ def block(x):
+    torch._dynamo.graph_break()
diff --git a/src/train.py b/src/train.py
--- a/src/train.py
+++ b/src/train.py
@@ -3,2 +3,3 @@
-main()
-done()
+main(
+    fast=True)
+done()
diff --git a/src/pkg/extra.py b/src/pkg/extra.py
new file mode 100644
--- /dev/null
+++ b/src/pkg/extra.py
@@ -0,0 +1,2 @@
+def extra():
+    pass
diff --git a/src/pkg/old.py b/src/pkg/old.py
deleted file mode 100644
--- a/src/pkg/old.py
+++ /dev/null
@@ -1 +0,0 @@
-x = 1
"""
BUMP = (PackageChange("tinydep", "1.0", "2.0"),)


def test_the_changed_lines_of_each_side_below_the_config_root():
    head, base = dependency.changed_lines(UNIFIED, "src")
    assert head == {"pkg/model.py": {8}, "train.py": {3, 4, 5}, "pkg/extra.py": None}
    assert base == {"pkg/model.py": set(), "train.py": {3, 4}, "pkg/old.py": None}  # an insertion removes nothing
    assert "requirements.txt" not in head  # above the config root


def library_break(n: int, line: int = 6) -> object:
    """A break inside tinydep, reported at model.py's call into it (not a line the PR changed)."""
    site = LibrarySite("tinydep", "tinydep/__init__.py", 6, "scale", "peak = x.abs().max().item()")
    return traced_break(n, file="pkg/model.py", line=line, user_stack=(Frame("pkg/model.py", line, "block"),),
                        library_site=site)  # fmt: skip


def attributed(diff_report: Report, code_changed: bool = True) -> dict[str, Cause]:
    head, base = dependency.changed_lines(UNIFIED, "src")
    found = dependency.attribute(diff_report.diff, BUMP, head, base, code_changed)
    return dict(found.causes)


def test_a_break_on_a_line_the_pr_added_is_the_codes_and_the_rest_the_bumps():
    mine = traced_break(1, line=8, user_stack=(Frame("pkg/model.py", 8, "block"),))
    theirs, gone = library_break(2), library_break(3)
    causes = attributed(report([mine, theirs], new=[mine, theirs], fixed=[gone]))
    assert causes == {mine.fingerprint: Cause.CODE, theirs.fingerprint: Cause.DEPENDENCIES,
                      gone.fingerprint: Cause.DEPENDENCIES}  # fmt: skip


def test_a_fixed_break_on_a_line_the_pr_replaced_is_the_codes():
    gone = traced_break(4, file="train.py", line=3, user_stack=(Frame("train.py", 3, "<module>"),))
    assert attributed(report([], new=[], fixed=[gone])) == {gone.fingerprint: Cause.CODE}


def test_a_library_break_under_a_changed_line_is_both_and_without_code_changes_all_is_the_bumps():
    under = library_break(5, line=8)
    assert attributed(report([under], new=[under])) == {under.fingerprint: Cause.BOTH}
    assert attributed(report([under], new=[under]), code_changed=False) == {under.fingerprint: Cause.DEPENDENCIES}


def test_the_comment_leads_with_the_bump_and_lists_its_breaks_apart_from_the_codes():
    mine = traced_break(1, line=8, user_stack=(Frame("pkg/model.py", 8, "block"),))
    theirs, gone, persisting = library_break(2), library_break(3), traced_break(9)
    found = report([mine, theirs, persisting], new=[mine, theirs], fixed=[gone])
    head, base = dependency.changed_lines(UNIFIED, "src")
    dependencies = dependency.attribute(found.diff, BUMP, head, base, True)
    text = markdown.render(replace(found, diff=replace(found.diff, dependencies=dependencies)))
    lead = text.split("<sub>")[0]
    assert "**tinydep 1.0 → 2.0**: fixes **1** graph break, adds **1**." in lead
    assert lead.count("- new: ") == 1 and lead.count("- fixed: ") == 1 and "`pkg/model.py:6`" in lead
    assert "The code change: adds **1** graph break." in lead
    said = terminal.render(replace(found, diff=replace(found.diff, dependencies=dependencies)))
    assert "tinydep 1.0 → 2.0: 1 fixed, 1 new; the code change: 1 new" in said


def recompiling(n: int, line: int, fingerprint: str) -> Recompilation:
    """A frame of pkg/model.py that recompiled on a dtype guard pointing at `line`."""
    reason = RecompileReason(fingerprint, "dtype", "x.dtype == torch.float32", 1, False, "", "", line, "")
    return Recompilation(f"rc{n}", "pkg/model.py", 5, "block", 2, False, (reason,), "")


def test_recompilation_problems_are_put_down_to_the_bump_or_the_code_like_breaks():
    """One that came where a guard points at the line the PR added is the code's; one that came
    elsewhere, and one that went, the bump's; said in the comment and the terminal."""
    found = report([], new=[], fixed=[])
    compared = (("mine", ChangeState.NEW), ("theirs", ChangeState.NEW), ("gone", ChangeState.FIXED))
    found = replace(found, diff=replace(found.diff, recompiles=compared))
    head, base = dependency.changed_lines(UNIFIED, "src")
    problems_head = {"mine": recompiling(1, 8, "mine"), "theirs": recompiling(2, 20, "theirs")}
    dependencies = dependency.attribute(
        found.diff, BUMP, head, base, True, problems_head, {"gone": recompiling(3, 8, "gone")}
    )
    assert dict(dependencies.causes) == {"mine": Cause.CODE, "theirs": Cause.DEPENDENCIES, "gone": Cause.DEPENDENCIES}
    shown = replace(found, diff=replace(found.diff, dependencies=dependencies))
    lead = markdown.render(shown).split("<sub>")[0]
    assert "**tinydep 1.0 → 2.0**: adds **1** recompilation problem and fixes **1**." in lead
    assert "The code change: adds **1** recompilation problem." in lead
    said = terminal.render(shown)
    assert ("tinydep 1.0 → 2.0: 1 fixed recompilation problem, 1 new recompilation problem; "
            "the code change: 1 new recompilation problem") in said  # fmt: skip


def test_a_recompilation_under_a_changed_call_into_a_library_or_of_no_known_frame_is_still_said():
    """Neither is dropped from the comment: one inside a library under a changed line is both's;
    one whose frame the report does not have is the code's (the PR changed code)."""
    found = report([], new=[], fixed=[])
    found = replace(
        found, diff=replace(found.diff, recompiles=(("inside", ChangeState.NEW), ("lost", ChangeState.NEW)))
    )
    site = LibrarySite("tinydep", "tinydep/__init__.py", 6, "scale", "return x * 3")
    inside = replace(recompiling(1, 8, "inside"), library_site=site)
    head, base = dependency.changed_lines(UNIFIED, "src")
    dependencies = dependency.attribute(found.diff, BUMP, head, base, True, {"inside": inside}, {})
    assert dict(dependencies.causes) == {"inside": Cause.BOTH, "lost": Cause.CODE}
    lead = markdown.render(replace(found, diff=replace(found.diff, dependencies=dependencies))).split("<sub>")[0]
    assert "The code change: adds **1** recompilation problem." in lead
    assert "Both changed under frames that recompile" in lead and "adds **1** recompilation problem" in lead


def test_without_a_version_change_the_headline_is_the_prs_own():
    mine = traced_break(1)
    found = report([mine], new=[mine])
    same = dependency.attribute(found.diff, (), {}, {}, True)
    text = markdown.render(replace(found, diff=replace(found.diff, dependencies=same)))
    assert "This PR adds **1** graph break." in text and "→" not in text.split("<sub>")[0]
    assert {c.state for c in found.diff.changes} == {ChangeState.NEW}


def test_the_dependency_change_and_the_versions_that_ran_go_through_the_report_json():
    theirs, gone = library_break(2), library_break(3)
    found = report([theirs], new=[theirs], fixed=[gone])
    dependencies = dependency.attribute(found.diff, BUMP, {}, {}, False)
    full = replace(found, diff=replace(found.diff, dependencies=dependencies),
                   packages=(("torch", "2.13.0+cpu"), ("tinydep", "2.0")))  # fmt: skip
    data = report_json.to_json(full)  # validated against the schema on the way back in
    assert data["diff"]["dependencies"]["packages"] == [{"name": "tinydep", "base": "1.0", "head": "2.0"}]
    back = report_json.from_json(data)
    assert back.packages == full.packages and back.diff.dependencies == dependencies
    assert back.diff.dependencies.causes and all(type(c) is Cause for _, c in back.diff.dependencies.causes)
    assert "dependencies" not in report_json.to_json(found)["diff"] and "packages" not in report_json.to_json(found)
