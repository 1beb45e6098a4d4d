"""`gbbot diff` on real git repositories with real torch runs.

One PR scenario is run once (module fixture) and asserted from many sides. The base (main) has
breaks A (`print("A")`), B (`.item()`), two identical `print("tick")`s, a break in `late()` and
one in `pkg/helpers.py`. The PR renames helpers.py to utils.py, moves `late()` below `step()`,
inserts lines above B and changes its whitespace, fixes an entrypoint that crashed on the base,
adds an entrypoint and removes one; then, left uncommitted in the working tree, fixes A and adds C.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from gbbot.analysis import break_diff, report
from gbbot.analysis.policy import Policy
from gbbot.analysis.shards import ShardReport, merge
from gbbot.checks import baseline
from gbbot.commands import common
from gbbot.core import words
from gbbot.core.config import IgnoreRule
from gbbot.core.model import ChangeState, Mode, Report
from tests.builders import listed
from tests.cli_helpers import gbbot, write
from tests.conftest import git

BASE_FILES = {
    ".gbbot.yml": """\
        version: 1
        entrypoints:
          - {name: fwd, call: "pkg.bench:forward_once"}
          - {name: flaky, call: "pkg.flaky:run"}
          - {name: old, call: "pkg.old:run"}
        mode: fast
        fail_on: new
    """,
    "pkg/__init__.py": "",
    "pkg/model.py": """\
        import torch

        from pkg.helpers import scale


        def late(x):
            torch._dynamo.graph_break()
            return x + 1


        def step(x):
            x = x * 2
            print("tick")
            x = x + 1
            print("tick")
            x = x - 1
            print("A")
            x = scale(x)
            n = int(x.sum().item())
            return late(x) + n
    """,
    "pkg/helpers.py": """\
        import warnings


        def scale(x):
            warnings.warn("scaling")
            return x * 3
    """,
    "pkg/bench.py": """\
        import torch

        from pkg.model import step


        def forward_once():
            return torch.compile(step)(torch.ones(3))
    """,
    "pkg/flaky.py": """\
        def run():
            raise RuntimeError("the base cannot run this")
    """,
    "pkg/old.py": """\
        import torch


        def run():
            return torch.compile(lambda x: print("old") or x)(torch.ones(1))
    """,
}

HEAD_COMMITTED = {
    ".gbbot.yml": """\
        version: 1
        entrypoints:
          - {name: fwd, call: "pkg.bench:forward_once"}
          - {name: flaky, call: "pkg.flaky:run"}
          - {name: added, call: "pkg.added:run"}
        mode: fast
        fail_on: new
    """,
    "pkg/model.py": """\
        import torch

        from pkg.utils import scale


        def step(x):
            x = x * 2
            print("tick")
            x = x + 1
            print("tick")
            x = x - 1
            print("A")
            # Two lines inserted above B,
            # which also gets other whitespace and a comment.
            x = scale(x)
            n   =   int(x.sum().item())  # B
            return late(x) + n


        def late(x):
            torch._dynamo.graph_break()
            return x + 1
    """,
    "pkg/flaky.py": """\
        import torch


        def run():
            return torch.compile(lambda x: x + 1)(torch.ones(1))
    """,
    "pkg/added.py": """\
        import torch


        def run():
            return torch.compile(lambda x: print("added") or x)(torch.ones(1))
    """,
}


def cached_reports(cache: Path) -> list[Path]:
    """The cached base reports (their runs' reads are kept beside them as `*.reads.json`)."""
    return [p for p in cache.rglob("*.json") if not p.name.endswith(".reads.json")]


def make_pr_repo(repo: Path) -> None:
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, BASE_FILES)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "feature")
    git(repo, "mv", "pkg/helpers.py", "pkg/utils.py")
    git(repo, "rm", "-q", "pkg/old.py")
    write(repo, HEAD_COMMITTED)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "rename, move, reformat, add and remove entrypoints")
    model = repo / "pkg/model.py"  # uncommitted: fix A, add C
    text = model.read_text().replace('print("A")\n', "")
    text = text.replace("    x = scale(x)\n", '    x = scale(x)\n    warnings.warn("C")\n')
    model.write_text("import warnings\n" + text)


@dataclass(frozen=True)
class Scenario:
    repo: Path
    scratch: Path  # TMPDIR of the diff run: where its base worktree lived
    cache: Path
    run: subprocess.CompletedProcess
    report: Report
    markdown: str
    out: Path


@pytest.fixture(scope="module")
def pr(tmp_path_factory) -> Scenario:
    top = tmp_path_factory.mktemp("pr")
    repo, scratch, cache, out = top / "repo", top / "scratch", top / "cache", top / "out"
    scratch.mkdir()
    make_pr_repo(repo)
    run = gbbot(
        repo,
        "diff",
        "--base",
        "main",
        "--jobs",
        "2",
        "--cache",
        str(cache),
        "--json",
        str(out / "report.json"),
        "--markdown",
        str(out / "report.md"),
        tmp=scratch,
    )
    assert run.returncode == 1, run.stderr  # fail_on: new, and C is new
    return Scenario(repo, scratch, cache, run, report.load(out / "report.json"), (out / "report.md").read_text(), out)


@pytest.fixture(scope="module")
def fwd_cache(pr: Scenario) -> Path:
    """`fwd` alone diffed with a cache: a base that ran cleanly, so it is kept (the whole base is
    not: `flaky` failed there). The cached report's path."""
    cache = pr.cache.parent / "fwd-cache"
    run = gbbot(pr.repo, "diff", "--base", "main", "-e", "fwd", "--cache", str(cache), "-q")
    assert run.returncode == 1, run.stderr
    (path,) = cached_reports(cache)
    return path


def test_a_base_that_did_not_run_cleanly_is_never_cached(pr, fwd_cache):
    assert cached_reports(pr.cache) == []  # `flaky` failed on the base
    assert [e["name"] for e in json.loads(fwd_cache.read_text())["entrypoints"]] == ["fwd"]


def fingerprint_of(result: Report, code: str, name: str = "fwd") -> str:
    entry = next(e for e in result.entrypoints if e.name == name)
    (found,) = [b.fingerprint for b in entry.breaks if code in b.code]
    return found


def fwd_diff(result: Report):
    assert result.diff is not None
    return next(e for e in result.diff.entrypoints if e.name == "fwd")


def test_new_fixed_and_persisting(pr):
    d = pr.report.diff
    c = fingerprint_of(pr.report, 'warnings.warn("C")')
    b = fingerprint_of(pr.report, ".item()")
    entry, lists = fwd_diff(pr.report), listed(d, "fwd")
    assert lists.new == (c,)
    assert [brk.code for brk in d.breaks(ChangeState.FIXED)] == ['print("A")']
    assert lists.fixed == listed(d).fixed == tuple(brk.fingerprint for brk in d.breaks(ChangeState.FIXED))
    assert b in lists.persisting
    assert entry.no_baseline is None
    assert entry.graph_delta == 0  # one break fixed, one added: as many graphs as before


def test_edits_that_keep_a_break_persisting(pr):
    """Lines above it, whitespace, the function moved in its file, the file renamed."""
    persisting = set(listed(pr.report.diff, "fwd").persisting)
    for code in (".item()", "torch._dynamo.graph_break()", 'warnings.warn("scaling")'):
        assert fingerprint_of(pr.report, code) in persisting, code
    moved = next(b for b in pr.report.breaks if b.function == "late")
    assert moved.line > next(b.line for b in pr.report.breaks if "item()" in b.code)
    renamed = next(b for b in pr.report.breaks if "scaling" in b.code)
    assert renamed.file == "pkg/utils.py"


def test_identical_breaks_on_two_lines_stay_distinct(pr):
    ticks = [b for b in pr.report.breaks if b.code == 'print("tick")']
    assert len(ticks) == 2 and ticks[0].fingerprint != ticks[1].fingerprint
    assert {t.fingerprint for t in ticks} <= set(listed(pr.report.diff).persisting)


def test_entrypoints_without_a_baseline_say_why(pr):
    entries = {e.name: e for e in pr.report.diff.entrypoints}
    sha = pr.report.diff.base_sha[:7]
    added, flaky = (words.say(entries[n].no_baseline) for n in ("added", "flaky"))
    assert added.startswith(f"no baseline for `added` on base {sha}: entrypoint not defined there")
    assert "the base's config or report does not have it" in added
    assert flaky.startswith(f"no baseline for `flaky` on base {sha}: it failed there (exit 1)")
    assert "RuntimeError: the base cannot run this" in flaky
    assert entries["added"].graph_delta is None
    # the added entrypoint's break had no baseline: it is new
    assert fingerprint_of(pr.report, 'print("added")', "added") in listed(pr.report.diff).new
    for reason in (added, flaky):
        assert reason.replace("`", "") in pr.run.stderr
    assert f"> no baseline for `added` on base {sha}: entrypoint not defined there" in pr.markdown
    # `flaky` is no new entrypoint: it lost its baseline, which is said above the headline, and
    # its breaks (it has none on the head) would count as new.
    (warning,) = [line for line in pr.markdown.splitlines() if line.startswith("⚠️ `flaky`")]
    assert warning.startswith("⚠️ `flaky` lost its baseline: it failed there (exit 1)")
    assert warning.endswith("; the comparison could not be made, so its graph breaks count as new.")
    assert pr.markdown.index(warning) < pr.markdown.index("\nThis PR ")


def test_a_removed_entrypoint_plays_no_part(pr):
    assert {e.name for e in pr.report.entrypoints} == {"fwd", "flaky", "added"}
    assert {e.name for e in pr.report.diff.entrypoints} == {"fwd", "flaky", "added"}
    assert "old (base" not in pr.run.stderr  # the base ran what the head selects, as its own config defines it


def test_the_head_is_the_working_tree_and_the_report_says_so(pr):
    note = pr.report.diff.notes[0]
    assert note.startswith("The head side is the working tree with uncommitted changes (1 path: `pkg/model.py`)")
    assert "The head side is the working tree" in pr.markdown
    assert "uncommitted changes" in pr.run.stderr
    assert git(pr.repo, "status", "--porcelain") == "M pkg/model.py"  # nothing else touched


def test_the_worktree_is_removed_after_the_run(pr):
    assert len(git(pr.repo, "worktree", "list").splitlines()) == 1
    assert not list(pr.scratch.glob("gbbot-base-*"))


def test_markdown_leads_with_the_delta(pr):
    md = pr.markdown
    lines = md.splitlines()
    # `flaky` failed on the base: its breaks could not be compared, which the reviewer reads first
    assert lines[2].startswith("⚠️ `flaky` lost its baseline: it failed there (exit 1)")
    assert "This PR adds **2** graph breaks and fixes **1**." in lines[3:6]  # C, and `added`'s
    new, fixed, persisting = (
        md.index("### New graph breaks"),
        md.index("✅ 1 graph break fixed"),
        md.index("5 graph breaks persisting"),
    )
    assert new < fixed < persisting
    assert 'warnings.warn("C")' in md[new:fixed]
    assert "GB0007 documentation" in md[fixed:persisting]  # the new break's details, after the fixed ones
    assert 'print("A")' in md[fixed:persisting]
    assert "<details><summary>5 graph breaks persisting</summary>" in md[persisting - 20 :]


def test_the_cached_baseline_is_reused_and_gives_the_same_diff(pr, fwd_cache):
    cache = fwd_cache.parent.parent
    again = gbbot(
        pr.repo, "diff", "--base", "main", "-e", "fwd", "--cache", str(cache), "--json", str(pr.out / "again.json")
    )
    assert again.returncode == 1, again.stderr
    assert "from the cache" in again.stderr
    assert "(base " not in again.stderr  # no base entrypoint ran
    second = report.load(pr.out / "again.json").diff
    assert second.baseline_source == "cache"
    second, first = listed(second), listed(pr.report.diff, "fwd")
    assert (set(second.new), set(second.fixed), set(second.persisting)) == (
        set(first.new),
        set(first.fixed),
        set(first.persisting),
    )


def cached_baseline(cached: Path, tmp_path: Path, **changes) -> Path:
    data = json.loads(cached.read_text())
    data.update(changes)
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"torch_version": "2.12.0+cpu"}, "made with torch 2.12.0+cpu, the head runs torch"),
        ({"mode": "faithful"}, "made in faithful mode, the head runs in fast mode"),
        ({"config_hash": "0123456789abcdef"}, "made with another .gbbot.yml"),
        ({"commit": "0" * 40}, "made for commit 0000000, not the merge-base"),
    ],
)
def test_a_mismatched_baseline_is_refused(pr, fwd_cache, tmp_path, changes, says):
    baseline = cached_baseline(fwd_cache, tmp_path, **changes)
    run = gbbot(pr.repo, "diff", "--base", "main", "--baseline", str(baseline), "-q")
    assert run.returncode == 2
    assert says in run.stderr and "--allow-mismatch" in run.stderr
    assert "running" not in run.stderr  # refused before anything ran


def test_a_mismatched_baseline_can_be_used_with_a_label(pr, fwd_cache, tmp_path):
    baseline = cached_baseline(fwd_cache, tmp_path, torch_version="2.12.0+cpu")
    out = tmp_path / "labelled.json"
    run = gbbot(
        pr.repo,
        "diff",
        "--base",
        "main",
        "--baseline",
        str(baseline),
        "--allow-mismatch",
        "-e",
        "fwd",
        "-q",
        "--json",
        str(out),
        "--markdown",
        str(tmp_path / "labelled.md"),
    )
    assert run.returncode == 1, run.stderr
    labelled = report.load(out).diff
    assert labelled.baseline_source == "file"
    (label,) = [n for n in labelled.notes if "does not match this run" in n]
    assert "it was made with torch 2.12.0+cpu, the head runs torch 2.13" in label
    assert "does not match this run" in (tmp_path / "labelled.md").read_text()
    assert listed(labelled).new == (fingerprint_of(pr.report, 'warnings.warn("C")'),)


@pytest.fixture
def base(fwd_cache: Path) -> Report:
    return report.load(fwd_cache)


def test_ignore_rules_apply_to_both_sides(pr, base):
    head = replace(pr.report, diff=None)
    rules = (IgnoreRule(gb_id="GB0007"),)  # C and the renamed helper's warning
    d = break_diff.diff(
        head,
        base,
        break_diff.Comparison("main", pr.report.diff.base_sha, {"pkg/helpers.py": "pkg/utils.py"}, rules),
    )
    warns = {fingerprint_of(pr.report, 'warnings.warn("C")'), fingerprint_of(pr.report, "scaling")}
    assert not warns & {*listed(d).new, *listed(d).fixed, *listed(d).persisting}
    assert listed(d, "fwd").new == () and [b.code for b in d.breaks(ChangeState.FIXED)] == ['print("A")']
    # with only `fwd` compared, nothing is new: fail_on new passes
    only_fwd = replace(head, entrypoints=tuple(e for e in head.entrypoints if e.name == "fwd"))
    ignored = break_diff.diff(
        only_fwd, base, break_diff.Comparison("main", d.base_sha, {"pkg/helpers.py": "pkg/utils.py"}, rules)
    )
    assert common.policy_exit_code(break_diff.with_diff(only_fwd, ignored), Policy.of("new")) == 0


def test_without_the_rename_map_the_renamed_break_would_look_new(pr, base):
    head = replace(pr.report, diff=None)
    d = break_diff.diff(head, base, break_diff.Comparison("main", pr.report.diff.base_sha))
    assert fingerprint_of(pr.report, "scaling") in listed(d).new


def test_fingerprints_rebuild_exactly_as_classify_made_them(pr, base):
    """The rename map recomputes fingerprints; with every path mapped to itself nothing may
    change, or the rebuild has drifted from classify."""
    for entry in (*pr.report.entrypoints, *base.entrypoints):
        identity = {b.file: b.file for b in entry.breaks}
        assert [b.fingerprint for b in break_diff.renamed(entry.breaks, identity)] == [
            b.fingerprint for b in entry.breaks
        ]


def test_diff_shards_merge_into_the_whole_diff(pr, base, tmp_path):
    head = replace(pr.report, diff=None)
    renames = {"pkg/helpers.py": "pkg/utils.py"}
    names = sorted(e.name for e in head.entrypoints)
    shards = []
    for index, name in enumerate(names, start=1):
        part = replace(
            head, entrypoints=tuple(e for e in head.entrypoints if e.name == name), shard=f"{index}/{len(names)}"
        )
        part = break_diff.with_diff(
            part, break_diff.diff(part, base, break_diff.Comparison("main", pr.report.diff.base_sha, renames))
        )
        path = tmp_path / f"shard{index}.json"
        report.write(part, path)
        shards.append(ShardReport(str(path), report.load(path)))
    merged, whole = listed(merge(shards).diff), listed(pr.report.diff)
    assert (set(merged.new), set(merged.fixed), set(merged.persisting)) == (
        set(whole.new),
        set(whole.fixed),
        set(whole.persisting),
    )


def test_the_cache_key_separates_everything_a_baseline_depends_on(tmp_path):
    expected = baseline.Expected("a" * 40, "c0ffee", "2.13.0+cpu", Mode.FAST, ("fwd", "added"))
    key = baseline.CacheKey.for_run(expected)
    assert key.path(tmp_path).parent == tmp_path / ("a" * 40)  # one directory per base commit
    others = [
        replace(expected, commit="b" * 40),
        replace(expected, config_hash="decade"),
        replace(expected, torch_version="2.12.0+cpu"),
        replace(expected, mode=Mode.FAITHFUL),
        replace(expected, entrypoints=("fwd",)),
    ]
    paths = {key.path(tmp_path), *(baseline.CacheKey.for_run(o).path(tmp_path) for o in others)}
    assert len(paths) == 6
    assert baseline.CacheKey.for_run(replace(expected, entrypoints=("added", "fwd"))) == key  # order-free
    assert baseline.CacheKey.for_run(replace(expected, torch_version=None)) is None


def test_the_cache_keeps_the_most_recently_used_bases(base, tmp_path):
    cache = baseline.Cache(tmp_path)
    for i in range(baseline.KEEP_BASES + 2):
        key = baseline.CacheKey(f"{i:040x}", "c0ffee", "2.13.0+cpu", Mode.FAST, ("fwd",))
        cache.store(key, base)
        os.utime(key.path(tmp_path).parent, (1_000_000 + i, 1_000_000 + i))
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert len(kept) == baseline.KEEP_BASES and f"{0:040x}" not in kept and f"{1:040x}" not in kept
