"""The PR comment, exactly, for the pull requests a reviewer meets: one that adds a break, fixes
one, hides one, changes nothing, changes only recompilations, and one whose entrypoint started
failing. The golden files in tests/golden/comment/ are what a reviewer of gbbot reads in the diff of
any change that alters them; `GBBOT_UPDATE_GOLDEN=1` rewrites them.

Each case also checks what a reader must be able to find in the first screenful: the verdict with
the change first, and where each new break is, linked to its line at the head commit."""

from __future__ import annotations

import os
import re
from dataclasses import replace

import pytest

from gbbot.analysis import break_diff
from gbbot.analysis.policy import Policy
from gbbot.core.model import (
    Category,
    Change,
    ChangeState,
    CompileError,
    Diff,
    EntrypointDiff,
    Frame,
    FrameRef,
    Status,
)
from gbbot.publish import checkrun, comment
from gbbot.publish.comment import CommentMode
from gbbot.publish.content import Texts, fitted
from gbbot.render import annotations
from gbbot.render.markdown import Options, SourceLinks
from tests.builders import (
    BASE_SHA,
    DTYPE,
    HEAD_SHA,
    INFO,
    entrypoint,
    graph_break,
    recompile_reason,
    recompiled_frame,
    recompiled_report,
    report,
    report_of,
    traced_break,
)
from tests.conftest import GOLDEN

WEB = "https://github.com/octo-org/octo-repo"
LINKS = SourceLinks(WEB, HEAD_SHA)
CONTENT = Options(pointer="📄 The full report is the `gbbot-report` artifact of this workflow run.", links=LINKS)
FIRST_SCREEN = 15  # lines of markdown

# The breaks of a small model: a print in the block's forward, reached one call deeper than the
# compiled function (Dynamo inlined Block.forward into Net.forward); an .item() beside it; a
# graph_break() in a loop of `smooth`, which Dynamo inlined into Net.forward: the frame that runs
# eagerly is the caller's.
PRINTED = traced_break(
    1,
    file="pkg/blocks.py",
    line=21,
    function="Block.forward",
    code='print("block", x.shape)',
    hints=(
        "Avoid calling builtin `print` with argument types ['str']. Consider using an equivalent alternative.",
        "Please report an issue to PyTorch.",
    ),
    user_stack=(
        Frame("train.py", 30, "<module>", "main()"),
        Frame("train.py", 22, "main", "loss = model(x).sum()"),
        Frame("pkg/model.py", 14, "Net.forward", "x = self.block(x)"),
        Frame("pkg/blocks.py", 21, "Block.forward", 'print("block", x.shape)'),
    ),
)
ITEM = traced_break(
    2,
    gb_id="GB0124",
    gb_type="Unsupported Tensor.item() call with capture_scalar_outputs=False",
    file="pkg/model.py",
    line=17,
    function="Net.forward",
    code="scale = self.scale.item()",
    explanation="Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.",
    hints=("Set `torch._dynamo.config.capture_scalar_outputs = True`.",),
    doc_url="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html",
    fix="item",
    user_stack=(),
)
LOOP = traced_break(
    3,
    gb_id="GB0025",
    gb_type="Call to `torch._dynamo.graph_break()`",
    file="pkg/model.py",
    line=40,
    function="smooth",
    code="torch._dynamo.graph_break()",
    explanation="User-inserted graph break. Message: None",
    hints=("Remove the `torch._dynamo.graph_break()` call.",),
    doc_url="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0025.html",
    frame_skipped=True,
    in_loop=True,
    makes_eager=(FrameRef("pkg/model.py", 12, "forward"),),
    fix="graph_break",
    consequences=("graph break in loop",),
    user_stack=(),
)
# What the loop hides on the head: the base traced a deepcopy in the same frame.
COPIED = traced_break(
    4,
    gb_id="GB4198",
    gb_type="Attempted to copy.deepcopy a tensor",
    file="pkg/model.py",
    line=42,
    function="smooth",
    code="kept = copy.deepcopy(x)",
    fix="deepcopy",
    user_stack=(),
)
FAILED_TRACEBACK = """Traceback (most recent call last):
  File "bench.py", line 12, in <module>
    run(model)
  File "torch/_dynamo/eval_frame.py", line 841, in compile_wrapper
    raise e.with_traceback(None) from e.__cause__
torch._dynamo.exc.Unsupported: Data-dependent branching"""


def adds_one():
    return report([PRINTED, ITEM], new=[PRINTED])


def fixes_one():
    return report([ITEM], new=[], fixed=[PRINTED])


def hides_one():
    head = entrypoint("train-step", [ITEM, LOOP], frames_skipped=1)
    changes = (
        Change(LOOP, ChangeState.NEW, ("train-step",)),
        Change(ITEM, ChangeState.PERSISTING, ("train-step",)),
        Change(COPIED, ChangeState.HIDDEN, ("train-step",), hidden_by=LOOP),
    )
    diff = Diff(
        base_ref="main",
        base_sha=BASE_SHA,
        changes=changes,
        entrypoints=(EntrypointDiff("train-step", graph_delta=-1),),
        compared=changes,
    )
    return report_of(head, commit=HEAD_SHA, diff=diff)


def no_change():
    return report([PRINTED, ITEM], new=[])


def only_recompiles():
    grad = recompiled_frame(
        "evaluate",
        52,
        2,
        (
            recompile_reason(
                "grad_mode",
                count=1,
                guard="GLOBAL_STATE changed: grad_mode ",
                cause="The function runs both with gradients enabled and under torch.no_grad().",
                advice="Compile the evaluation path as its own function.",
                line=None,
                code="",
            ),
        ),
        file="pkg/train_loop.py",
    )
    made = recompiled_report([ITEM], recompiles=(INFO, DTYPE, grad), persisting=(DTYPE,))
    diff = replace(made.diff, changes=(Change(ITEM, ChangeState.PERSISTING),), entrypoints=())
    return replace(made, commit=HEAD_SHA, diff=diff)


def started_failing():
    bench = entrypoint("bench", status=Status.FAILED, exit_code=1, graph_count=0, error=FAILED_TRACEBACK)
    both = report_of(entrypoint("train-step", [ITEM], frames_skipped=0), bench, commit=HEAD_SHA)
    changes = (Change(ITEM, ChangeState.PERSISTING, ("train-step",)),)
    diff = Diff(
        base_ref="main",
        base_sha=BASE_SHA,
        changes=changes,
        entrypoints=(EntrypointDiff("train-step", graph_delta=0), EntrypointDiff("bench", graph_delta=-3)),
        compared=changes,
    )
    return replace(both, diff=diff)


# torch 2.13's stderr for a shape mismatch `torch.compile` meets in the user's matmul (a compile
# error: it fails in eager too), as a report keeps its end: cut from the front, mid-line.
COMPILE_ERROR_TAIL = (GOLDEN.parent / "fixtures" / "compile_error.stderr.txt").read_text(encoding="utf-8")[-3000:]
BROKEN_ERROR = CompileError(
    gb_type="RuntimeError when making fake tensor call",
    gb_id="GB4315",
    category=Category.USER_ERROR,
    file="scripts/broken.py",
    line=4,
    function="project",
    code="return x @ w",
    explanation="Dynamo failed to run FX node with fake tensors: call_function <built-in function matmul>"
    "(*(FakeTensor(..., size=(2, 3)), FakeTensor(..., size=(4, 5))), **{}): got RuntimeError('a and b must have"
    " same reduction dim, but got [2, 3] X [4, 5].')",
)


def shares_a_failure():
    """The PR adds a break, fixes one and reveals one; `broken` fails with the same compile error
    as on the base."""
    train = entrypoint("train-step", [LOOP, ITEM, PRINTED], frames_skipped=1)
    broken = entrypoint(
        "broken", status=Status.FAILED, exit_code=1, graph_count=0, error=COMPILE_ERROR_TAIL, compile_error=BROKEN_ERROR
    )
    names = ("train-step",)
    changes = (
        Change(LOOP, ChangeState.NEW, names),
        Change(COPIED, ChangeState.FIXED, names),
        Change(ITEM, ChangeState.PERSISTING, names),
        Change(PRINTED, ChangeState.REVEALED, names),
    )
    diff = Diff(
        base_ref="main",
        base_sha=BASE_SHA,
        changes=changes,
        compared=changes,
        entrypoints=(
            EntrypointDiff("train-step", graph_delta=0),
            EntrypointDiff(
                "broken",
                graph_delta=0,
                still_failing="`broken` is still failing (same error as the base): GB4315 at scripts/broken.py:4",
            ),
        ),
    )
    return report_of(train, broken, commit=HEAD_SHA, diff=diff)


def loses_a_baseline():
    """`bench` ran on the base before and runs on the head with a break of its own, but the base
    timed out on it: nothing of it could be compared, so its break counts as new."""
    head = report_of(entrypoint("train-step", [ITEM]), entrypoint("bench", [PRINTED]), commit=HEAD_SHA)
    timed_out = entrypoint("bench", status=Status.TIMEOUT, exit_code=None, graph_count=0, error="timed out after 600s")
    base = report_of(entrypoint("train-step", [ITEM]), timed_out, commit=BASE_SHA)
    return break_diff.with_diff(head, break_diff.diff(head, base, break_diff.Comparison("main", BASE_SHA)))


FIVE_OLD = [graph_break(n) for n in range(5)]


def nothing_new_on_five_old_breaks():
    return report(FIVE_OLD, new=[])


CASES = {
    "adds_one": adds_one,
    "shares_a_failure": shares_a_failure,
    "nothing_new_on_five_old_breaks": nothing_new_on_five_old_breaks,
    "fixes_one": fixes_one,
    "hides_one": hides_one,
    "no_change": no_change,
    "only_recompiles": only_recompiles,
    "started_failing": started_failing,
    "loses_a_baseline": loses_a_baseline,
}


def shown(made, gb_fix: bool = True) -> str:
    """The comment's text as posted (without the marker line the body starts with)."""
    body, _ = comment.body(Texts(made), replace(CONTENT, gb_fix=gb_fix), "", None)
    return body.split("\n", 1)[1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_comment_is_the_golden_file(name: str) -> None:
    text = shown(CASES[name]())
    golden = GOLDEN / "comment" / f"{name}.md"
    if os.environ.get("GBBOT_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")


def first_screen(text: str) -> str:
    return "\n".join(text.splitlines()[:FIRST_SCREEN])


def test_a_new_break_is_named_in_the_first_screen_with_a_link_to_its_line_at_the_head() -> None:
    top = first_screen(shown(adds_one()))
    assert top.splitlines()[2] == "This PR adds **1** graph break."
    link = f"[`pkg/blocks.py:21`]({WEB}/blob/{HEAD_SHA}/pkg/blocks.py#L21)"
    assert link in top  # the callee's line, where the print is, not the compiled caller's
    assert "comment `/gb-fix` to push the fix" in top


def test_a_fix_is_named_in_the_first_screen_linked_at_the_base() -> None:
    top = first_screen(shown(fixes_one()))
    assert "This PR fixes **1** graph break." in top
    assert f"[`pkg/blocks.py:21`]({WEB}/blob/{BASE_SHA}/pkg/blocks.py#L21)" in top  # gone from the head


def test_a_hidden_break_is_said_hidden_and_not_fixed() -> None:
    text = shown(hides_one())
    assert (
        text.splitlines()[2]
        == "This PR adds **1** graph break and hides **1** (not fixed: its frame now runs eagerly)."
    )
    assert "fixes" not in text.splitlines()[2]
    assert "🙈 1 graph break hidden, not fixed" in first_screen(text)
    assert "makes its frame `forward` run eagerly" in text


def test_the_card_names_the_caller_that_runs_eagerly_not_the_callee() -> None:
    text = shown(hides_one())
    caller = f"[`forward` (model.py:12)]({WEB}/blob/{HEAD_SHA}/pkg/model.py#L12)"
    assert f"**makes {caller} run eagerly**" in first_screen(text)
    assert (
        f"**This break makes {caller} run eagerly**: Dynamo runs that frame uncompiled (it inlined `smooth`)." in text
    )


def test_torch_s_generic_hints_are_left_out() -> None:
    text = shown(adds_one()) + shown(hides_one())
    assert "Please report an issue to PyTorch" not in text
    assert "Message: None" not in text
    assert "fix recipe" not in text


def test_without_the_gb_fix_workflow_the_advice_is_what_to_do() -> None:
    top = first_screen(shown(adds_one(), gb_fix=False))
    assert "/gb-fix" not in top
    assert "guard it with `if not torch.compiler.is_compiling():`" in top


def test_no_change_posts_nothing_in_changes_mode() -> None:
    made = no_change()
    text = shown(made)
    assert text.splitlines()[2] == "This PR makes no change in graph breaks or recompilations."
    _, marker = comment.body(Texts(made), CONTENT, "", None)
    assert not comment.has_news(made)
    assert comment.decide(CommentMode.CHANGES, marker, None, comment.has_news(made)) is comment.Action.LEAVE


def test_only_recompilation_changes_are_news_and_said_so() -> None:
    made = only_recompiles()
    text = shown(made)
    assert text.splitlines()[2] == "This PR makes no change in graph breaks; it adds **1** recompilation problem."
    assert comment.has_news(made)
    assert "### New recompilations" in text


def test_an_entrypoint_that_started_failing_is_said_before_anything_else() -> None:
    text = shown(started_failing())
    lines = text.splitlines()
    assert lines[2] == "⚠️ `bench` failed (exit 1): its breaks are unknown."
    assert lines[4] == "This PR makes no other change in graph breaks or recompilations."
    assert comment.has_news(started_failing())


def test_an_entrypoint_that_lost_its_baseline_is_said_above_the_headline() -> None:
    made = loses_a_baseline()
    lines = shown(made).splitlines()
    assert lines[2] == (
        "⚠️ `bench` lost its baseline: it timed out there; the comparison could not be made, "
        "so its graph breaks count as new."
    )
    assert lines[4] == "This PR adds **1** graph break."  # never "no change" above a listed break
    assert comment.has_news(made)
    assert "no baseline for" not in shown(made)  # said once, above the headline


def test_an_entrypoint_that_fails_on_both_sides_is_warned_about_once() -> None:
    made = loses_a_baseline()
    failed = entrypoint("bench", status=Status.TIMEOUT, exit_code=None, graph_count=0, error="timed out after 600s")
    made = replace(made, entrypoints=(made.entrypoints[0], failed))
    text = shown(made)
    assert text.count("⚠️") == 1 and "lost its baseline" not in text
    assert text.splitlines()[2].startswith("⚠️ `bench` timed out")
    assert "it timed out there" in text  # why there is no baseline stays said, as a note


def test_an_entrypoint_new_in_the_pr_has_no_warning_its_breaks_are_new() -> None:
    head = report_of(entrypoint("bench", [PRINTED]), commit=HEAD_SHA)
    made = break_diff.with_diff(head, break_diff.diff(head, report_of(), break_diff.Comparison("main", BASE_SHA)))
    text = shown(made)
    assert "⚠️" not in text and "lost its baseline" not in text
    assert text.splitlines()[2].startswith("This PR adds **1** graph break")


def test_a_failure_the_base_shares_is_one_line_under_the_headline_without_dynamo_s_stack() -> None:
    text = shown(shares_a_failure())
    lines = text.splitlines()
    assert lines[2].startswith("This PR adds **1** graph break, fixes **1** and reveals **1**")
    assert lines[4] == (
        "`broken` still fails with the same compile error as the base: GB4315 at `scripts/broken.py:4`."
    )
    assert "⚠️" not in text and "torch/_dynamo/" not in text and "FakeTensor" not in text.split("<details>")[0]
    fold = text.split("<summary>broken: failed (exit 1)", 1)[1].split("</details>", 1)[0]
    assert 'scripts/broken.py", line 4, in project' in fold and "return x @ w" in fold
    assert fold.rstrip().endswith("torch._dynamo.exc.TorchRuntimeError: RuntimeError when making fake tensor call\n```")
    policy = Policy.of("new")
    assert [a["path"] for a in checkrun.annotations(shares_a_failure(), policy)] == ["pkg/model.py", "pkg/blocks.py"]


def test_nothing_new_on_five_old_breaks_is_said_in_one_line_and_annotates_nothing() -> None:
    made = nothing_new_on_five_old_breaks()
    text = shown(made)
    assert text.splitlines()[2] == "This PR makes no change in graph breaks or recompilations."
    assert "5 graph breaks persisting" in text and "### New graph breaks" not in text
    assert checkrun.annotations(made, Policy.of("new")) == [] and annotations.render(made, Policy.of("new")) == ""
    assert len(checkrun.annotations(made, Policy.of("new"), every=True)) == 5  # annotate: all


def test_the_comment_is_shorter_than_the_full_report_and_keeps_the_warning_notes() -> None:
    reused = "The base was not run again for 1 of 2 entrypoints (`forward`): they read no file this change touches."
    mismatch = "⚠️ The baseline (base.json) does not match this run: its torch is 2.12."
    made = adds_one()
    made = replace(made, diff=replace(made.diff, notes=(reused, mismatch)))
    posted = shown(made)
    summary = fitted(Texts(made), CONTENT, 1_000_000)
    assert "was not run again" not in posted and "was not run again" in summary
    assert "does not match this run" in posted
    assert len(posted) < len(summary)


def test_links_do_not_make_every_commit_a_new_comment() -> None:
    made = adds_one()
    moved = replace(made, commit="1" * 40)
    a = comment.content_hash(Texts(made), CONTENT)
    b = comment.content_hash(Texts(moved), replace(CONTENT, links=SourceLinks(WEB, "1" * 40)))
    assert a == b


def test_no_link_for_an_unsafe_path() -> None:
    bad = replace(PRINTED, file="../../etc/passwd")
    text = shown(report([bad], new=[bad]))
    assert "../../etc/passwd" in text
    assert not re.search(r"\]\([^)]*etc/passwd", text)


def test_a_verified_fix_is_what_to_do_and_its_diff_is_folded_under_the_break() -> None:
    from gbbot.core.fixes import FixResult, FixStatus

    patch = '--- a/pkg/blocks.py\n+++ b/pkg/blocks.py\n@@ -21 +21 @@\n-    print("block", x.shape)\n+    pass\n'
    fixed = FixResult(
        PRINTED.fingerprint,
        FixStatus.VERIFIED,
        "pkg/blocks.py",
        21,
        recipe="print",
        summary="removes 1 break; graphs 3 → 2; outputs equal",
        description="Drops the print.",
        diff=patch,
    )
    made = replace(adds_one(), fixes=(fixed,))
    text = shown(made)
    top = first_screen(text)
    assert "✅ verified fix in the details — comment `/gb-fix` to push it |" in top
    details = text[text.index("<details><summary>Details: GB0059") :]
    assert "```diff\n" + patch.rstrip() + "\n```" in details[: details.index("</details>")]


def test_a_trace_caveat_every_entrypoint_carries_is_said_once_in_words() -> None:
    problem = "{}:{}: compilation_metrics record is damaged or truncated (checksum mismatch)"
    entries = [
        entrypoint(
            name, [ITEM], trace_problems=(problem.format(f"{name}.log", 12 + i), problem.format(f"{name}.log", 40))
        )
        for i, name in enumerate(("a", "b", "c"))
    ]
    made = report_of(*entries, commit=HEAD_SHA)
    text = shown(made)
    caveat = (
        "Trace caveat in a, b and c: compilation\\_metrics record is damaged or truncated (checksum mismatch) (6 times)"
    )
    assert text.count("Trace caveat") == 1 and caveat in text
    assert "trace problem" not in text and ".log:" not in text
    assert "Trace caveat" not in shown(adds_one())  # nothing at all when the trace read cleanly
