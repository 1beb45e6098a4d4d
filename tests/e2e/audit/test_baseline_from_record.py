"""The nightly audit's record as the base side of `gbbot diff`, and `gbbot audit` on the command
line, on real git repositories with real torch runs.

Each commit's entrypoint appends the commit's label to a marker file outside the repository when
it runs, so a test can tell which side of a diff ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from gbbot.analysis import report
from gbbot.audit import record
from gbbot.core.model import ChangeState
from tests.cli_helpers import gbbot_here, write
from tests.conftest import git

CONFIG = """\
    version: 1
    entrypoints:
      - {name: fwd, call: "pkg.bench:run"}
    mode: fast
    fail_on: new
"""

BENCH = """\
import torch


def step(x):
    x = x * 2
    print("A")
{extra}    return x + 1


def run():
    with open({marker!r}, "a") as marks:
        marks.write({label!r} + "\\n")
    return torch.compile(step)(torch.ones(3))
"""


def bench(marker: Path, label: str, extra: str = "") -> str:
    return BENCH.format(marker=str(marker), label=label, extra=extra)


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def audited_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """A repository whose commit A (one break, `print("A")`) was audited onto `gbbot-data`."""
    tmp = tmp_path_factory.mktemp("audited")
    repo, marker = tmp / "repo", tmp / "ran.txt"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    base = commit(repo, {".gbbot.yml": CONFIG, "pkg/__init__.py": "", "pkg/bench.py": bench(marker, "A")}, "A")
    audit = gbbot_here(repo, "audit")
    assert audit.returncode == 0, audit.stderr
    assert git(repo, "branch", "--list", "gbbot-data")
    assert ran(marker) == ["A"]
    return repo, marker, base


@pytest.fixture
def audited(audited_once: tuple[Path, Path, str], request: pytest.FixtureRequest) -> tuple[Path, Path, str]:
    """That repository on a branch of this test's own from A, with no run marked yet: the tests
    share the one audit, and each commits its own head."""
    repo, marker, base = audited_once
    git(repo, "checkout", "-q", "-b", request.node.name, base)
    marker.unlink(missing_ok=True)  # from here on, only the diff's runs are marked
    return audited_once


def ran(marker: Path) -> list[str]:
    return marker.read_text().split() if marker.exists() else []


def test_the_audit_record_of_the_merge_base_is_the_baseline_and_only_the_head_runs(audited, tmp_path):
    repo, marker, base = audited
    commit(repo, {"pkg/bench.py": bench(marker, "B", extra='    x = x - 1\n    print("B")\n')}, "B adds a break")
    out = tmp_path / "r.json"
    run = gbbot_here(repo, "diff", "--base", base, "--baseline-from-branch", "gbbot-data", "--json", str(out))
    assert run.returncode == 1, run.stderr  # fail_on: new
    assert f"baseline from the audit record of {base[:7]}" in run.stderr
    assert ran(marker) == ["B"]  # the base's entrypoint never ran
    result = report.load(out)
    assert result.diff.baseline_source == "record"
    new = result.diff.breaks(ChangeState.NEW)
    assert [b.line for b in new] == [8] and not result.diff.changed(ChangeState.FIXED)
    assert len(result.diff.changed(ChangeState.PERSISTING)) == 1  # print("A"), known from the record
    assert result.diff.entrypoints[0].graph_delta == 1  # the base's graph count, from the record


def test_a_record_fits_by_the_merge_bases_own_config_whatever_the_pr_does_to_it(audited, tmp_path):
    """The base runs as the merge-base's `.gbbot.yml` defines it, and the record was made with that
    config: a PR that edits the config still takes the record; the entrypoint it redefined runs
    on the head, as every entrypoint does with a record (it keeps no reads)."""
    repo, marker, base = audited
    config = CONFIG.replace('"pkg.bench:run"}', '"pkg.bench:run", timeout: 300}')
    commit(repo, {".gbbot.yml": config, "pkg/bench.py": bench(marker, "B")}, "B changes the config")
    run = gbbot_here(
        repo, "diff", "--base", base, "--baseline-from-branch", "gbbot-data"
    )  # not -q: it silences the note
    assert run.returncode == 0, run.stderr
    assert "does not fit" not in run.stderr and "baseline from the audit record" in run.stderr
    assert sorted(ran(marker)) == ["B"]


def test_audit_writes_the_record_and_the_issue_body_and_leaves_the_branch_alone(in_git_dir, tmp_path):
    marker = tmp_path / "ran.txt"
    commit(in_git_dir, {".gbbot.yml": CONFIG, "pkg/__init__.py": "", "pkg/bench.py": bench(marker, "A")}, "A")
    out, body = tmp_path / "out" / "record.json", tmp_path / "out" / "issue.md"
    run = gbbot_here(in_git_dir, "audit", "--out", str(out), "--issue-body", str(body))
    assert run.returncode == 0, run.stderr
    written = record.loads(out.read_bytes())  # valid as the data branch's reader sees it
    assert written.commit == git(in_git_dir, "rev-parse", "HEAD")
    assert [(e.name, e.status, len(e.fingerprints)) for e in written.entrypoints] == [("fwd", "ok", 1)]
    assert not git(in_git_dir, "branch", "--list", "gbbot-data")
    text = body.read_text()
    assert text.startswith("<!-- gbbot:audit-issue -->") and "**1 graph break** (1 distinct) in 2 graphs" in text
    assert "`fwd`" in text


def test_without_a_record_of_the_merge_base_the_base_runs(in_git_dir, tmp_path):
    write(in_git_dir, {".gbbot.yml": "version: 1\nentrypoints: [{name: ok, run: 'true'}]\n"})
    git(in_git_dir, "add", "-A")
    git(in_git_dir, "commit", "-q", "-m", "only commit")
    git(in_git_dir, "checkout", "-qb", "feature")  # a head past the merge-base: there is a base to run
    write(in_git_dir, {"notes.txt": "a change\n"})
    git(in_git_dir, "add", "-A")
    git(in_git_dir, "commit", "-q", "-m", "a change on the branch")
    # the entrypoint compiles nothing, which fails the default policy: only the baseline is asked about here
    run = gbbot_here(
        in_git_dir,
        "diff",
        "--base",
        "main",
        "--baseline-from-branch",
        "gbbot-data",
        "--fail-on",
        "none",
        "--json",
        str(tmp_path / "r.json"),
    )
    assert run.returncode == 0, run.stderr
    assert "no branch gbbot-data (nor origin/gbbot-data): running the base" in run.stderr
    assert report.load(tmp_path / "r.json").diff.baseline_source == "run"
