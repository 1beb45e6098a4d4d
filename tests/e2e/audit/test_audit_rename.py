"""`gbbot audit` twice across a merge that renames the model's file, removes the logger that made
`Model.forward` run eagerly and so reveals the print after its loop: the tracking issue says no
regression, one fixed, one revealed, each break once (two entrypoints run the model). Real torch,
real git, the audit's local data branch."""

from __future__ import annotations

from tests.cli_helpers import gbbot, write
from tests.conftest import git

CONFIG = """\
version: 1
mode: fast
fail_on: new
entrypoints:
  - {name: train, call: "entry:main"}
  - {name: infer, call: "entry:main"}
"""
MODEL = """\
import logging
import torch

log = logging.getLogger("model")

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        log.debug("block")
        return self.lin(x)

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x):
        print("model start")
        for block in self.blocks:
            x = block(x)
        print("model done")
        return x
"""
ENTRY = """\
import torch
from {module} import Model

def main():
    torch.manual_seed(0)
    return torch.compile(Model())(torch.ones(2, 4))
"""


def test_an_audit_across_a_rename_follows_the_file_and_calls_the_revealed_print_no_regression(in_git_dir, tmp_path):
    write(in_git_dir, {".gbbot.yml": CONFIG, "model.py": MODEL, "entry.py": ENTRY.format(module="model")})
    git(in_git_dir, "add", "-A")
    git(in_git_dir, "commit", "-q", "-m", "model")
    first = gbbot(in_git_dir, "audit", "--issue-body", str(tmp_path / "first.md"), tmp=tmp_path)
    assert first.returncode == 0, first.stderr
    git(in_git_dir, "mv", "model.py", "net.py")
    write(
        in_git_dir,
        {"net.py": MODEL.replace('        log.debug("block")\n', ""), "entry.py": ENTRY.format(module="net")},
    )
    git(in_git_dir, "commit", "-qam", "rename model.py to net.py, drop the logger")
    second = gbbot(in_git_dir, "audit", "--issue-body", str(tmp_path / "second.md"), tmp=tmp_path)
    body = (tmp_path / "second.md").read_text()
    assert second.returncode == 0, second.stderr + body
    assert "Regression" not in body and "No regression since the previous audit" in body
    assert "**✅ Fixed** (1):" in body and 'log.debug("block")' in body
    assert "**👀 Revealed, not new** (1):" in body and 'print("model done")' in body
    assert "in `train`, `infer`" in body
    assert "🆕 New" not in body
