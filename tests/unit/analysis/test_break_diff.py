"""The diff of two reports (gbbot/analysis/break_diff.py) on hand-made values, no torch and no git:
which fingerprints land in new, fixed, persisting and hidden, per entrypoint and overall, what an
entrypoint without a baseline says, renamed files, shards joined, and recompilations.
(`gbbot diff` on real repositories with real torch: tests/e2e/test_diff.py, test_diff_hidden.py.)"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gbbot.analysis import break_diff, classify, dependence, recompile, source
from gbbot.analysis import report as report_
from gbbot.core import counts
from gbbot.core.config import IgnoreRule
from gbbot.core.model import (
    Category,
    ChangeState,
    CompiledFrame,
    CompileError,
    Diff,
    Frame,
    FrameRef,
    GraphBreak,
    Origin,
    Reason,
    Status,
    Why,
)
from gbbot.core.words import say
from tests.builders import (
    AT_LIMIT,
    DTYPE,
    INFO,
    entrypoint,
    listed,
    recompile_reason,
    recompiled_frame,
    report_of,
    states,
    traced_break,
)

BASE_SHA = "b" * 40


def brk(fp: str, **changes) -> GraphBreak:
    """A break known by its fingerprint: a print in pkg/model.py's Net.forward unless told."""
    return traced_break(fingerprint=fp, **changes)


def compared(head: dict, base: dict, **options) -> Diff:
    """diff() of two reports, each given as {entrypoint name: its breaks}."""
    head_report = report_of(*(entrypoint(name, breaks) for name, breaks in head.items()))
    base_report = report_of(*(entrypoint(name, breaks) for name, breaks in base.items()))
    return break_diff.diff(head_report, base_report, break_diff.Comparison("main", BASE_SHA, **options))


def by_name(result: Diff) -> dict:
    return {e.name: e for e in result.entrypoints}


# --- new, fixed, persisting ----------------------------------------------------------------------


def test_a_break_only_on_the_head_is_new_only_on_the_base_fixed_on_both_persisting():
    fixed_one = brk("a" * 16, line=11)
    result = compared({"train": [brk("b" * 16), brk("c" * 16)]}, {"train": [fixed_one, brk("b" * 16)]})
    assert (listed(result).new, listed(result).fixed, listed(result).persisting) == (
        ("c" * 16,),
        ("a" * 16,),
        ("b" * 16,),
    )
    assert result.breaks(ChangeState.FIXED) == (fixed_one,)  # the base's record, to show what went away
    train = listed(result, "train")
    assert (train.new, train.fixed, train.persisting) == (("c" * 16,), ("a" * 16,), ("b" * 16,))
    assert by_name(result)["train"].no_baseline is None
    assert listed(result).hidden == () and result.base_ref == "main" and result.base_sha == BASE_SHA


def test_the_graph_delta_is_the_head_minus_the_base():
    head = entrypoint("train", [brk("a" * 16)], graph_count=7)
    base = entrypoint("train", [brk("a" * 16)], graph_count=4)
    result = break_diff.diff(report_of(head), report_of(base), break_diff.Comparison("main", BASE_SHA))
    assert by_name(result)["train"].graph_delta == 3


def test_a_break_that_moved_to_another_entrypoint_persists_overall():
    moved = brk("m" * 16)
    result = compared({"first": [], "second": [moved]}, {"first": [moved], "second": []})
    assert listed(result, "first").fixed == ("m" * 16,) and listed(result, "second").new == ("m" * 16,)
    assert (listed(result).new, listed(result).fixed, listed(result).persisting) == ((), (), ("m" * 16,))


def test_a_base_entrypoint_the_head_does_not_have_plays_no_part():
    result = compared({"kept": [brk("k" * 16)]}, {"kept": [brk("k" * 16)], "removed": [brk("r" * 16)]})
    assert [e.name for e in result.entrypoints] == ["kept"]
    assert (listed(result).new, listed(result).fixed, listed(result).persisting) == ((), (), ("k" * 16,))


def test_when_the_head_run_did_not_finish_nothing_is_fixed():
    cut_short = entrypoint("train", [brk("b" * 16)], status=Status.TIMEOUT, exit_code=None)
    base = entrypoint("train", [brk("a" * 16), brk("b" * 16)])
    result = break_diff.diff(report_of(cut_short), report_of(base), break_diff.Comparison("main", BASE_SHA))
    assert (listed(result).new, listed(result).fixed, listed(result).persisting) == ((), (), ("b" * 16,))


def test_ignored_breaks_count_on_neither_side_and_the_heads_rules_apply_to_the_base():
    scripts = dict(file="scripts/tool.py")
    head = {"train": [brk("i" * 16, ignored=True), brk("p" * 16)]}
    base = {"train": [brk("p" * 16), brk("s" * 16, **scripts)]}  # made without the head's rule
    result = compared(head, base, ignore=(IgnoreRule(path="scripts/**"),))
    assert (listed(result).new, listed(result).fixed, listed(result).persisting) == ((), (), ("p" * 16,))


# --- hidden: gone from the head only because its frame now runs eagerly -------------------------


def eager(fp: str, **changes) -> GraphBreak:
    """A head break that makes its frame run eagerly (a break in a loop: the frame is skipped)."""
    return brk(fp, frame_skipped=True, in_loop=True, gb_id="GB0025", code="torch._dynamo.graph_break()", **changes)


def test_a_base_break_in_a_frame_that_now_runs_eagerly_is_hidden_not_fixed():
    printed = brk("p" * 16, line=20)
    result = compared({"train": [eager("e" * 16, line=12)]}, {"train": [printed]})
    assert listed(result).new == ("e" * 16,) and listed(result).fixed == () and result.breaks(ChangeState.FIXED) == ()
    assert listed(result).hidden == ("p" * 16,) and result.breaks(ChangeState.HIDDEN) == (printed,)
    assert listed(result).hidden_by == {"p" * 16: "e" * 16}
    assert listed(result, "train").hidden == ("p" * 16,)


def test_without_frames_a_callee_is_not_matched_to_an_eager_caller_by_its_bare_name():
    """A report made before frames were recorded: only a break's own site stands for its frame."""
    stack = (Frame("pkg/model.py", 30, "forward", "y = helper(x)"), Frame("pkg/util.py", 4, "helper", 'print("h")'))
    in_helper = brk("h" * 16, file="pkg/util.py", function="helper", user_stack=stack)
    result = compared({"train": [eager("e" * 16)]}, {"train": [in_helper]})
    assert listed(result).fixed == ("h" * 16,) and listed(result).hidden == ()


def test_a_base_break_in_a_frame_still_traced_is_fixed():
    elsewhere = brk(
        "o" * 16, file="pkg/other.py", function="other", user_stack=(Frame("pkg/other.py", 3, "other", "x"),)
    )
    result = compared({"train": [eager("e" * 16)]}, {"train": [elsewhere]})
    assert listed(result).fixed == ("o" * 16,) and listed(result).hidden == ()


def test_a_break_hidden_in_one_entrypoint_but_still_seen_in_another_persists():
    printed = brk("p" * 16)
    result = compared({"a": [eager("e" * 16)], "b": [printed]}, {"a": [printed], "b": [printed]})
    assert listed(result).persisting == ("p" * 16,) and listed(result).hidden == () and listed(result).fixed == ()


# --- renamed files ------------------------------------------------------------------------------


def classified(path: str, line: int, code: str, occurrence: int = 0, **changes) -> GraphBreak:
    """A user-code print whose fingerprint is the one classify gives it at `path`."""
    key = classify.fingerprint_key("GB0059", path, "Net.forward", code, Origin.USER, None)
    return brk(classify.fingerprint(key, occurrence), file=path, line=line, code=code, **changes)


def test_a_break_in_a_renamed_file_persists_under_its_new_fingerprint():
    base = classified("pkg/helpers.py", 5, 'print("h")')
    head = classified("pkg/utils.py", 5, 'print("h")')
    assert base.fingerprint != head.fingerprint  # the path is part of a fingerprint
    renames = {"pkg/helpers.py": "pkg/utils.py"}
    result = compared({"train": [head]}, {"train": [base]}, renames=renames)
    assert (listed(result).new, listed(result).fixed, listed(result).persisting) == ((), (), (head.fingerprint,))
    without = compared({"train": [head]}, {"train": [base]})
    assert (listed(without).new, listed(without).fixed) == ((head.fingerprint,), (base.fingerprint,))


def test_identical_breaks_in_a_renamed_file_keep_their_occurrence_order():
    """classify numbers breaks with one key from the last line up: the rename must too."""
    base = [classified("a.py", 9, "print(x)", 0), classified("a.py", 3, "print(x)", 1)]
    head = [classified("b.py", 9, "print(x)", 0), classified("b.py", 3, "print(x)", 1)]
    result = compared({"train": head}, {"train": base}, renames={"a.py": "b.py"})
    assert (
        set(listed(result).persisting) == {b.fingerprint for b in head}
        and listed(result).new == listed(result).fixed == ()
    )


def test_a_base_record_whose_fingerprint_gbbot_did_not_make_this_way_is_left_as_it_is():
    foreign = replace(classified("a.py", 9, "print(x)"), fingerprint="f" * 16)
    (kept,) = break_diff.renamed([foreign], {"a.py": "b.py"})
    assert kept == foreign


def test_renames_are_taken_relative_to_the_config_root():
    renames = {"sub/pkg/a.py": "sub/pkg/b.py", "other/c.py": "sub/c.py", "top.py": "moved.py"}
    assert break_diff.relative_renames(renames, "sub") == {"pkg/a.py": "pkg/b.py"}
    assert break_diff.relative_renames(renames, "") == renames


# --- no baseline --------------------------------------------------------------------------------


def base_run(status: Status, exit_code: int | None, error: str | None = None):
    return entrypoint("train", [brk("a" * 16)], status=status, exit_code=exit_code, error=error)


NO_BASELINE = "no baseline for `train` on base bbbbbbb: "


@pytest.mark.parametrize(
    ("base", "reason"),
    [
        (None, "entrypoint not defined there (the base's config or report does not have it)"),
        (
            base_run(Status.FAILED, 1, "Traceback …\nModuleNotFoundError: No module named 'pkg.bench'\n"),
            "entrypoint not defined there (ModuleNotFoundError: No module named 'pkg.bench')",
        ),
        (base_run(Status.FAILED, 127, "sh: 1: nope: not found"), "entrypoint not defined there"),
        (
            base_run(Status.FAILED, 1, "Traceback …\n  raise RuntimeError\nRuntimeError: boom\n\n"),
            "it failed there (exit 1): RuntimeError: boom",
        ),
        (base_run(Status.TIMEOUT, None, "timed out after 900 s"), "it timed out there"),
        (base_run(Status.CRASHED, -11, "killed by signal 11"), "it crashed there (exit -11): killed by signal 11"),
        (base_run(Status.SKIPPED, None, "not in this shard"), "it was skipped there (not in this shard)"),
        (base_run(Status.SKIPPED, None), "it was skipped there (no reason given)"),
    ],
    ids=[
        "missing",
        "module not found",
        "command not found",
        "failed",
        "timed out",
        "crashed",
        "skipped",
        "skipped silently",
    ],
)
def test_an_entrypoint_without_a_baseline_says_why_and_its_breaks_are_new(base, reason):
    """Unknown is new: a base that could not run the entrypoint shows none of its breaks."""
    head = entrypoint("train", [brk("a" * 16), brk("n" * 16)])
    base_report = report_of(*([base] if base is not None else [entrypoint("other")]))
    result = break_diff.diff(report_of(head), base_report, break_diff.Comparison("main", BASE_SHA))
    (train,) = result.entrypoints
    assert listed(result, "train").fixed == listed(result, "train").persisting == () and train.graph_delta is None
    assert listed(result).fixed == listed(result).persisting == ()
    assert listed(result, "train").new == listed(result).new == ("a" * 16, "n" * 16)
    if "not defined there" in reason or base is None:  # taken as new in the change
        assert say(train.no_baseline) == NO_BASELINE + reason and train.lost_baseline is None
    else:  # the base has it and could not run it: no comparison, said above the headline
        made = "; the comparison could not be made, so its 2 graph breaks count as new"
        assert say(train.no_baseline) == NO_BASELINE + reason + made and say(train.lost_baseline) == reason


def test_a_base_that_lacks_a_module_says_where_it_is_and_its_breaks_are_new():
    from gbbot.analysis import dependence

    head = entrypoint("train", [brk("a" * 16)])
    error = "Traceback …\nModuleNotFoundError: No module named 'wrapper'\n"
    base = report_of(base_run(Status.FAILED, 1, error))
    files = {"wrapper.py": source.source_map("def wrap(m):\n    return m\n")}

    def with_change(untracked: frozenset[str]):
        change = dependence.Change(files.get, lambda _p: None, frozenset({"wrapper.py"}), untracked)
        how = break_diff.Comparison("main", BASE_SHA, gaps=lambda e: dependence.gap(e, change))
        return break_diff.diff(report_of(head), base, how)

    untracked = with_change(frozenset({"wrapper.py"}))
    assert say(untracked.entrypoints[0].no_baseline).startswith(
        NO_BASELINE + "`wrapper.py` is only in the working tree (untracked), so the base's checkout lacks it"
    )
    assert listed(untracked, "train").new == ("a" * 16,) and untracked.entrypoints[0].lost_baseline
    added = with_change(frozenset())
    assert say(added.entrypoints[0].no_baseline).startswith(
        NO_BASELINE + "entrypoint not defined there: `wrapper.py` is new in this change"
    )
    assert listed(added, "train").new == ("a" * 16,) and added.entrypoints[0].lost_baseline is None
    nothing = dependence.Change(lambda _p: None, lambda _p: None, frozenset())
    how = break_diff.Comparison("main", BASE_SHA, gaps=lambda e: dependence.gap(e, nothing))
    elsewhere = break_diff.diff(report_of(head), base, how).entrypoints[0]
    assert say(elsewhere.no_baseline).startswith(NO_BASELINE + "module `wrapper` is missing on the base")


def test_a_long_failure_is_cut_in_the_reason():
    base = base_run(Status.FAILED, 1, "RuntimeError: " + "x" * 1000)
    reason = say(Reason(Why.NO_BASELINE, ("train", BASE_SHA, break_diff.why_no_baseline(base), 0)))
    assert reason.startswith(NO_BASELINE + "it failed there (exit 1): RuntimeError: xxx") and reason.endswith("…")
    assert len(reason) < len(NO_BASELINE) + 40 + break_diff.REASON_CHARS


# --- shards -------------------------------------------------------------------------------------


def test_the_shards_diffs_joined_are_the_whole_diff():
    moved, printed = brk("m" * 16), brk("p" * 16, line=20)
    head = {"a": [], "b": [moved], "c": [eager("e" * 16)], "d": [brk("n" * 16)]}
    base = {"a": [moved], "b": [], "c": [printed], "d": [brk("f" * 16, line=30)]}
    whole = compared(head, base)
    shards = [compared({n: head[n] for n in names}, base) for names in (("a", "c"), ("b", "d"))]
    joined = break_diff.union(shards)
    for field in ("new", "fixed", "persisting", "hidden"):
        assert set(getattr(listed(joined), field)) == set(getattr(listed(whole), field)), field
    assert listed(joined).hidden_by == listed(whole).hidden_by
    assert (
        [b.fingerprint for b in joined.breaks(ChangeState.FIXED)]
        == [b.fingerprint for b in whole.breaks(ChangeState.FIXED)]
        == ["f" * 16]
    )
    assert joined.breaks(ChangeState.HIDDEN) == (printed,)
    assert sorted(e.name for e in joined.entrypoints) == ["a", "b", "c", "d"]
    assert listed(joined).persisting == ("m" * 16,)  # fixed in shard 1, new in shard 2: still there


def test_joined_shards_keep_one_copy_of_each_note():
    one = compared({"a": []}, {"a": []}, notes=("the head is the working tree",))
    two = compared({"b": []}, {"b": []}, notes=("the head is the working tree",))
    assert break_diff.union([one, two]).notes == ("the head is the working tree",)


# --- recompilations -----------------------------------------------------------------------------


def recompiling(*frames, status: Status = Status.OK):
    return report_of(entrypoint("train", [], recompiles=frames, status=status))


def test_recompile_problems_are_new_fixed_or_persisting_and_a_new_limit_is_named():
    limit = recompile.limit_fingerprint(AT_LIMIT)
    (int_reason,) = AT_LIMIT.reasons
    (dtype_reason,) = DTYPE.reasons
    result = break_diff.recompile_diff(recompiling(AT_LIMIT, DTYPE, INFO), recompiling(DTYPE))
    result = states(result)
    assert set(result.new) == {limit, int_reason.fingerprint} and result.new_limit == (limit,)
    assert result.persisting == (dtype_reason.fingerprint,) and result.fixed == ()
    gone = states(break_diff.recompile_diff(recompiling(INFO), recompiling(DTYPE)))
    assert gone.fixed == (dtype_reason.fingerprint,) and gone.new == ()  # automatic dynamic is no problem


def test_recompilations_of_a_base_run_that_failed_are_no_baseline():
    result = states(break_diff.recompile_diff(recompiling(DTYPE), recompiling(DTYPE, status=Status.FAILED)))
    (dtype_reason,) = DTYPE.reasons
    assert result.new == (dtype_reason.fingerprint,) and result.persisting == ()


def test_joined_shards_join_their_recompilations_too():
    guard = recompiled_frame("step", 3, 2, (recompile_reason("dtype"),))
    first = compared({"a": []}, {"a": []})
    first = replace(first, recompiles=break_diff.recompile_diff(recompiling(guard), recompiling()))
    second = replace(first, entrypoints=(), recompiles=break_diff.recompile_diff(recompiling(), recompiling(guard)))
    joined = listed(break_diff.union([first, second])).recompiles
    assert joined.persisting == (guard.reasons[0].fingerprint,) and joined.new == joined.fixed == ()


# --- by frame: the frame Dynamo compiled, not the function a break is in -------------------------

WRAPPER = FrameRef("x_transformers/autoregressive_wrapper.py", 480, "generate", "AutoregressiveWrapper.generate")
NET = FrameRef("x_transformers/x_transformers.py", 900, "forward", "TransformerWrapper.forward")
BLOCK = FrameRef("pkg/model.py", 10, "forward", "Block.forward")
ROUTER = FrameRef("pkg/model.py", 40, "forward", "Router.forward")
MODEL = FrameRef("pkg/model.py", 60, "forward", "Model.forward")


def framed(name: str, breaks: list[GraphBreak], *compiled: CompiledFrame):
    """An entrypoint with its compiled frames; a frame's breaks are those that name it."""
    with_breaks = tuple(
        replace(c, breaks=tuple(b.fingerprint for b in breaks if c.frame in b.frames)) for c in compiled
    )
    return entrypoint(name, breaks, frames=with_breaks, frames_skipped=sum(c.eager for c in compiled))


def frame(ref: FrameRef, eager_by: str | None = None, eager: bool | None = None) -> CompiledFrame:
    return CompiledFrame(
        ref, ("0/0",), 0 if eager_by else 1, eager_by is not None if eager is None else eager, eager_by
    )


def diffed(head, base, **options) -> Diff:
    return break_diff.diff(report_of(head), report_of(base), break_diff.Comparison("main", BASE_SHA, **options))


def unchanged(_brk: GraphBreak) -> bool:
    """What every break depends on is the base's (gbbot/analysis/dependence.py answers this)."""
    return True


def test_a_new_break_in_a_callee_that_makes_the_callers_frame_eager_hides_the_callers_breaks():
    """generate() loops over self.net(...); the PR logs inside net.forward, so generate runs
    eagerly and its data-dependent branch is no longer traced: hidden, by the new logger."""
    branch = brk("d" * 16, file=WRAPPER.file, function=WRAPPER.qualname, line=495, frames=(WRAPPER,))
    logger = brk(
        "l" * 16, file=NET.file, function=NET.qualname, line=905, frames=(WRAPPER, NET), makes_eager=(WRAPPER,)
    )
    logger = replace(logger, frame_skipped=True)
    base = framed("gen", [branch], frame(WRAPPER), frame(NET))
    head = framed("gen", [logger], frame(WRAPPER, "l" * 16), frame(NET))
    result = diffed(head, base)
    assert listed(result).hidden == ("d" * 16,) and listed(result).hidden_by == {"d" * 16: "l" * 16}
    assert listed(result).fixed == () and listed(result).new == ("l" * 16,)


DECORATOR = FrameRef("x_transformers/autoregressive_wrapper.py", 32, "inner", "eval_decorator.<locals>.inner")


def test_a_decorators_frame_traced_on_both_sides_does_not_make_a_branch_the_new_break_stops_before_fixed():
    """x-transformers' `generate` under `@eval_decorator`: Dynamo traces the decorator's frame,
    inlines `generate`, breaks, then compiles `generate` on its own. The decorator's frame is
    traced on the head too, but what stops it there is the new logger, met before the branch."""
    branch = brk("d" * 16, file=WRAPPER.file, function=WRAPPER.qualname, line=516, frames=(DECORATOR, WRAPPER))
    branch = replace(branch, makes_eager=(WRAPPER,), frame_skipped=True)
    logger = brk(
        "l" * 16,
        file=NET.file,
        function=NET.qualname,
        line=905,
        frames=(DECORATOR, WRAPPER, NET),
        makes_eager=(WRAPPER,),
    )
    logger = replace(logger, frame_skipped=True)
    base = framed("gen", [branch], frame(DECORATOR), frame(WRAPPER, "d" * 16), frame(NET))
    head = framed("gen", [logger], frame(DECORATOR), frame(WRAPPER, "l" * 16), frame(NET))
    result = diffed(head, base)
    assert listed(result).hidden == ("d" * 16,) and listed(result).hidden_by == {"d" * 16: "l" * 16}
    assert listed(result).fixed == () and listed(result).new == ("l" * 16,)


def test_a_deleted_break_is_fixed_though_another_frame_of_the_same_name_runs_eagerly():
    """Block.forward's logger.debug is deleted; Router.forward (same file, same name) runs eagerly
    because of its own break, on both sides: the deleted break is fixed, not hidden."""
    debug = brk("x" * 16, function="Block.forward", line=12, frames=(BLOCK,))
    routed = brk("r" * 16, function="Router.forward", line=45, frames=(ROUTER,), makes_eager=(ROUTER,))
    routed = replace(routed, frame_skipped=True)
    base = framed("train", [debug, routed], frame(BLOCK), frame(ROUTER, "r" * 16))
    head = framed("train", [routed], frame(BLOCK), frame(ROUTER, "r" * 16))
    result = diffed(head, base)
    assert (
        listed(result).fixed == ("x" * 16,) and listed(result).hidden == () and listed(result).persisting == ("r" * 16,)
    )


def test_a_break_in_a_frame_that_ran_eagerly_on_the_base_is_revealed_not_new():
    """logger.debug in Block.forward, called in Model.forward's loop, made Model.forward run
    eagerly; with the logger guarded, the print later in Model.forward shows up: revealed."""
    logger = brk("l" * 16, function="Block.forward", line=12, frames=(MODEL, BLOCK), makes_eager=(MODEL,))
    logger = replace(logger, frame_skipped=True)
    printed = brk("p" * 16, function="Model.forward", line=64, frames=(MODEL,))
    base = framed("train", [logger], frame(MODEL, "l" * 16), frame(BLOCK))
    head = framed("train", [printed], frame(MODEL), frame(BLOCK))
    result = diffed(head, base, in_base=unchanged)
    assert listed(result).revealed == ("p" * 16,) and listed(result).new == ()
    assert listed(result).fixed == ("l" * 16,) and listed(result).hidden == ()
    assert listed(result, "train").revealed == ("p" * 16,) and listed(result, "train").new == ()
    # Unknown is no excuse: where nothing shows what the print depends on is the base's, it is new.
    unknown = diffed(head, base)
    assert listed(unknown).new == ("p" * 16,) and listed(unknown).revealed == ()


def test_a_break_in_a_frame_that_was_traced_on_the_base_is_new():
    printed = brk("p" * 16, function="Model.forward", line=64, frames=(MODEL,))
    base = framed("train", [], frame(MODEL), frame(BLOCK))
    head = framed("train", [printed], frame(MODEL), frame(BLOCK))
    assert listed(diffed(head, base)).new == ("p" * 16,)


def test_a_frame_eager_on_both_sides_because_of_one_persisting_break_hides_nothing():
    inner = brk("i" * 16, function="Model.forward", line=62, frames=(MODEL,))
    loop = brk("g" * 16, function="Block.forward", line=12, frames=(MODEL, BLOCK), makes_eager=(MODEL,))
    loop = replace(loop, frame_skipped=True)
    base = framed("train", [inner, loop], frame(MODEL, "g" * 16), frame(BLOCK))
    head = framed("train", [loop], frame(MODEL, "g" * 16), frame(BLOCK))
    assert listed(diffed(head, base)).fixed == ("i" * 16,)


def test_a_frame_on_the_breaks_stack_that_now_runs_eagerly_hides_it():
    """The base traced the break in its own frame (helper compiled on its own, say); on the head
    a new break makes the caller, which its stack passes through, run eagerly."""
    stack = (Frame("pkg/model.py", 66, "forward", "y = helper(x)"), Frame("pkg/util.py", 4, "helper", 'print("h")'))
    helper = FrameRef("pkg/util.py", 3, "helper")
    in_helper = brk("h" * 16, file="pkg/util.py", function="helper", user_stack=stack, frames=(helper,))
    loop = replace(
        brk("g" * 16, function="Model.forward", line=62, frames=(MODEL,), makes_eager=(MODEL,)), frame_skipped=True
    )
    base = framed("train", [in_helper], frame(MODEL), frame(helper))
    head = framed("train", [loop], frame(MODEL, "g" * 16))
    result = diffed(head, base)
    assert listed(result).hidden == ("h" * 16,) and listed(result).hidden_by == {"h" * 16: "g" * 16}


def test_a_frame_that_runs_eagerly_with_no_break_named_still_hides():
    branch = brk("d" * 16, file=WRAPPER.file, function=WRAPPER.qualname, line=495, frames=(WRAPPER,))
    base = framed("gen", [branch], frame(WRAPPER))
    head = framed("gen", [], frame(WRAPPER, None, eager=True))
    result = diffed(head, base)
    assert listed(result).hidden == ("d" * 16,) and listed(result).hidden_by == {"d" * 16: ""}


def test_revealed_in_one_shard_and_gone_in_another_persists():
    logger = replace(brk("l" * 16, frames=(MODEL, BLOCK), makes_eager=(MODEL,)), frame_skipped=True)
    printed = brk("p" * 16, frames=(MODEL,))
    a = diffed(framed("a", [printed], frame(MODEL)), framed("a", [logger], frame(MODEL, "l" * 16)), in_base=unchanged)
    b = diffed(framed("b", []), framed("b", [printed]))
    joined = break_diff.union([a, b])
    assert listed(joined).persisting == ("p" * 16,) and listed(joined).revealed == ()
    assert listed(break_diff.union([a])).revealed == ("p" * 16,)


def source_of(files: dict[str, str]):
    return dependence.line_in(lambda path: source.source_map(files[path]) if path in files else None)


MODEL_PY = """class Block:
    def forward(self, x):
        log.debug("x")
        return x


class Model:
    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        print("done")
        return x
"""


def test_a_gone_break_whose_code_the_head_deleted_is_fixed_though_its_frame_now_runs_eagerly():
    in_model = (Frame("train.py", 3, "<module>", "main()"), Frame("pkg/model.py", 62, "forward", 'print("done")'))
    printed = brk(
        "p" * 16, function="Model.forward", line=62, code='print("done")', frames=(MODEL,), user_stack=in_model
    )
    loop = replace(
        brk("g" * 16, function="Block.forward", frames=(MODEL, BLOCK), makes_eager=(MODEL,)), frame_skipped=True
    )
    base = framed("train", [printed], frame(MODEL), frame(BLOCK))
    head = framed("train", [loop], frame(MODEL, "g" * 16), frame(BLOCK))
    without_print = MODEL_PY.replace('        print("done")\n', "")
    in_head = source_of({"pkg/model.py": without_print})
    result = break_diff.diff(report_of(head), report_of(base), break_diff.Comparison("main", BASE_SHA, in_head=in_head))
    assert listed(result).fixed == ("p" * 16,) and listed(result).hidden == ()
    kept = break_diff.diff(
        report_of(head),
        report_of(base),
        break_diff.Comparison("main", BASE_SHA, in_head=source_of({"pkg/model.py": MODEL_PY})),
    )
    assert listed(kept).hidden == ("p" * 16,)


def test_a_head_break_whose_code_the_base_did_not_have_is_new_even_in_a_frame_that_ran_eagerly():
    logger = replace(
        brk("l" * 16, function="Block.forward", frames=(MODEL, BLOCK), makes_eager=(MODEL,)), frame_skipped=True
    )
    printed = brk("p" * 16, function="Model.forward", code='print("done")', frames=(MODEL,))
    base = framed("train", [logger], frame(MODEL, "l" * 16), frame(BLOCK))
    head = framed("train", [printed], frame(MODEL), frame(BLOCK))
    before_print = MODEL_PY.replace('        print("done")\n', "")
    added = break_diff.diff(
        report_of(head),
        report_of(base),
        break_diff.Comparison("main", BASE_SHA, in_base=source_of({"pkg/model.py": before_print})),
    )
    assert listed(added).new == ("p" * 16,) and listed(added).revealed == ()
    there = break_diff.diff(
        report_of(head),
        report_of(base),
        break_diff.Comparison("main", BASE_SHA, in_base=source_of({"pkg/model.py": MODEL_PY})),
    )
    assert listed(there).revealed == ("p" * 16,) and listed(there).new == ()


# --- a compile error that ends the run is no break, and the same one on both sides is no news ----

ERROR = CompileError(
    "RuntimeError when making fake tensor call",
    "GB4315",
    Category.USER_ERROR,
    "pkg/model.py",
    4,
    "project",
    "return x @ w",
    "Dynamo failed to run FX node with fake tensors",
)


def failing(name: str, breaks=(), error: CompileError | None = ERROR, **changes):
    return entrypoint(
        name, breaks, status=Status.FAILED, exit_code=1, error="RuntimeError", compile_error=error, **changes
    )


def test_the_same_compile_error_on_both_sides_is_still_failing_not_no_baseline():
    earlier = brk("a" * 16)
    result = break_diff.diff(
        report_of(failing("m", [earlier])), report_of(failing("m", [earlier])), break_diff.Comparison("main", BASE_SHA)
    )
    (m,) = result.entrypoints
    assert m.no_baseline is None and say(m.still_failing).startswith("`m` is still failing (same error as the base)")
    assert (listed(result).new, listed(result).fixed, listed(result).persisting) == ((), (), ("a" * 16,))


def test_the_same_error_after_the_line_moved_is_still_the_same_error():
    moved = replace(ERROR, line=9)
    result = break_diff.diff(
        report_of(failing("m", error=moved)), report_of(failing("m")), break_diff.Comparison("main", BASE_SHA)
    )
    assert result.entrypoints[0].still_failing and listed(result).new == ()


def test_a_head_break_before_the_same_error_is_new_and_nothing_is_fixed():
    result = break_diff.diff(
        report_of(failing("m", [brk("n" * 16)])),
        report_of(failing("m", [brk("o" * 16)])),
        break_diff.Comparison("main", BASE_SHA),
    )
    assert listed(result).new == ("n" * 16,) and listed(result).fixed == ()


def test_another_error_on_the_base_leaves_no_baseline():
    other = replace(ERROR, gb_id="GB0001", gb_type="other")
    result = break_diff.diff(
        report_of(failing("m")), report_of(failing("m", error=other)), break_diff.Comparison("main", BASE_SHA)
    )
    (m,) = result.entrypoints
    assert m.no_baseline and m.still_failing is None and listed(result).new == ()


def test_a_crash_that_is_no_break_is_never_new_in_the_action_counts():
    base = report_of(entrypoint("ok", [brk("p" * 16)]), failing("m"))
    head = report_of(entrypoint("ok", [brk("p" * 16), brk("n" * 16)]), failing("m"))
    result = break_diff.diff(head, base, break_diff.Comparison("main", BASE_SHA))
    assert listed(result).new == ("n" * 16,)
    assert counts.counts(replace(head, diff=result)).new == 1


def test_a_frame_is_the_same_frame_when_an_edit_above_moves_its_first_line():
    logger = replace(
        brk("l" * 16, function="Block.forward", frames=(MODEL, BLOCK), makes_eager=(MODEL,)), frame_skipped=True
    )
    moved = replace(MODEL, line=MODEL.line - 1)  # the logger's line above it is gone
    printed = brk("p" * 16, function="Model.forward", line=63, frames=(moved,))
    base = framed("train", [logger], frame(MODEL, "l" * 16), frame(BLOCK))
    head = framed("train", [printed], frame(moved), frame(BLOCK))
    assert listed(diffed(head, base, in_base=unchanged)).revealed == ("p" * 16,)


def test_a_gone_break_in_a_callee_the_head_still_compiles_on_its_own_is_fixed_not_hidden():
    # The logger in Block.forward was traced inlined into Model.forward's loop (which it sent to
    # eager) and in Block.forward's own compile. On the head a new `if` in the loop keeps
    # Model.forward eager, but Block.forward is still compiled by itself: had the logger still
    # broken, that compile would have shown it.
    stack = (Frame("train.py", 3, "<module>", "main()"), Frame("pkg/model.py", 12, "forward", 'log.debug("x")'))
    logger = replace(
        brk("l" * 16, function="Block.forward", line=12, frames=(MODEL, BLOCK), makes_eager=(MODEL,), user_stack=stack),
        frame_skipped=True,
    )
    branch = replace(brk("b" * 16, function="Model.forward", line=63, frames=(MODEL,), makes_eager=(MODEL,)))
    base = framed("train", [logger], frame(MODEL, "l" * 16), frame(BLOCK))
    head = framed("train", [branch], frame(MODEL, "b" * 16), frame(BLOCK))
    assert listed(diffed(head, base)).fixed == ("l" * 16,)
    # Block.forward not compiled on the head (the model inlines it everywhere): only hidden
    head_inlined = framed("train", [branch], frame(MODEL, "b" * 16))
    assert listed(diffed(head_inlined, base)).hidden == ("l" * 16,)


# --- the typed changes: one per distinct break, the report's v1 lists derived both ways ---------


def test_each_change_carries_its_record_state_entrypoints_and_what_hides_it():
    moved, printed, fixed_one = brk("m" * 16), brk("p" * 16, line=20), brk("f" * 16, line=30)
    hider, added = eager("e" * 16), brk("n" * 16, line=40)
    head = {"a": [moved, added], "b": [moved], "c": [hider]}
    base = {"a": [moved, fixed_one], "b": [], "c": [printed]}
    result = compared(head, base)
    got = {c.fingerprint: (c.state, c.entrypoints, c.hidden_by) for c in result.changes}
    assert got == {
        "n" * 16: (ChangeState.NEW, ("a",), None),
        "e" * 16: (ChangeState.NEW, ("c",), None),
        "f" * 16: (ChangeState.FIXED, ("a",), None),
        "m" * 16: (ChangeState.PERSISTING, ("a",), None),  # new in b, but the base had it in a
        "p" * 16: (ChangeState.HIDDEN, ("c",), hider),
    }
    assert result.breaks(ChangeState.FIXED) == (fixed_one,) and result.breaks(ChangeState.HIDDEN) == (printed,)
    assert result.state(moved) is ChangeState.PERSISTING and result.state(brk("x" * 16)) is None


def test_the_json_writes_the_v1_lists_and_reading_them_gives_the_same_changes():
    # (fingerprints in hex: the schema checks them)
    head = {"a": [brk("a" * 16), brk("b" * 16, line=40)], "c": [eager("e" * 16)]}
    base = {"a": [brk("a" * 16), brk("f" * 16, line=30)], "c": [brk("c" * 16, line=20)]}
    result = compared(head, base)
    made = replace(report_of(*(entrypoint(n, b) for n, b in head.items())), diff=result)
    data = report_.to_json(made)["diff"]
    assert (data["new"], data["fixed"], data["persisting"]) == (["b" * 16, "e" * 16], ["f" * 16], ["a" * 16])
    assert (data["hidden"], data["hidden_by"], data["revealed"]) == (["c" * 16], {"c" * 16: "e" * 16}, [])
    assert [b["line"] for b in data["fixed_breaks"]] == [30] and [b["line"] for b in data["hidden_breaks"]] == [20]
    assert report_.from_json(report_.to_json(made)).diff == result


@pytest.mark.parametrize(
    ("one", "other", "joined"),
    [
        (ChangeState.NEW, ChangeState.FIXED, ChangeState.PERSISTING),  # on the base, still on the head
        (ChangeState.REVEALED, ChangeState.HIDDEN, ChangeState.PERSISTING),
        (ChangeState.NEW, ChangeState.REVEALED, ChangeState.REVEALED),  # revealed anywhere is not new
        (ChangeState.FIXED, ChangeState.HIDDEN, ChangeState.HIDDEN),  # hidden anywhere is not fixed
        (ChangeState.PERSISTING, ChangeState.FIXED, ChangeState.PERSISTING),
        (ChangeState.NEW, ChangeState.NEW, ChangeState.NEW),
    ],
)
def test_a_breaks_states_in_two_shards_fold_to_one_either_way(one, other, joined):
    assert break_diff.joined(one, other) is joined and break_diff.joined(other, one) is joined
