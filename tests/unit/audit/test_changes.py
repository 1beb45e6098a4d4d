"""Two audit records → what changed (gbbot/audit/changes.py), by the rule a pull request's diff
uses: renamed files followed, each distinct break once with its entrypoints, hidden and revealed
by frame. Values only; the audit across a real rename with real torch: tests/e2e/audit/."""

from __future__ import annotations

from gbbot.analysis import classify
from gbbot.audit.changes import compare
from gbbot.audit.record import BreakEntry, EntrypointEntry, Record
from gbbot.core.model import ChangeState, CompiledFrame, FrameRef, Origin

NEW, FIXED, HIDDEN, REVEALED = ChangeState.NEW, ChangeState.FIXED, ChangeState.HIDDEN, ChangeState.REVEALED

A, B = "a" * 40, "b" * 40
FORWARD = FrameRef("model.py", 5, "forward")
RENAMED = FrameRef("net.py", 5, "forward")


def entry(
    file: str, line: int, code: str, function: str = "Net.forward", gb_id: str = "GB0059", **changes
) -> BreakEntry:
    """A break whose fingerprint classify would give it, so that a rename can be followed."""
    key = classify.fingerprint_key(gb_id, file, function, code, Origin.USER, None)
    return BreakEntry(
        classify.fingerprint(key, 0),
        gb_id,
        "print",
        "SUPPORTABLE",
        file,
        line,
        1,
        function=function,
        code=code,
        **changes,
    )


def record(commit: str, date: str, per_entrypoint: dict[str, tuple[BreakEntry, ...]], frames=()) -> Record:
    entries = tuple(
        EntrypointEntry(name, "ok", 3, len(breaks), 0, (), breaks, frames=frames)
        for name, breaks in per_entrypoint.items()
    )
    return Record(commit, date, "2.13.0", "fast", "abcd", 1, entries)


def test_a_rename_alone_is_no_regression_and_each_break_is_listed_once():
    kept = [
        entry("model.py", 10, 'print("a")'),
        entry("model.py", 12, 'print("b")'),
        entry("model.py", 14, 'print("c")'),
    ]
    moved = [entry("net.py", 10, 'print("a")'), entry("net.py", 12, 'print("b")'), entry("net.py", 14, 'print("c")')]
    before = record(A, "2026-01-01T03:00:00Z", {"train": tuple(kept), "eval": tuple(kept)})
    after = record(B, "2026-01-02T03:00:00Z", {"train": tuple(moved), "eval": tuple(moved)})
    changes = compare(before, after, {"model.py": "net.py"})
    assert changes.changes == () and not changes.regression
    unfollowed = compare(before, after)
    assert len(unfollowed.of(NEW)) == 3 and len(unfollowed.of(FIXED)) == 3  # each break once, not once per entrypoint
    assert {c.entrypoints for c in unfollowed.of(NEW)} == {("train", "eval")}


def test_across_a_rename_a_removed_break_is_fixed_and_a_revealed_one_is_not_new():
    logger = entry(
        "model.py",
        6,
        'log.debug("x")',
        function="Block.forward",
        gb_id="GB0291",
        frames=(FORWARD,),
        makes_eager=(FORWARD,),
        frame_skipped=True,
    )
    kept = entry("model.py", 10, 'print("a")')
    before = record(
        A, "2026-01-01T03:00:00Z", {"train": (logger, kept)}, (CompiledFrame(FORWARD, (), 0, True, logger.fingerprint),)
    )
    shown = entry("net.py", 8, 'print("shown")', frames=(RENAMED,))
    after = record(
        B,
        "2026-01-02T03:00:00Z",
        {"train": (entry("net.py", 10, 'print("a")'), shown)},
        (CompiledFrame(RENAMED, (), 1, False),),
    )
    changes = compare(before, after, {"model.py": "net.py"}, in_base=lambda _brk: True)
    assert [c.brk.code for c in changes.of(FIXED)] == ['log.debug("x")']
    assert [c.brk.code for c in changes.of(REVEALED)] == ['print("shown")'] and changes.of(NEW) == ()
    assert not changes.regression
    # Without the two commits' source nothing shows the print was there: a regression, said.
    unknown = compare(before, after, {"model.py": "net.py"})
    assert [c.brk.code for c in unknown.of(NEW)] == ['print("shown")'] and unknown.regression


def test_a_break_gone_because_a_new_one_makes_its_frame_eager_is_hidden_with_the_new_one_named():
    branch = entry("model.py", 10, "if x.sum() > 0:", gb_id="GB0170", frames=(FORWARD,))
    loop = entry(
        "model.py",
        7,
        "torch._dynamo.graph_break()",
        gb_id="GB0025",
        frames=(FORWARD,),
        makes_eager=(FORWARD,),
        frame_skipped=True,
    )
    before = record(A, "2026-01-01T03:00:00Z", {"train": (branch,)}, (CompiledFrame(FORWARD, (), 1, False),))
    after = record(
        B, "2026-01-02T03:00:00Z", {"train": (loop,)}, (CompiledFrame(FORWARD, (), 0, True, loop.fingerprint),)
    )
    changes = compare(before, after)
    (hidden,) = changes.of(HIDDEN)
    assert (
        hidden.brk.code == "if x.sum() > 0:"
        and hidden.hidden_by.fingerprint == loop.fingerprint
        and hidden.entrypoints == ("train",)
    )
    assert changes.of(FIXED) == () and [c.fingerprint for c in changes.of(NEW)] == [loop.fingerprint]
