"""How a re-run is judged: break gone, nothing new (revealed breaks excepted), results equal.
The runs are records as `gbbot check` makes them; test_fix_e2e.py makes them with real torch."""

from __future__ import annotations

from dataclasses import replace

from gbbot.core.config import Entrypoint
from gbbot.core.fixes import Advice, Counts, FixResult, FixStatus
from gbbot.core.model import (
    Category,
    EntrypointReport,
    Frame,
    FrameRef,
    GraphBreak,
    LibrarySite,
    Origin,
    RunOutcome,
    Status,
)
from gbbot.fix import batch
from gbbot.fix.plan import Candidate, Planned
from gbbot.fix.verify import Judgement, Observation, judge, no_better
from gbbot.recipes.logger import LoggerGuard
from tests.builders import graph_break

CALL = Entrypoint("fwd", call="m:f")


def brk(
    fingerprint: str, gb_id: str = "GB0059", code: str = 'print("a")', function: str = "f", **changes
) -> GraphBreak:
    base = GraphBreak(
        fingerprint=fingerprint,
        gb_id=gb_id,
        gb_type=gb_id,
        category=Category.SUPPORTABLE,
        origin=Origin.USER,
        file="m.py",
        line=3,
        function=function,
        code=code,
        explanation="",
        hints=(),
        doc_url=None,
        frame_skipped=False,
        in_loop=False,
        count=1,
        caused=(),
        user_stack=(Frame("m.py", 3, function, code),),
    )
    return replace(base, **changes)


def seen(*breaks: GraphBreak, graphs: int = 2, status: Status = Status.OK, result: str | None = "r.pt") -> Observation:
    report = EntrypointReport(
        "fwd",
        status,
        0 if status is Status.OK else 1,
        1.0,
        graphs,
        sum(b.count for b in breaks),
        sum(b.frame_skipped for b in breaks),
        breaks,
    )
    outcome = RunOutcome("fwd", status, report.exit_code, 1.0, result_path=result)
    return Observation(CALL, report, outcome)


def same(_entrypoint: Entrypoint, _a: str, _b: str) -> None:
    return None


TARGET = brk("a" * 16)


def test_break_gone_and_results_equal_is_verified():
    verdict = judge([(TARGET, ["fwd"])], {"fwd": seen(TARGET)}, {"fwd": seen(graphs=1)}, same)
    assert verdict.ok
    assert verdict.summary == "removes 1 break; graphs 2 → 1; outputs equal"


def test_a_break_still_there_is_dropped():
    verdict = judge([(TARGET, ["fwd"])], {"fwd": seen(TARGET)}, {"fwd": seen(TARGET)}, same)
    assert not verdict.ok and verdict.reason == "the break is still reported in fwd"


def test_the_break_still_counts_when_the_patch_changed_its_line():
    moved = brk("b" * 16, code='if not torch.compiler.is_compiling(): print("a")')
    verdict = judge([(TARGET, ["fwd"])], {"fwd": seen(TARGET)}, {"fwd": seen(moved)}, same)
    assert not verdict.ok and "still reported" in verdict.reason


def test_a_new_break_drops_the_patch():
    new = brk("c" * 16, gb_id="GB0124", code="n = x.item()")
    verdict = judge([(TARGET, ["fwd"])], {"fwd": seen(TARGET)}, {"fwd": seen(new)}, same)
    assert not verdict.ok
    assert verdict.reason == "new break in fwd: GB0124 at m.py:3 (n = x.item())"


def test_new_breaks_are_said_once_each_and_counted_not_listed_and_the_summary_says_they_were_added():
    # timm's `.item()` range check: one patch, four new breaks on the lines it wrote
    new = [brk(f"{n}" * 16, gb_id="GB0124", code=f"n{n} = x.item()", line=3 + n) for n in range(1, 5)]
    verdict = judge([(TARGET, ["fwd"])], {"fwd": seen(TARGET)}, {"fwd": seen(*new)}, same)
    assert verdict.reason == "new breaks in fwd: GB0124 at m.py:4 (n1 = x.item()) and 3 more"
    assert verdict.summary.startswith("adds 3 breaks;")  # never "removes -3 breaks"


def test_a_break_revealed_by_a_frame_that_no_longer_runs_eagerly_is_reported_not_held_against_it():
    loop = brk("d" * 16, gb_id="GB0025", code="torch._dynamo.graph_break()", frame_skipped=True)
    hidden = brk("e" * 16, code='print("after")')
    verdict = judge([(loop, ["fwd"])], {"fwd": seen(loop, graphs=0)}, {"fwd": seen(hidden, graphs=1)}, same)
    assert verdict.ok and verdict.revealed == ("e" * 16,)
    assert (
        verdict.summary
        == "removes 1 break; reveals 1 that an eager frame hid; graphs 0 → 1; frames running eagerly 1 → 0; outputs equal"
    )


def test_a_break_that_comes_back_as_another_kind_at_the_same_code_is_not_fixed():
    item = brk("f" * 16, gb_id="GB0124", code="if loss.item() > 50:", frame_skipped=True)
    branch = brk("9" * 16, gb_id="GB0170", code="if loss.item() > 50:", frame_skipped=True)
    verdict = judge([(item, ["fwd"])], {"fwd": seen(item)}, {"fwd": seen(branch)}, same)
    assert not verdict.ok
    assert verdict.reason.endswith(
        "the break comes back as GB0170 at m.py:3 (if loss.item() > 50:) in fwd: the patch renames it, it does not fix it"
    )


def in_library(fingerprint: str, gb_id: str | None, line: int, code: str) -> GraphBreak:
    """A break inside a library model, reported at the app's line that calls the model."""
    site = LibrarySite("lib", "lib/model.py", line, "forward", code)
    return brk(fingerprint, gb_id=gb_id, code="out = model(x)", origin=Origin.THIRD_PARTY, library_site=site)


def test_another_library_break_of_the_model_changing_kind_is_neither_a_rename_nor_new():
    # VITS: with capture_scalar_outputs the layer-drop draw breaks as a data-dependent guard
    # instead of GB0033; the `.item()` the setting was for is gone
    item = in_library("1" * 16, "GB0124", 86, "t_act = torch.tanh(in_act[:, :num_channels, :])")
    draw = in_library("2" * 16, "GB0033", 1113, "dropout_probability = np.random.uniform(0, 1)")
    guard = in_library("3" * 16, None, 1113, "dropout_probability = np.random.uniform(0, 1)")
    verdict = judge([(item, ["fwd"])], {"fwd": seen(item, draw)}, {"fwd": seen(guard)}, same)
    assert verdict.ok, verdict.reason


def test_a_library_break_that_comes_back_as_another_kind_at_its_library_line_is_not_fixed():
    draw = in_library("2" * 16, "GB0033", 1113, "dropout_probability = np.random.uniform(0, 1)")
    guard = in_library("3" * 16, None, 1113, "dropout_probability = np.random.uniform(0, 1)")
    verdict = judge([(draw, ["fwd"])], {"fwd": seen(draw)}, {"fwd": seen(guard)}, same)
    assert not verdict.ok and "the patch renames it, it does not fix it" in verdict.reason


def test_different_results_drop_the_patch():
    verdict = judge([(TARGET, ["fwd"])], {"fwd": seen(TARGET)}, {"fwd": seen()}, lambda _e, _a, _b: "values differ")
    assert not verdict.ok and verdict.reason == "the result of fwd changed: values differ"
    assert verdict.summary.endswith("outputs differ")


def test_a_run_that_now_fails_drops_the_patch():
    verdict = judge([(TARGET, ["fwd"])], {"fwd": seen(TARGET)}, {"fwd": seen(status=Status.FAILED, result=None)}, same)
    assert not verdict.ok and verdict.reason.startswith("fwd ended failed (exit 1), before ok (exit 0)")


def test_a_run_that_now_fails_is_said_by_its_exception_not_by_torchs_advice_after_it():
    # VITS with capture_scalar_outputs under Inductor (torch 2.13), faithful mode
    stderr = (
        "Traceback (most recent call last):\n"
        "torch._inductor.exc.InductorError: TypeError: BooleanAtom not allowed in this context.\n"
        "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this especially if you're reporting a bug)\n"
    )
    failed = seen(status=Status.FAILED, result=None)
    failed = replace(failed, outcome=replace(failed.outcome, stderr_tail=stderr))
    verdict = judge([(TARGET, ["fwd"])], {"fwd": seen(TARGET)}, {"fwd": failed}, same)
    assert verdict.reason.startswith(
        "fwd ended failed (exit 1), before ok (exit 0): "
        "torch._inductor.exc.InductorError: TypeError: BooleanAtom not allowed in this context."
    )


def test_a_break_the_baseline_did_not_show_cannot_be_verified():
    verdict = judge([(TARGET, ["fwd"])], {"fwd": seen()}, {"fwd": seen()}, same)
    assert not verdict.ok and "did not show up in the baseline" in verdict.reason


def test_run_entrypoints_compare_exit_status_and_output_only_when_asked():
    run = Entrypoint("cli", run="python x.py")
    before = replace(seen(TARGET), entrypoint=run, outcome=RunOutcome("fwd", Status.OK, 0, 1.0, stdout_tail="a\n"))
    after = replace(seen(), entrypoint=run, outcome=RunOutcome("fwd", Status.OK, 0, 1.0, stdout_tail="b\n"))
    assert judge([(TARGET, ["fwd"])], {"fwd": before}, {"fwd": after}, same).summary.endswith("exit status equal")
    strict = Entrypoint("cli", run="python x.py", verify_output=True)
    verdict = judge(
        [(TARGET, ["fwd"])],
        {"fwd": replace(before, entrypoint=strict)},
        {"fwd": replace(after, entrypoint=strict)},
        same,
    )
    assert not verdict.ok and verdict.reason == "the output of cli changed (verify_output is on)"


def test_nothing_is_verified_without_a_re_run():
    verdict = judge([(TARGET, ["gone-from-config"])], {}, {}, same)
    assert not verdict.ok
    assert verdict.reason == "none of the entrypoints it appeared in (gone-from-config) could be re-run here"


# --- leaving the code better: a patch that only moves where Dynamo stops ------------------------


def test_a_patch_whose_revealed_break_keeps_the_frame_eager_and_the_graphs_is_not_a_fix():
    reached = graph_break(1, gb_id="GB0170", file="m.py", line=21, code="if x.sum() > 0:")
    why = no_better(Counts(1, 2, 1), Counts(1, 2, 1), [reached], lambda _b: False)
    assert why and why.startswith("not a fix: Dynamo now stops at GB0170 at m.py:21 (if x.sum() > 0:) instead")
    assert "frames running eagerly 1 → 1, graphs 2 → 2" in why


def test_it_is_kept_when_a_later_round_would_fix_what_it_reached_or_when_anything_compiles_better():
    reached = graph_break(1, gb_id="GB0124", file="m.py", line=20, code="s = x.max().item()")
    assert no_better(Counts(1, 2, 1), Counts(1, 2, 1), [reached], lambda _b: True) is None
    assert no_better(Counts(1, 2, 1), Counts(1, 3, 0), [reached], lambda _b: False) is None  # a frame compiles
    assert no_better(Counts(2, 3, 0), Counts(1, 2, 0), [reached], lambda _b: False) is None  # a split went away
    assert no_better(Counts(1, 1, 0), Counts(0, 1, 0), [], lambda _b: False) is None  # nothing reached: fixed


def test_a_dropped_fix_gives_one_account_in_summary_reason_and_revealed():
    """A patch that removed other breaks and revealed some, but left its own: the JSON's summary
    must not read as a success beside a reason that says the break is still reported, and the
    breaks the summary says it revealed are listed."""
    brk = graph_break(1, file="m.py", line=3)
    judgement = Judgement(
        False,
        "the break is still reported in train",
        "removes 2 breaks; reveals 4 that an eager frame hid; graphs 5 → 4; outputs equal",
        Counts(6, 5, 1),
        Counts(8, 4, 0),
        revealed=("aaaa", "bbbb"),
    )
    work = batch.Work(Planned(brk, ("train",), (Candidate(brk, LoggerGuard, ()),)), ("train",))
    result = batch.advance(work, judgement, together=False)
    assert result is not None and result.status is FixStatus.DROPPED
    assert result.reason == "the break is still reported in train"
    assert result.summary.startswith("not kept (the break is still reported in train); the patched run: removes 2")
    assert result.revealed == ("aaaa", "bbbb")


def test_an_entrypoint_that_is_not_reproducible_is_said_once_and_no_other_variant_is_tried():
    """Two unpatched runs differ: the patched run's own difference says nothing more, and every
    other variant would be judged by the same runs, so the fix is dropped at the first, once."""
    from types import SimpleNamespace

    from gbbot.fix.trials import Trials
    from gbbot.recipes.print_call import PrintGuard, PrintHop

    brk = graph_break(1, file="m.py", line=3)
    differs = "the result of net changed: Tensor-likes are not close! Greatest absolute difference: 322.0"
    judged = Judgement(False, f"{differs.replace('322', '254')}", "graphs 2 → 1", Counts(1, 2, 0), Counts(0, 1, 0))
    trial = batch.Trial((), ((brk, ("net",)),), ("net",))
    said = Trials._with_unstable(SimpleNamespace(_unstable={"net": differs}), trial, judged)
    assert said.unjudgeable and said.reason.count("the result of net changed") == 1
    assert said.reason.startswith(
        f"net itself is not reproducible: a second run without any patch differs from the first ({differs})"
    )
    candidates = (Candidate(brk, PrintGuard, ()), Candidate(brk, PrintHop, ()))
    work = batch.Work(Planned(brk, ("net",), candidates), ("net",))
    result = batch.advance(work, said, together=False)
    assert result is not None and result.status is FixStatus.DROPPED
    assert (result.variant, result.tried, result.reason) == (PrintGuard.variant, (), said.reason)


def test_the_nested_lever_is_kept_only_where_it_cuts_the_graphs_and_the_break_keeps_its_own_account():
    from gbbot.fix.pipeline import _levered
    from gbbot.fix.trials import Lens, judge_trial
    from gbbot.recipes.compile_site import NestedBreaks

    brk = graph_break(1, file="m.py", line=3, frames=(FrameRef("m.py", 1, "forward"),), function="clip")
    work = batch.Work(Planned(brk, ("fwd",), (Candidate(brk, NestedBreaks, ()),)), ("fwd",))
    trial = work.trial()
    assert trial.goals == () and trial.cuts_graphs  # the break stays: no goal, the graphs must drop
    same_graphs = judge_trial(trial, {"fwd": seen(TARGET)}, {"fwd": seen(TARGET)}, same, Lens())
    assert not same_graphs.ok and "it did not cut the graphs (2 → 2" in same_graphs.reason
    fewer = judge_trial(trial, {"fwd": seen(TARGET)}, {"fwd": seen(TARGET, graphs=1)}, same, Lens())
    assert fewer.ok and fewer.summary.startswith("the break stays, resumed in its function; breaks met 1 → 1; graphs")
    options = (Advice("use torch.where"),)
    advised = FixResult(brk.fingerprint, FixStatus.ADVICE, "m.py", 3, reason="no patch for it", advice=options)
    (not_kept,) = _levered([advised], [batch.advance(work, same_graphs, together=False)])
    assert not_kept.status is FixStatus.ADVICE and not_kept.advice == options
    assert not_kept.reason.startswith("no patch for it; nested_graph_breaks: ")
    assert not_kept.reason.endswith("(tried, not kept)")
    (kept,) = _levered([advised], [batch.advance(work, fewer, together=False)])
    assert (kept.status, kept.recipe, kept.reason, kept.advice) == (
        FixStatus.VERIFIED,
        "nested",
        "no patch for it",
        options,
    )


def test_a_lever_whose_graphs_the_codes_own_compiler_does_not_cut_is_not_borne_out():
    """Inductor failing on a nested frame adds a break there: fewer graphs in fast mode say nothing."""
    from gbbot.fix.trials import _not_cut

    assert _not_cut("fwd", seen(TARGET, graphs=3), seen(TARGET, graphs=2)) is None
    assert _not_cut("fwd", seen(TARGET, graphs=3), seen(TARGET, graphs=3)) == (
        "in fwd, graphs 3 → 3 with the compiler the code names"
    )
    assert "no unpatched faithful run" in _not_cut("fwd", None, seen(TARGET))
