"""A round's verified patches put in place: a group that fails together keeps the members that
hold together. The patches are the real recipes' on a real file; the runs are stand-ins that
say which patched texts fail together (test_fix_e2e.py runs torch)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gbbot.core.config import parse_config
from gbbot.core.fixes import Counts, FixResult, FixStatus
from gbbot.core.model import Category, EntrypointReport, Frame, GraphBreak, Origin, Report, Status, Tool
from gbbot.fix import plan
from gbbot.fix.apply import put_in_place
from gbbot.fix.batch import Scope, Trial
from gbbot.fix.pipeline import _left_out
from gbbot.fix.verify import Judgement
from gbbot.fix.workspace import repo_reader

STEPS = """\
import torch


def step(x):
    print("loss", x.sum())
    print("norm", x.norm())
    print("mean", x.mean())
    return x * 2
"""
CONFIG = "version: 1\nentrypoints:\n  - name: train\n    call: steps:step\n"


def brk(line: int, code: str) -> GraphBreak:
    return GraphBreak(
        fingerprint=f"{line:016x}",
        gb_id="GB0059",
        gb_type="Failed to trace builtin operator",
        category=Category.SUPPORTABLE,
        origin=Origin.USER,
        file="steps.py",
        line=line,
        function="step",
        code=code,
        explanation="",
        hints=(),
        doc_url=None,
        frame_skipped=False,
        in_loop=False,
        count=1,
        caused=(),
        user_stack=(Frame("steps.py", line, "step", code),),
        fix="print",
    )


BREAKS = [brk(5, 'print("loss", x.sum())'), brk(6, 'print("norm", x.norm())'), brk(7, 'print("mean", x.mean())')]


def chosen(root: Path, breaks: list[GraphBreak]):
    (root / "steps.py").write_text(STEPS)
    planned, _ = plan.plan([(b, ("train",)) for b in breaks], repo_reader(root), lambda _p: None)
    return [(p, p.candidates[0]) for p in planned]


def scope(breaks: list[GraphBreak]) -> Scope:
    entry = EntrypointReport("train", Status.OK, 0, 1.0, 4, len(breaks), 0, tuple(breaks))
    return Scope(Report(Tool(), None, "fast", None, (entry,)), parse_config(CONFIG))


def guarded(trial: Trial, word: str) -> bool:
    """Does the trial's text of steps.py guard the print of `word`?"""
    (patch,) = trial.patches
    return f'compiling():\n        print("{word}"' in patch.after


class Runs:
    """The scratch copy's runs: a trial fails when it guards both `loss` and `norm` (as two
    settings at one shared compile can fail together); every run is recorded."""

    def __init__(self) -> None:
        self.kept: list[list[Trial]] = []
        self.probed: list[Trial] = []
        self.standing: dict[str, object] = {}

    def judge(self, trial: Trial) -> Judgement:
        ok = not (guarded(trial, "loss") and guarded(trial, "norm"))
        counts = Counts(3, 4, 0)
        reason = "" if ok else "the result of train changed"
        return Judgement(ok, reason, "removes breaks" if ok else "", counts, Counts(0, 1, 0))

    def keep(self, trials, judged):
        self.kept.append(list(trials))
        verdicts = [self.judge(t) if j else None for t, j in zip(trials, judged, strict=True)]
        self.standing.update(
            (n, f"run {len(self.kept)}")
            for t, v in zip(trials, verdicts, strict=True)
            if v is None or v.ok
            for n in t.names
        )
        return verdicts, Report(Tool(), None, "fast", None, ())

    def probe(self, trials):
        self.probed += trials
        return [self.judge(t) for t in trials], Report(Tool(), None, "fast", None, ())


def test_a_group_that_fails_together_keeps_the_members_that_hold_together(tmp_path):
    runs = Runs()
    in_place = put_in_place(scope(BREAKS), chosen(tmp_path, BREAKS), runs.keep, lambda _m: None, runs.probe)
    loss, norm, mean = (b.fingerprint for b in BREAKS)
    assert in_place.kept == {loss, mean}
    assert set(in_place.dropped) == {norm}
    assert "the result of train changed" in in_place.dropped[norm]
    (patch,) = in_place.patches  # what stands in the scratch copy: the two that hold together
    assert 'compiling():\n        print("loss"' in patch.after and 'compiling():\n        print("mean"' in patch.after
    assert '    print("norm"' in patch.after.replace('compiling():\n        print("norm"', "")
    assert [len(t.goals) for t in runs.probed] == [2, 2]  # loss+norm fails, loss+mean holds
    assert [t.goals[0][0].line for t in runs.kept[-1]] == [5]  # verified together once more
    assert in_place.joint[-1].ok and runs.standing == {"train": "run 2"}
    assert any(n.startswith("not written: GB0059 at steps.py:6 (steps.py)") for n in in_place.notes)


def test_a_failing_pair_keeps_the_first_without_another_probe(tmp_path):
    runs = Runs()
    pair = BREAKS[:2]
    in_place = put_in_place(scope(pair), chosen(tmp_path, pair), runs.keep, lambda _m: None, runs.probe)
    assert in_place.kept == {pair[0].fingerprint} and set(in_place.dropped) == {pair[1].fingerprint}
    assert runs.probed == []  # the pair itself just failed; the first was verified alone
    (patch,) = in_place.patches
    assert 'print("loss"' in patch.after and 'compiling():\n        print("norm"' not in patch.after


def test_a_fix_left_out_of_its_group_reads_dropped_with_one_account(tmp_path):
    runs = Runs()
    pair = BREAKS[:2]
    in_place = put_in_place(scope(pair), chosen(tmp_path, pair), runs.keep, lambda _m: None, runs.probe)
    alone = FixResult(
        pair[1].fingerprint, FixStatus.VERIFIED, "steps.py", 6, "print", summary="removes 1 break", diff="x"
    )
    result = _left_out(alone, in_place.dropped)
    assert (result.status, result.diff) == (FixStatus.DROPPED, None)
    assert result.summary.startswith("not kept (verified alone, but not together with GB0059 at steps.py:5, ")
    assert result.summary.endswith("; alone: removes 1 break") and "the result of train changed" in result.reason
    first = replace(alone, fingerprint=pair[0].fingerprint)
    assert _left_out(first, in_place.dropped) is first
