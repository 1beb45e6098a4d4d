"""How a diff is made, decided once from the facts (gbbot/checks/plan.py): each case of where the
base's report comes from, which sides run, and what a head-first run leaves to the head."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gbbot.analysis import reads
from gbbot.analysis.report import new_report
from gbbot.checks import plan
from gbbot.core.model import EntrypointReport, Mode, Reads, Report, Status

NAMES = ("train", "serve", "export")
TOP = "/work/repo"


def report(*statuses: tuple[str, Status]) -> Report:
    entries = [EntrypointReport(name, status, 0, 1.0, 1, 0, 0, ()) for name, status in statuses]
    return new_report(entries, Mode.FAST, "2.13.0", "b" * 40, "cfg")


BASE = report(*((n, Status.OK) for n in NAMES))
FACTS = plan.Facts(
    entrypoints=NAMES,
    same_commit=False,
    known=None,
    records_reads=True,
    jobs=1,
    caching=False,
    allow_mismatch=False,
)


def known(origin: plan.KnownFrom, source: str | None = None) -> plan.Known:
    return plan.Known(BASE, origin, source or origin.value)


def test_the_head_being_the_merge_base_runs_the_head_once_and_looks_for_nothing_else():
    decided = plan.decide(replace(FACTS, same_commit=True, known=known(plan.KnownFrom.CACHE), caching=True))
    assert decided.same_commit and decided.base is plan.BaseRun.NONE
    assert decided.head == NAMES and decided.source == "run" and decided.known is None and not decided.keep


@pytest.mark.parametrize(
    ("origin", "allow", "unfit", "why"),
    [
        (plan.KnownFrom.FILE, False, plan.Unfit.REFUSE, "given (--baseline)"),
        (plan.KnownFrom.FILE, True, plan.Unfit.LABEL, "given (--baseline)"),
        (plan.KnownFrom.RECORD, False, plan.Unfit.RUN, "recorded before"),
        (plan.KnownFrom.CACHE, True, plan.Unfit.RUN, "in the cache"),  # --allow-mismatch is for files
    ],
)
def test_a_known_base_is_not_run_and_what_a_misfit_leads_to_depends_on_where_it_came_from(origin, allow, unfit, why):
    decided = plan.decide(replace(FACTS, known=known(origin, "audit" if origin is plan.KnownFrom.RECORD else None),
                                  allow_mismatch=allow, caching=True))  # fmt: skip
    assert decided.base is plan.BaseRun.NONE and decided.head == NAMES
    assert decided.unfit is unfit and why in decided.why
    assert decided.source == ("audit" if origin is plan.KnownFrom.RECORD else origin.value)
    assert not decided.keep  # a known base is never stored again


@pytest.mark.parametrize(
    ("records", "jobs", "order"),
    [
        (True, 4, plan.BaseRun.AFTER_HEAD),  # the head's reads narrow the base: worth waiting for
        (False, 1, plan.BaseRun.AFTER_HEAD),  # one job: one side after the other anyway
        (False, 4, plan.BaseRun.TOGETHER),  # nothing recorded, jobs to spare: both at once
    ],
)
def test_an_unknown_base_runs_after_the_head_or_beside_it(records, jobs, order):
    decided = plan.decide(replace(FACTS, records_reads=records, jobs=jobs, caching=True))
    assert decided.base is order and decided.source == "run" and decided.keep
    assert decided.head == NAMES and decided.known is None


def test_a_run_base_is_kept_only_where_the_cache_can_key_it():
    assert not plan.decide(FACTS).keep


def at(path: str) -> str:
    return f"{TOP}/{path}"


CHANGES = reads.Changes.of(["train.py", "serve.py", "export.py", "lib.py"], [("M", "lib.py")], [])


def test_the_base_reruns_only_what_the_change_reaches_and_what_may_not_end_the_same_again():
    head = report(("train", Status.OK), ("serve", Status.OK), ("export", Status.TIMEOUT))
    seen = {
        "train": Reads(frozenset({at("train.py"), at("lib.py")}), frozenset()),
        "serve": Reads(frozenset({at("serve.py")}), frozenset()),
        "export": Reads(frozenset({at("export.py")}), frozenset()),
    }
    assert plan.recorded_any(head, seen)
    assert plan.base_reruns(head, seen, CHANGES, (TOP,)) == {
        "export": "it ended timeout",
        "train": "it read `lib.py`, which the change touches",
    }


def test_without_any_record_every_base_runs_and_no_change_is_asked_for():
    head = report(("train", Status.OK), ("serve", Status.FAILED))
    seen = {"train": None, "serve": Reads(frozenset({at("serve.py")}), frozenset())}  # a failure's reads do not count
    assert not plan.recorded_any(head, seen)
    assert plan.base_reruns(head, seen, None, (TOP,)) == {"serve": "it ended failed", "train": reads.NOT_RECORDED}
