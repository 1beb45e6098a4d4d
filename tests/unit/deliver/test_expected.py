"""What a fix commit holds, re-derived in the job that may push: each verified fix stands alone.
One that may not be pushed (off the PR's changed lines, or in a file whose patch is not what the
recipes make) costs only itself; the others are combined per file from the kept ones only. Real
recipes on real source text; only the reader is a dict."""

from __future__ import annotations

from dataclasses import replace

from gbbot.core.fixes import FixResult, FixStatus
from gbbot.deliver import patchcheck
from gbbot.deliver.expected import Expected, expected
from gbbot.deliver.sources import Unreadable
from gbbot.fix import plan
from gbbot.fix.patch import FilePatch
from tests.builders import report, traced_break

NET = """\
import torch


def f(x):
    print("old")
    x = x + 1
    print("new")
    return x
"""
UTIL = """\
import torch


def g(x):
    print("util")
    return x
"""
FILES = {"net.py": NET, "util.py": UTIL}
OLD = traced_break(1, file="net.py", line=5, function="f", code='print("old")')
NEW = traced_break(2, file="net.py", line=7, function="f", code='print("new")')
UTIL_OLD = traced_break(3, file="util.py", line=5, function="g", code='print("util")')


def read(path: str) -> str:
    if path not in FILES:
        raise Unreadable(f"{path} is not in the pinned commit")
    return FILES[path]


def claim(brk) -> FixResult:
    """The guard the print recipe makes, as the fix job would claim it verified."""
    found, _ = plan.candidates(brk, FILES[brk.file], read, tuple(FILES))
    guard = next(c for c in found if c.recipe.variant == "guard")
    return FixResult(
        brk.fingerprint, FixStatus.VERIFIED, brk.file, brk.line, guard.recipe.id, "guard", hunks=guard.hunks
    )


def claimed(*breaks):
    made = report([OLD, NEW, UTIL_OLD], new=[NEW])
    return replace(made, fixes=tuple(claim(b) for b in breaks))


def patch_of(*breaks) -> bytes:
    """The fix job's patch: the guards of `breaks` combined per file."""
    found = [next(c for c in plan.candidates(b, FILES[b.file], read, tuple(FILES))[0]) for b in breaks]
    patches, missed = plan.combine(found, read)
    assert missed == []
    return patchcheck.render(patches).encode()


def guarded(text: str, code: str) -> bool:
    return f"    if not torch.compiler.is_compiling():\n        {code}\n" in text


def test_a_fix_off_the_changed_lines_is_named_and_the_fix_beside_it_in_the_same_file_is_kept():
    every = (OLD, NEW, UTIL_OLD)
    found = expected(claimed(*every), ["net.py", "util.py"], read, tuple(FILES), patch_of(*every), {"net.py": {7}})
    assert isinstance(found, Expected)
    assert [r.fingerprint for r in found.fixes] == [NEW.fingerprint]
    ((patch),) = found.patches
    assert patch.path == "net.py" and guarded(patch.after, 'print("new")') and not guarded(patch.after, 'print("old")')
    assert {d.fingerprint: d.reason for d in found.dropped} == {
        OLD.fingerprint: "the fix at net.py:5 is not on a line the pull request changed",
        UTIL_OLD.fingerprint: "the fix at util.py:5 is not on a line the pull request changed",
    }


def test_all_keeps_every_fix_in_the_files_the_pr_touched():
    every = (OLD, NEW, UTIL_OLD)
    found = expected(
        claimed(*every), ["net.py", "util.py"], read, tuple(FILES), patch_of(*every), {"net.py": {7}}, True
    )
    assert isinstance(found, Expected)
    assert {r.fingerprint for r in found.fixes} == {OLD.fingerprint, NEW.fingerprint}
    ((patch),) = found.patches
    assert guarded(patch.after, 'print("new")') and guarded(patch.after, 'print("old")')
    assert [(d.fingerprint, d.reason) for d in found.dropped] == [
        (UTIL_OLD.fingerprint, "the fix at util.py:5 is in a file this pull request does not touch")
    ]


def test_a_file_whose_patch_is_not_the_recipes_costs_its_own_fixes_only():
    given = patch_of(NEW, UTIL_OLD).decode().replace('+        print("util")', '+        print("util"); run()')
    changed = {"net.py": {7}, "util.py": {5}}
    found = expected(claimed(NEW, UTIL_OLD), ["net.py", "util.py"], read, tuple(FILES), given.encode(), changed)
    assert isinstance(found, Expected)
    assert [r.fingerprint for r in found.fixes] == [NEW.fingerprint] and [p.path for p in found.patches] == ["net.py"]
    ((dropped),) = found.dropped
    assert dropped.fingerprint == UTIL_OLD.fingerprint
    assert dropped.reason == "the patch differs from what gbbot's recipes make of the pinned source (util.py)"


def test_when_no_fix_can_be_pushed_each_is_named_with_its_own_reason():
    every = (OLD, UTIL_OLD)
    found = expected(claimed(*every), ["net.py", "util.py"], read, tuple(FILES), patch_of(*every), {"net.py": {7}})
    assert isinstance(found, patchcheck.Refused)
    assert [d.fingerprint for d in found.dropped] == [OLD.fingerprint, UTIL_OLD.fingerprint]
    assert "none of the 2 verified fixes can be pushed" in found.reason
    assert "net.py:5 is not on a line" in found.reason and "util.py:5 is not on a line" in found.reason


def test_without_changed_lines_every_re_derived_fix_is_kept_as_before():
    every = (OLD, NEW)
    found = expected(claimed(*every), ["net.py"], read, tuple(FILES), patch_of(*every))
    assert isinstance(found, Expected) and found.dropped == ()
    assert found.patches == (FilePatch("net.py", NET, found.patches[0].after),)
