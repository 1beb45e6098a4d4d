"""`gbbot check --shard I/N` + `gbbot merge`: how a CI matrix spreads a suite over runners."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from gbbot.analysis import report
from gbbot.main import main
from tests.cli_helpers import write
from tests.conftest import git

CONFIG = """\
    version: 1
    entrypoints:
      - {name: delta, run: "python -c 'print(4)'"}
      - {name: alpha, run: "python -c 'print(1)'"}
      - {name: charlie, run: "python -c 'print(3)'"}
      - {name: bravo, run: "python -c 'print(2)'"}
      - {name: echo, run: "python -c 'print(5)'"}
"""


@pytest.fixture
def suite(in_git_dir, monkeypatch) -> Path:
    write(in_git_dir, {".gbbot.yml": CONFIG})
    git(in_git_dir, "add", "-A")
    git(in_git_dir, "commit", "-q", "-m", "suite")
    monkeypatch.chdir(in_git_dir)
    return in_git_dir


@dataclass(frozen=True)
class Run:
    returncode: int
    stderr: str


@pytest.fixture
def gbbot(capsys):
    """`gbbot ARGS` in the current directory, in this process (the CLI's main)."""

    def run(*args: str) -> Run:
        code = main(list(args))
        return Run(code, capsys.readouterr().err)

    return run


def shard(gbbot, spec: str, out: Path) -> Path:
    path = out / f"shard-{spec.replace('/', '-of-')}.json"
    # Its entrypoints compile nothing (no_compile fails the default policy): only slicing is tested.
    run = gbbot("check", "--shard", spec, "--json", str(path), "-q", "--fail-on", "none")
    assert run.returncode == 0, run.stderr
    return path


def names(path: Path) -> list[str]:
    return [e.name for e in report.load(path).entrypoints]


def test_shards_are_deterministic_disjoint_slices_that_merge_into_the_whole(suite, gbbot, tmp_path):
    parts = [shard(gbbot, f"{i}/3", tmp_path) for i in (1, 2, 3)]
    assert [names(p) for p in parts] == [["alpha", "delta"], ["bravo", "echo"], ["charlie"]]
    assert names(shard(gbbot, "1/3", tmp_path / "again")) == ["alpha", "delta"]
    merged = tmp_path / "merged.json"
    run = gbbot("merge", *map(str, reversed(parts)), "--json", str(merged), "-q")
    assert run.returncode == 0, run.stderr
    whole = report.load(merged)
    assert [e.name for e in whole.entrypoints] == ["alpha", "delta", "bravo", "echo", "charlie"]
    assert whole.shard is None and whole.merged_shards == ("1/3", "2/3", "3/3")
    assert whole.commit == git(suite, "rev-parse", "HEAD")


def test_merge_refuses_shards_that_are_not_one_run(suite, gbbot, tmp_path):
    first = shard(gbbot, "1/2", tmp_path)
    cases = {}
    git(suite, "commit", "-q", "--allow-empty", "-m", "another commit")
    cases["another commit"] = shard(gbbot, "2/2", tmp_path / "commit")
    git(suite, "checkout", "-q", "HEAD~1")  # back to the first shard's commit, with an edited config
    write(suite, {".gbbot.yml": CONFIG + "    fail_on: any\n"})
    cases["another config"] = shard(gbbot, "2/2", tmp_path / "config")
    for what, second in cases.items():
        run = gbbot("merge", str(first), str(second))
        assert run.returncode == 2, what
        assert f"is from {what} (" in run.stderr
        assert "shards must come from one run" in run.stderr


def test_merge_refuses_missing_or_repeated_shards_and_whole_reports(suite, gbbot, tmp_path):
    first, second = shard(gbbot, "1/3", tmp_path), shard(gbbot, "2/3", tmp_path)
    missing = gbbot("merge", str(first), str(second))
    assert missing.returncode == 2 and "missing shard 3/3 (pass --partial" in missing.stderr
    partial = gbbot("merge", str(first), str(second), "--partial", "--json", str(tmp_path / "p.json"), "-q")
    assert partial.returncode == 0 and names(tmp_path / "p.json") == ["alpha", "delta", "bravo", "echo"]
    twice = gbbot("merge", str(first), str(first))
    assert twice.returncode == 2 and "shard 1/3 given twice" in twice.stderr
    whole = tmp_path / "whole.json"
    assert gbbot("check", "--json", str(whole), "-q", "--fail-on", "none").returncode == 0
    unsharded = gbbot("merge", str(first), str(whole))
    assert unsharded.returncode == 2 and "is not a shard report" in unsharded.stderr
    other_split = gbbot("merge", str(first), str(shard(gbbot, "2/2", tmp_path)))
    assert other_split.returncode == 2 and "split the entrypoints in different ways" in other_split.stderr


def test_merge_refuses_a_damaged_shard(suite, gbbot, tmp_path):
    first = shard(gbbot, "1/2", tmp_path)
    data = json.loads(first.read_text())
    data["entrypoints"][0]["status"] = "fine"
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(data))
    run = gbbot("merge", str(first), str(broken))
    assert run.returncode == 2 and "does not match schema v1" in run.stderr
