"""The PR comment on real runs, read as a reviewer reads it: the bundled example's change (one break
added, one fixed, five unchanged) says so in its first screenful, with links that point at the
very lines in the commits they name; and a break on a statement written over several lines, one
call deeper than the compiled function, shows the whole statement."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from gbbot.analysis import report
from gbbot.core.model import ChangeState
from gbbot.publish import comment
from gbbot.publish.content import Texts, fitted
from gbbot.render.markdown import Options, SourceLinks
from tests.cli_helpers import gbbot_here, write
from tests.conftest import git

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WEB = "https://github.com/octo-org/octo-repo"
CHANGE = (
    'print("tinynet: first block done")  # GB0059',
    'warnings.warn("tinynet: first block done")  # GB0007',
)
FIRST_SCREEN = 15


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> tuple[Path, report.Report]:
    repo = tmp_path_factory.mktemp("example") / "example"
    shutil.copytree(EXAMPLES, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "example")
    model = repo / "tinymodel" / "model.py"
    model.write_text("import warnings\n" + model.read_text().replace(*CHANGE))
    git(repo, "checkout", "-q", "-b", "change")
    git(repo, "commit", "-q", "-am", "change")
    done = gbbot_here(repo, "diff", "--base", "main", "--fail-on", "none", "--json", "diff.json")
    assert done.returncode == 0, done.stderr
    return repo, report.load(repo / "diff.json")


def posted(made: report.Report, head: str) -> str:
    text, _ = comment.body(Texts(made), Options(links=SourceLinks(WEB, head)), "", None)
    return text.split("\n", 1)[1]


def line_at(repo: Path, sha: str, path: str, number: int) -> str:
    return git(repo, "show", f"{sha}:{path}").splitlines()[number - 1]


def test_the_first_screen_says_what_the_change_added_and_fixed_and_where(example) -> None:
    repo, made = example
    head = git(repo, "rev-parse", "HEAD").strip()
    top = "\n".join(posted(made, head).splitlines()[:FIRST_SCREEN])
    assert "This PR adds **1** graph break and fixes **1**." in top
    assert "warnings.warn" in top and 'print("tinynet: first block done")' in top
    assert "was not run again" not in top


def test_every_line_link_points_at_the_line_it_names(example) -> None:
    repo, made = example
    head = git(repo, "rev-parse", "HEAD").strip()
    text = posted(made, head)

    links = re.findall(rf"\[`([^`]+):(\d+)`\]\({WEB}/blob/([0-9a-f]+)/([^#]+)#L(\d+)\)", text)
    assert len(links) >= 7  # the new break, its stack, the fixed one, the five persisting ones
    for path, line, sha, linked_path, linked_line in links:
        assert (path, line) == (linked_path, linked_line)
        assert sha in (head, made.diff.base_sha)
        shown = line_at(repo, sha, path, int(line))
        assert shown.strip(), f"{path}:{line} at {sha[:7]} is an empty line"
    new = made.diff.breaks(ChangeState.NEW)[0]
    assert "warnings.warn" in line_at(repo, head, new.file, new.line)
    (fixed,) = made.diff.breaks(ChangeState.FIXED)
    assert "print(" in line_at(repo, made.diff.base_sha, fixed.file, fixed.line)
    assert f"{WEB}/blob/{made.diff.base_sha}/{fixed.file}#L{fixed.line}" in text


def test_the_comment_is_shorter_than_the_job_summary(example) -> None:
    repo, made = example
    head = git(repo, "rev-parse", "HEAD").strip()
    summary = fitted(Texts(made), Options(links=SourceLinks(WEB, head)), 1_000_000)
    assert len(posted(made, head)) <= len(summary)


DEEPER = """\
import torch


def describe(x):
    print(
        "shape",
        x.shape,
    )
    return x * 2


def forward(x):
    return describe(x) + 1


def run():
    torch.compile(forward)(torch.ones(3))
"""


def test_a_statement_over_several_lines_one_call_deeper_is_shown_whole(tmp_path: Path) -> None:
    write(
        tmp_path, {"deeper.py": DEEPER, ".gbbot.yml": 'version: 1\nentrypoints:\n  - {name: run, call: "deeper:run"}\n'}
    )
    done = gbbot_here(tmp_path, "check", "--fail-on", "none", "--json", "r.json", "--markdown", "r.md")
    assert done.returncode == 0, done.stderr
    (brk,) = report.load(tmp_path / "r.json").breaks
    assert (brk.file, brk.function) == ("deeper.py", "describe")
    assert brk.statement == 'print(\n    "shape",\n    x.shape,\n)'
    text = (tmp_path / "r.md").read_text()
    assert '```python\nprint(\n    "shape",\n    x.shape,\n)\n```' in text
    assert '`print( "shape", x.shape, )`' in text  # the table's cell: the statement on one line
