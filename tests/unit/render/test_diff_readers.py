"""A diff has one shape (gbbot/core/model.py's `Change`: a break, its state, its entrypoints and
what hides it; a recompilation problem as its fingerprint and state): no value holds a list per
state, so every view, the audit and the fix rounds read the changes; the report JSON's
fingerprint lists (`new`, `fixed`, …, per entrypoint too) are made and read in
gbbot/analysis/report.py alone."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from gbbot.action import outputs
from gbbot.analysis import break_diff
from gbbot.analysis.policy import Policy
from gbbot.audit.changes import Changes
from gbbot.core import counts
from gbbot.core.model import Change, ChangeState, Diff, EntrypointDiff, Report
from gbbot.publish import checkrun, comment
from gbbot.publish.content import Texts
from gbbot.render import annotations, markdown, sarif, terminal
from gbbot.render.markdown import Options
from tests.builders import BASE_SHA, HEAD_SHA, entrypoint, listed, report_of, traced_break

GBBOT = Path(__file__).resolve().parents[3] / "gbbot"
STATES = {s.value for s in ChangeState}


def every_change() -> Report:
    """One entrypoint: a new break in a loop that hides a base break, a persisting one, one
    revealed; and one the change fixed."""
    added = traced_break(1, frame_skipped=True, in_loop=True, gb_id="GB0025", code="torch._dynamo.graph_break()")
    kept, shown = traced_break(2), traced_break(3, code='print("shown")')
    fixed, hidden = traced_break(4, code='print("gone")'), traced_break(5, code='print("hidden")')
    names = ("train",)
    changes = (
        Change(added, ChangeState.NEW, names),
        Change(fixed, ChangeState.FIXED, names),
        Change(kept, ChangeState.PERSISTING, names),
        Change(hidden, ChangeState.HIDDEN, names, hidden_by=added),
        Change(shown, ChangeState.REVEALED, names),
    )
    diff = Diff("main", BASE_SHA, changes, (EntrypointDiff("train", graph_delta=1),), compared=changes)
    return report_of(entrypoint("train", [added, kept, shown]), commit=HEAD_SHA, diff=diff)


def views(report: Report) -> dict[str, object]:
    policy = Policy.of("new")
    return {
        "markdown": markdown.render(report),
        "comment": comment.body(Texts(report), Options(), "", None),
        "news": comment.has_news(report),
        "check run": (checkrun.title(report), checkrun.annotations(report, policy)),
        "sarif": sarif.render(report, policy),
        "annotations": annotations.render(report, policy),
        "terminal": terminal.render(report),
        "outputs": outputs.counts(report),
        "policy": policy.verdict(report),
        "counts": counts.counts(report),
    }


def test_every_view_reads_each_kind_of_change() -> None:
    made = every_change()
    said = views(made)
    assert "hides **1**" in said["markdown"] and "reveals **1**" in said["markdown"]
    assert said["check run"][0] == "1 new graph break, 1 fixed, 1 hidden, 1 revealed"
    assert listed(made.diff, "train").hidden == listed(made.diff).hidden == (made.diff.changes[3].fingerprint,)
    assert views(dataclasses.replace(made, diff=None))  # and without a diff at all


def test_no_value_holds_a_list_per_state() -> None:
    for shape in (Diff, EntrypointDiff, Change, Changes):
        fields = {f.name for f in dataclasses.fields(shape)} | {n for n in vars(shape) if not n.startswith("_")}
        assert not fields & STATES, shape
    assert not {"Settled", "RecompileDiff", "BreakChange"} & set(vars(break_diff)), "an old shape is back"


def test_only_the_json_reads_or_writes_fingerprint_lists() -> None:
    """Outside gbbot/analysis/report.py no module reads a state's list off a value (`diff.new`,
    `e.fixed`, `compared.persisting`, `settled(…).hidden`): what a change did is its `state`."""
    allowed = {"analysis/report.py"}
    states = "|".join(STATES)
    pattern = re.compile(rf"\b(diff|d|e|entry|entries|side|compared|changes|found|\))\.({states})\b")
    readers = [
        f"{path.relative_to(GBBOT)}: {m.group(0)}"
        for path in GBBOT.rglob("*.py")
        if str(path.relative_to(GBBOT)) not in allowed
        for m in pattern.finditer(path.read_text(encoding="utf-8"))
    ]
    assert readers == []
