"""A pull request that bumps a requirement: `gbbot diff --setup` builds each side's environment from
its own requirements.txt (the base tinydep 1.0, the head tinydep 2.0, both from wheels in the
repository), runs each side there, and puts what came and went down to the new version: 1.0's
print is fixed, 2.0's `.item()` is new, no line of code changed. The same bump beside a code
change keeps the code's new break apart. Nothing is installed into gbbot's own environment.

One repository for the module, one cache directory: the second diff takes the base's environment
from it (same requirement files, same key); the head's, built by the change's own steps, is never
kept, and the base's is gbbot's again before any code of the change runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gbbot.main import main
from tests.conftest import git
from tests.e2e.test_run_as import close, ensure_user, reachable
from tests.local_package import MODEL, REQUIREMENTS, write_tinydep_project

# beside the bump, a break of the repository's own, on a line the pull request adds
CODE_CHANGE = MODEL.replace("    return x + 1\n", "    torch._dynamo.graph_break()\n    return x + 1\n")


@pytest.fixture(scope="module")
def project() -> Iterator[Path]:
    """main: tinydep 1.0; branch bump: 2.0; branch bump-and-code: 2.0 and a new break in block().
    In a directory every user may read (a pytest tmp_path is root's alone): the run-as user's too."""
    top = Path(tempfile.mkdtemp(prefix="gbbot-bump-test-"))
    top.chmod(0o755)
    repo = top / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write_tinydep_project(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a model that calls tinydep")
    git(repo, "checkout", "-qb", "bump")
    (repo / "requirements.txt").write_text(REQUIREMENTS.format(version="2.0"))
    git(repo, "commit", "-qam", "tinydep 2.0")
    git(repo, "checkout", "-qb", "bump-and-code")
    (repo / "model.py").write_text(CODE_CHANGE)
    git(repo, "commit", "-qam", "and a break of our own")
    yield repo
    shutil.rmtree(top, ignore_errors=True)


def arguments(repo: Path, branch: str, cache: str = "cache") -> tuple[list[str], Path, Path]:
    git(repo, "checkout", "-q", branch)
    out, md = repo.parent / f"{branch}.json", repo.parent / f"{branch}.md"
    args = ["diff", "--base", "main", "--root", str(repo), "--setup", "--cache", str(repo.parent / cache)]
    return [*args, "--jobs", "1", "--json", str(out), "--markdown", str(md), "--fail-on", "none"], out, md


def diff(repo: Path, branch: str, capsys: pytest.CaptureFixture[str]) -> tuple[dict, str, str]:
    args, out, md = arguments(repo, branch)
    assert main(args) == 0
    return json.loads(out.read_text()), md.read_text(), capsys.readouterr().err


def changed(report: dict, state: str) -> list[tuple[str, str, str]]:
    """(file, function, the library's function) of one state's breaks: the head's records of new
    ones, the base's of fixed ones."""
    found = report["diff"]
    records = found["fixed_breaks"] if state == "fixed" else [b for e in report["entrypoints"] for b in e["breaks"]]
    return sorted({(b["file"], b["function"], (b.get("library_site") or {}).get("function", ""))
                   for b in records if b["fingerprint"] in found[state]})  # fmt: skip


def test_a_requirement_bump_is_compared_environment_against_environment(project, capsys):
    report, md, err = diff(project, "bump", capsys)
    found = report["diff"]
    # 1.0's print inside describe() is gone, 2.0's .item() in scale() is new: both tinydep's
    assert changed(report, "fixed") == [("model.py", "block", "describe")]
    assert changed(report, "new") == [("model.py", "block", "scale")]
    assert found["dependencies"]["packages"] == [{"name": "tinydep", "base": "1.0", "head": "2.0"}]
    assert set(found["dependencies"]["causes"].values()) == {"dependencies"}
    assert found["dependencies"]["code_changed"] is False
    assert report["packages"]["tinydep"] == "2.0" and report["packages"]["torch"] == report["torch_version"]
    assert "**tinydep 1.0 → 2.0**: fixes **1** graph break, adds **1**." in md
    assert "- fixed: " in md and "- new: " in md and "The code change" not in md
    assert "Both sides ran with the head's packages" not in md + err
    assert "gets an environment of its own" in err
    # what setup installed is in the sides' environments, not in gbbot's
    assert subprocess.run([sys.executable, "-c", "import tinydep"], capture_output=True).returncode != 0


def test_a_code_change_beside_the_bump_is_kept_apart(project, capsys):
    report, md, err = diff(project, "bump-and-code", capsys)
    found = report["diff"]
    causes = found["dependencies"]["causes"]
    records = {b["fingerprint"]: b for e in report["entrypoints"] for b in e["breaks"]}
    mine = [f for f in found["new"] if records[f]["origin"] == "user"]
    assert len(mine) == 1 and records[mine[0]]["code"] == "torch._dynamo.graph_break()"
    assert causes[mine[0]] == "code"
    theirs = [f for f in (*found["new"], *found["fixed"]) if f not in mine]
    assert len(theirs) == 2 and {causes[f] for f in theirs} == {"dependencies"}
    assert found["dependencies"]["code_changed"] is True
    assert "**tinydep 1.0 → 2.0**: fixes **1** graph break, adds **1**." in md
    assert "The code change: adds **1** graph break." in md
    # the base's environment came from the cache the first diff filled; the head's is built again
    base, head = err.split("and so does the head")
    assert "pip install" not in base and "setup 1/1: pip install" in head


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("useradd") is None,
    reason="needs root and useradd: gbbot drops to another user only as root",
)
def test_as_the_run_as_user_the_sides_environments_are_built_by_them_and_the_bump_reads_the_same(project):
    """gbbot as root with GBBOT_RUN_AS, as its image runs: each side's setup installs, as that
    user, into an environment handed to them (the base's taken back before the head's runs), and
    the diff is the one above."""
    user = ensure_user()
    opened = reachable(Path(os.path.realpath(sys.executable)), Path(sys.prefix))
    try:
        args, out, _ = arguments(project, "bump", cache="cache-run-as")
        env = {**os.environ, "GBBOT_RUN_AS": user.pw_name}
        done = subprocess.run([sys.executable, "-m", "gbbot", *args], env=env, capture_output=True, text=True,
                              timeout=600)  # fmt: skip
    finally:
        close(opened)
    assert done.returncode == 0, done.stderr
    found = json.loads(out.read_text())["diff"]
    assert len(found["new"]) == 1 and len(found["fixed"]) == 1
    assert found["dependencies"]["packages"] == [{"name": "tinydep", "base": "1.0", "head": "2.0"}]
    # only the base's environment is kept, and gbbot's again, so the head's code could not write it
    (kept,) = [p for p in (project.parent / "cache-run-as" / "environments").iterdir() if p.is_dir()]
    owners = {p.stat().st_uid for p in (kept, *kept.rglob("*"))}
    assert owners == {0} and not [p for p in kept.rglob("*") if p.stat().st_mode & 0o022 and not p.is_symlink()]
    assert "Successfully installed tinydep-2.0" in done.stdout + done.stderr  # the head's, as that user
