"""Which breaks a fix pushed to a PR's branch may be for: the PR's own (new, or revealed on a line
it changed), read from the diff's states; the lines a PR changed, from real git with a rename."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gbbot.core.fixes import FixResult, FixStatus
from gbbot.core.model import ChangeState
from gbbot.deliver import scope
from tests.builders import report, traced_break
from tests.conftest import git

ADDED = traced_break(1, file="pkg/net.py", line=12)  # a print the PR added, on a line it added
REVEALED_HERE = traced_break(2, file="pkg/net.py", line=20)  # revealed, on a line the PR changed
REVEALED_THERE = traced_break(3, file="pkg/net.py", line=30)  # revealed, on a line it did not change
OLD = traced_break(4, file="pkg/net.py", line=40)  # persisting, in a file the PR touched
REACHED = traced_break(5, file="pkg/util.py", line=8)  # new, but a call the PR added reaches it
UNTOUCHED = traced_break(6, file="pkg/other.py", line=9)  # persisting, in a file the PR left alone
IGNORED = traced_break(7, file="pkg/net.py", line=12, ignored=True)
CHANGED = {"pkg/net.py": {12, 20, 21}, "pkg/util.py": {1}}


def diffed():
    breaks = [ADDED, REVEALED_HERE, REVEALED_THERE, OLD, REACHED, UNTOUCHED, IGNORED]
    made = report(breaks, new=[ADDED, REVEALED_HERE, REVEALED_THERE, REACHED])
    assert made.diff is not None
    revealed = {REVEALED_HERE.fingerprint, REVEALED_THERE.fingerprint}
    changes = tuple(
        replace(c, state=ChangeState.REVEALED) if c.fingerprint in revealed else c for c in made.diff.changes
    )
    return replace(made, diff=replace(made.diff, changes=changes))


def test_the_pr_s_own_breaks_on_its_changed_lines_are_in_scope_and_every_other_is_left_with_why():
    chosen = scope.scope(diffed(), CHANGED)
    assert chosen.fingerprints == (ADDED.fingerprint, REVEALED_HERE.fingerprint)
    why = {left.brk.fingerprint: left.reason for left in chosen.left}
    assert list(why) == [REVEALED_THERE.fingerprint, OLD.fingerprint, REACHED.fingerprint, UNTOUCHED.fingerprint]
    assert why[REVEALED_THERE.fingerprint].startswith("this pull request revealed it")
    assert why[OLD.fingerprint] == why[UNTOUCHED.fingerprint] == scope.PREDATES
    assert why[REACHED.fingerprint].startswith("this pull request added it, but it is not on a line")
    assert all("`gbbot fix` locally" in reason for reason in why.values())


def test_all_widens_the_scope_to_every_break_in_the_files_the_pr_touched():
    chosen = scope.scope(diffed(), CHANGED, widen=True)
    touched = (ADDED, REVEALED_HERE, REVEALED_THERE, OLD, REACHED)
    assert chosen.fingerprints == tuple(b.fingerprint for b in touched)
    ((left),) = chosen.left
    assert left.brk == UNTOUCHED and left.reason.startswith(scope.NOT_TOUCHED)


def test_a_report_without_a_diff_has_nothing_in_scope():
    chosen = scope.scope(report([ADDED, OLD]), CHANGED)
    assert chosen.breaks == () and [left.reason for left in chosen.left] == [scope.PREDATES] * 2


def test_a_fix_may_be_pushed_only_for_a_break_on_a_changed_line_or_with_all_in_a_touched_file():
    def fix(line: int, file: str = "pkg/net.py") -> FixResult:
        return FixResult("f" * 16, FixStatus.VERIFIED, file, line, "print", "guard")

    assert scope.not_pushable(fix(12), CHANGED) is None
    assert scope.not_pushable(fix(40), CHANGED) == "the fix at pkg/net.py:40 is not on a line the pull request changed"
    assert scope.not_pushable(fix(40), CHANGED, widen=True) is None
    assert scope.not_pushable(fix(9, "pkg/other.py"), CHANGED, widen=True) == (
        "the fix at pkg/other.py:9 is in a file this pull request does not touch"
    )


def test_the_changed_lines_follow_a_rename_as_github_shows_it(tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    body = "".join(f"line_{n} = {n}\n" for n in range(1, 21))
    (repo / "util.py").write_text(body)
    (repo / "gone.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "mv", "util.py", "helpers.py")
    (repo / "helpers.py").write_text(body.replace("line_5 = 5\n", "line_5 = 50\nextra = 0\n"))
    (repo / "fresh.py").write_text("a = 1\nb = 2\n")
    (repo / "gone.py").unlink()
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "rename, edit, add, delete")
    changed = scope.changed_lines(repo, base, git(repo, "rev-parse", "HEAD"))
    assert changed == {"helpers.py": {5, 6}, "fresh.py": {1, 2}}


def test_a_renamed_file_with_no_line_changed_is_still_touched():
    text = "diff --git a/a.py b/b.py\nsimilarity index 100%\nrename from a.py\nrename to b.py\n"
    assert scope.parse_unified(text) == {"b.py": set()}
