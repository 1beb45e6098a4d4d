"""How a diff is made, decided once from the facts (gbbot/checks/plan.py): each case of where the
base's report comes from, which sides run (the base always first), and what the base's record of
its reads leaves to the base."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gbbot.analysis import reads
from gbbot.analysis.report import new_report
from gbbot.checks import plan
from gbbot.checks.baseline import BaseReads
from gbbot.core.config import parse_config
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
    caching=False,
    allow_mismatch=False,
)


def known(origin: plan.KnownFrom, source: str | None = None) -> plan.Known:
    return plan.Known(BASE, origin, source or origin.value)


def test_the_head_being_the_merge_base_runs_the_head_once_and_keeps_it_as_the_next_prs_base():
    decided = plan.decide(replace(FACTS, same_commit=True, known=known(plan.KnownFrom.CACHE), caching=True))
    assert decided.same_commit and decided.base is plan.BaseRun.NONE
    assert decided.head == NAMES and decided.source == "run" and decided.known is None and decided.keep


@pytest.mark.parametrize(
    ("origin", "allow", "unfit", "why"),
    [
        (plan.KnownFrom.FILE, False, plan.Unfit.REFUSE, "given (--baseline)"),
        (plan.KnownFrom.FILE, True, plan.Unfit.LABEL, "given (--baseline)"),
        # never a run of the base after the head's code ran: no base, the head's breaks are new
        (plan.KnownFrom.RECORD, False, plan.Unfit.UNKNOWN, "recorded before"),
        (plan.KnownFrom.CACHE, True, plan.Unfit.UNKNOWN, "in the cache"),  # --allow-mismatch is for files
    ],
)
def test_a_known_base_is_not_run_and_what_a_misfit_leads_to_depends_on_where_it_came_from(origin, allow, unfit, why):
    decided = plan.decide(replace(FACTS, known=known(origin, "audit" if origin is plan.KnownFrom.RECORD else None),
                                  allow_mismatch=allow, caching=True))  # fmt: skip
    assert decided.base is plan.BaseRun.NONE and decided.head == NAMES
    assert decided.unfit is unfit and why in decided.why
    assert decided.source == ("audit" if origin is plan.KnownFrom.RECORD else origin.value)
    assert not decided.keep  # a known base is never stored again


@pytest.mark.parametrize("records", [True, False])
def test_an_unknown_base_runs_first_whatever_the_runner(records):
    decided = plan.decide(replace(FACTS, records_reads=records, caching=True))
    assert decided.base is plan.BaseRun.FIRST and decided.source == "run" and decided.keep
    assert decided.head == NAMES and decided.known is None and "before any code of the change" in decided.why


def test_a_run_base_is_kept_only_where_the_cache_can_key_it():
    assert not plan.decide(FACTS).keep


# --- what a known base spares the head ---------------------------------------------------------


def rooted(*files: str, **kwargs) -> Reads:
    return Reads(frozenset(f"/{f}" for f in files), frozenset(), **kwargs)


# train and serve read their own module and the shared helper; export reads only its own
KEPT = BaseReads("3.11.9", {
    "train": rooted("train.py", "models/shared.py"),
    "serve": rooted("serve.py", "models/shared.py"),
    "export": rooted("export.py"),
})  # fmt: skip
FILES = ["train.py", "serve.py", "export.py", "models/shared.py", "README.md", "requirements.txt"]


def change(*name_status: tuple[str, str], dirty: bool = False, python: str = "3.11.9") -> plan.Change:
    installs = tuple(p for _, p in name_status if p == "requirements.txt")
    return plan.Change(reads.Changes.of(FILES, name_status, []), dirty, installs, python)


def with_cache(found: plan.Change, kept: BaseReads | None = KEPT, base: Report = BASE, **facts) -> plan.Plan:
    return plan.decide(replace(FACTS, known=plan.Known(base, plan.KnownFrom.CACHE, "cache", reads=kept),
                               change=found, **facts))  # fmt: skip


def test_a_docs_only_change_takes_every_result_from_the_base():
    decided = with_cache(change(("M", "README.md")))
    assert decided.head == () and set(decided.from_base) == set(NAMES) and decided.head_runs == {}
    assert decided.from_base["export"] == plan.TAKEN and decided.source == "cache"


def test_a_change_to_one_models_module_runs_that_one_only():
    decided = with_cache(change(("M", "export.py")))
    assert decided.head == ("export",) and set(decided.from_base) == {"train", "serve"}
    assert decided.head_runs == {"export": "it read `export.py`, which the change touches"}


def test_a_change_to_the_shared_helper_runs_everything_that_read_it():
    decided = with_cache(change(("M", "models/shared.py")))
    assert decided.head == ("train", "serve") and set(decided.from_base) == {"export"}


def test_a_file_the_pr_deletes_runs_what_read_it():
    decided = with_cache(change(("D", "serve.py")))
    assert decided.head == ("serve",) and "serve.py" in decided.head_runs["serve"]


@pytest.mark.parametrize(
    ("found", "facts", "reason"),
    [
        (change(("M", "README.md"), dirty=True), {}, "the tree has uncommitted changes"),
        (change(("M", "requirements.txt")), {}, "the change touches `requirements.txt`, which says what is installed"),
        (
            change(("M", "README.md"), python="3.12.1"),
            {},
            "the base ran under Python 3.11.9, the head runs Python 3.12.1",
        ),
        (change(("M", "README.md")), {"records_reads": False}, "runs here record no reads"),
    ],
)
def test_what_lies_outside_the_record_runs_everything_and_says_why(found, facts, reason):
    decided = with_cache(found, **facts)
    assert decided.head == NAMES and decided.from_base == {}
    assert set(decided.head_runs) == set(NAMES) and all(r.startswith(reason) for r in decided.head_runs.values())


def test_a_base_without_reads_runs_everything():
    decided = with_cache(change(("M", "README.md")), kept=None)
    assert (
        decided.head == NAMES and decided.head_runs["train"] == "the cached base kept no record of what its runs read"
    )


def test_a_mismatched_baseline_file_spares_nothing():
    found = plan.Known(BASE, plan.KnownFrom.FILE, "file", ("⚠️ The baseline does not match",), reads=KEPT)
    decided = plan.decide(replace(FACTS, known=found, change=change(("M", "README.md")), allow_mismatch=True))
    assert decided.head == NAMES and decided.head_runs["serve"] == "the baseline does not match this run"


def test_an_entrypoint_that_ended_badly_on_the_base_or_left_no_record_runs():
    base = report(("train", Status.TIMEOUT), ("serve", Status.OK), ("export", Status.OK))
    kept = BaseReads("3.11.9", {"train": KEPT.entrypoints["train"], "export": rooted("export.py", spawned="os.system")})
    decided = with_cache(change(("M", "README.md")), kept=kept, base=base)
    assert decided.head == NAMES
    assert decided.head_runs == {
        "train": "it ended timeout on the base",
        "serve": "what it read on the base was not recorded",
        "export": "it started another program (os.system), whose reads are not recorded",
    }


def test_a_change_of_what_setup_installs_runs_each_side_in_its_own_environment_and_takes_no_known_base():
    """A cached base ran with the base's packages as they were set up for that run; the bump's own
    base side is built from its files, so a known base is not taken, and the run is not kept."""
    own = replace(FACTS, known=known(plan.KnownFrom.CACHE), caching=True, own_environments=("requirements.txt",))
    decided = plan.decide(own)
    assert decided.base is plan.BaseRun.OWN_ENVIRONMENT and decided.known is None and not decided.keep
    assert decided.head == NAMES and decided.source == "run" and "`requirements.txt`" in decided.why


def test_a_base_that_ran_first_leaves_the_head_what_its_reads_prove_out_of_reach():
    facts = replace(FACTS, caching=True, change=change(("M", "export.py")))
    known_now = plan.Known(BASE, plan.KnownFrom.RUN, "run", reads=KEPT)
    after = plan.after_base(plan.decide(facts), known_now, facts)
    assert after.base is plan.BaseRun.FIRST and after.keep and after.known is known_now
    assert after.head == ("export",) and set(after.from_base) == {"train", "serve"}


def test_an_entrypoint_the_config_defines_otherwise_on_the_base_runs_on_the_head():
    """An edit to an entrypoint's definition (its env:, args, command…) is a change to it, though
    no file it read changed; so is any setting every run inherits."""
    base = parse_config(
        "version: 1\nentrypoints:\n" + "".join(f"  - {{name: {n}, run: python {n}.py}}\n" for n in NAMES)
    )
    head = parse_config(head_text := "version: 1\nentrypoints:\n  - {name: train, run: python train.py, env: {LOUD: '1'}}\n"
                        "  - {name: serve, run: python serve.py}\n  - {name: export, run: python export.py}\n")  # fmt: skip
    assert plan.redefined(base, head, NAMES) == {"train"}
    assert plan.redefined(None, head, NAMES) == set(NAMES)  # the base has no config: nothing is the base's
    assert plan.redefined(base, parse_config(head_text + "pass_env: [HF_HOME]\n"), NAMES) == set(NAMES)
    decided = with_cache(change(("M", "README.md")), redefined=frozenset({"train"}))
    assert decided.head == ("train",) and decided.head_runs == {
        "train": "its definition in the config is not the base's"
    }
