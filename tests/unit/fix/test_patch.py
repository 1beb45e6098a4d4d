"""Diffs and replaced line ranges: what suggestions and the report are built from."""

from __future__ import annotations

from gbbot.fix.patch import FilePatch, Hunk, original_line, rebased, replaced_ranges

BEFORE = "a\nb\nc\nd\n"


def test_replacement_range_is_the_replaced_lines():
    after = "a\nif x:\n    b\nc\nd\n"
    assert replaced_ranges("f.py", BEFORE, after) == (Hunk("f.py", 2, 2, ("if x:", "    b")),)


def test_an_insertion_takes_the_line_above_so_it_can_be_suggested():
    after = "a\nb\nb2\nc\nd\n"
    assert replaced_ranges("f.py", BEFORE, after) == (Hunk("f.py", 2, 2, ("b", "b2")),)


def test_an_insertion_at_the_top_takes_the_line_below():
    assert replaced_ranges("f.py", BEFORE, "z\n" + BEFORE) == (Hunk("f.py", 1, 1, ("z", "a")),)


def test_a_deletion_has_no_replacement_lines():
    assert replaced_ranges("f.py", BEFORE, "a\nc\nd\n") == (Hunk("f.py", 2, 2, ()),)


def test_separate_changes_are_separate_hunks():
    after = "A\nb\nc\nD\n"
    assert replaced_ranges("f.py", BEFORE, after) == (Hunk("f.py", 1, 1, ("A",)), Hunk("f.py", 4, 4, ("D",)))


def test_unified_diff_names_the_file_and_handles_a_missing_final_newline():
    patch = FilePatch("pkg/m.py", "x = 1", "x = 2")
    assert patch.diff.splitlines()[:2] == ["--- a/pkg/m.py", "+++ b/pkg/m.py"]
    assert "\\ No newline at end of file" in patch.diff
    assert patch.changed and not FilePatch("p", "x", "x").changed


def test_a_later_patch_is_moved_onto_the_original_lines():
    original = "a\nb\nc\nd\n"
    guarded = "a\nif x:\n    b\nc\nd\n"  # an earlier round's patch
    later = FilePatch("m.py", guarded, "a\nif x:\n    b\nc\nC\nd\n")
    moved = rebased(later, original)
    assert moved.after == "a\nb\nc\nC\nd\n"
    assert [(h.start_line, h.end_line, h.replacement) for h in moved.hunks] == [(3, 3, ("c", "C"))]
    assert original_line(original, guarded, 4) == 3 and original_line(original, guarded, 2) is None


def test_a_later_patch_of_lines_an_earlier_one_wrote_is_not_moved():
    original = "a\nb\n"
    guarded = "a\nif x:\n    b\n"
    assert rebased(FilePatch("m.py", guarded, "a\nif y:\n    b\n"), original) is None
