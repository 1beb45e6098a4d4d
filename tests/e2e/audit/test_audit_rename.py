"""`gbbot audit` twice across a merge that renames the model's file, removes the logger that made
`Model.forward` run eagerly and so reveals the print after its loop: the tracking issue says no
regression, one fixed, one revealed, each break once (two entrypoints run the model). Real torch,
real git, the audit's local data branch."""

from __future__ import annotations

from tests import blocks_project
from tests.cli_helpers import gbbot_here, write
from tests.conftest import git

CONFIG = """\
version: 1
mode: fast
fail_on: new
entrypoints:
  - {name: train, call: "entry:main"}
  - {name: infer, call: "entry:main"}
"""
# A print before the loop too: it persists across the rename.
MODEL = blocks_project.BLOCKS.replace(
    "    def forward(self, x):\n        for", '    def forward(self, x):\n        print("model start")\n        for'
)


def test_an_audit_across_a_rename_follows_the_file_and_calls_the_revealed_print_no_regression(in_git_dir, tmp_path):
    write(
        in_git_dir, {".gbbot.yml": CONFIG, "model.py": MODEL, "entry.py": blocks_project.ENTRY.format(module="model")}
    )
    git(in_git_dir, "add", "-A")
    git(in_git_dir, "commit", "-q", "-m", "model")
    first = gbbot_here(in_git_dir, "audit", "--issue-body", str(tmp_path / "first.md"), tmp=tmp_path)
    assert first.returncode == 0, first.stderr
    git(in_git_dir, "mv", "model.py", "net.py")
    write(
        in_git_dir,
        {"net.py": MODEL.replace(blocks_project.LOGGER, ""), "entry.py": blocks_project.ENTRY.format(module="net")},
    )
    git(in_git_dir, "commit", "-qam", "rename model.py to net.py, drop the logger")
    second = gbbot_here(in_git_dir, "audit", "--issue-body", str(tmp_path / "second.md"), tmp=tmp_path)
    body = (tmp_path / "second.md").read_text()
    assert second.returncode == 0, second.stderr + body
    assert "Regression" not in body and "No regression since the previous audit" in body
    assert "**✅ Fixed** (1):" in body and 'log.debug("block")' in body
    assert "**👀 Revealed, not new** (1):" in body and 'print("model done")' in body
    assert "in `train`, `infer`" in body
    assert "🆕 New" not in body
