"""Every view of a diff reads its typed changes (gbbot/core/model.py: each break with its state,
entrypoints and what hides it), never the report JSON's fingerprint lists joined back to breaks:
with those lists made unreadable, every view of a report holding each kind of change reads as it
did, and no module outside the diff and the JSON reads an entrypoint's lists."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from gbbot.action import outputs
from gbbot.analysis.policy import Policy
from gbbot.core import counts
from gbbot.core.model import BreakChange, ChangeState, Diff, EntrypointDiff, Report
from gbbot.publish import checkrun, comment
from gbbot.publish.content import Texts
from gbbot.render import annotations, markdown, sarif, terminal
from gbbot.render.markdown import Options
from tests.builders import BASE_SHA, HEAD_SHA, entrypoint, report_of, traced_break

GBBOT = Path(__file__).resolve().parents[3] / "gbbot"
V1_LISTS = ("new", "fixed", "persisting", "hidden", "revealed", "hidden_by")


def every_change() -> Report:
    """One entrypoint: a new break in a loop that hides a base break, a persisting one, one
    revealed; and one the change fixed."""
    added = traced_break(1, frame_skipped=True, in_loop=True, gb_id="GB0025", code="torch._dynamo.graph_break()")
    kept, shown = traced_break(2), traced_break(3, code='print("shown")')
    fixed, hidden = traced_break(4, code='print("gone")'), traced_break(5, code='print("hidden")')
    names = ("train",)
    diff = Diff(
        base_ref="main",
        base_sha=BASE_SHA,
        changes=(
            BreakChange(added, ChangeState.NEW, names),
            BreakChange(fixed, ChangeState.FIXED, names),
            BreakChange(kept, ChangeState.PERSISTING, names),
            BreakChange(hidden, ChangeState.HIDDEN, names, hidden_by=added),
            BreakChange(shown, ChangeState.REVEALED, names),
        ),
        entrypoints=(
            EntrypointDiff(
                "train",
                new=(added.fingerprint,),
                fixed=(fixed.fingerprint,),
                persisting=(kept.fingerprint,),
                hidden=(hidden.fingerprint,),
                revealed=(shown.fingerprint,),
                graph_delta=1,
            ),
        ),
    )
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


def test_no_view_reads_the_fingerprint_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    made = every_change()
    before = views(made)
    assert "hides **1**" in before["markdown"] and "reveals **1**" in before["markdown"]

    def unreadable(self: Diff, *_: object) -> None:
        raise AssertionError("a view joined the diff's fingerprint lists back to breaks")

    for name in V1_LISTS:
        monkeypatch.setattr(Diff, name, property(unreadable))
    monkeypatch.setattr(Diff, "fingerprints", unreadable)
    assert views(made) == before
    assert views(replace(made, diff=None))  # and without a diff at all


def test_only_the_diff_and_the_json_read_an_entrypoints_fingerprint_lists() -> None:
    """EntrypointDiff's lists are the per-entrypoint JSON; a view asks a change its entrypoints."""
    allowed = {"analysis/break_diff.py", "analysis/report.py"}
    pattern = re.compile(r"\b(e|entry|entries|side)\.(new|fixed|persisting|hidden|revealed)\b")
    readers = [
        str(path.relative_to(GBBOT))
        for path in GBBOT.rglob("*.py")
        if str(path.relative_to(GBBOT)) not in allowed and pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert readers == []
