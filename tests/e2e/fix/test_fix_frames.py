"""`gbbot fix` where the break's frame is a caller's: a logger in a block that `Model.forward`'s loop
calls (`torch.compile(model)`) sends `Model.forward` to eager, and the `print` after the loop shows
up only once the logger is guarded. Round 1 fixes the logger (the print is revealed, not a new
break that would drop the fix), round 2 the print. Real torch, the CLI as a user runs it."""

from __future__ import annotations

import pytest

from tests import blocks_project
from tests.blocks_project import BLOCKS
from tests.cli_helpers import gbbot, write
from tests.conftest import git

ENTRY = blocks_project.ENTRY.format(module="blocks")
CONFIG = "version: 1\nmode: fast\nentrypoints: [{name: m, call: 'entry:main', timeout: 300}]\n"


# The block's method named like the model's (the case) and not: a frame is not a name.
@pytest.mark.parametrize("method", ["forward", "step"])
def test_the_logger_is_fixed_in_round_one_and_the_print_it_revealed_in_round_two(in_git_dir, tmp_path, method):
    blocks = BLOCKS.replace("    def forward(self, x):\n        log", f"    def {method}(self, x):\n        log")
    blocks = blocks.replace("x = block(x)", "x = block(x)" if method == "forward" else f"x = block.{method}(x)")
    write(in_git_dir, {".gbbot.yml": CONFIG, "blocks.py": blocks, "entry.py": ENTRY})
    git(in_git_dir, "add", "-A")
    git(in_git_dir, "commit", "-q", "-m", "blocks")
    run = gbbot(in_git_dir, "fix", "--apply", tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "gbbot fix: round 1: 1 break, fixed 1" in run.stderr
    assert "gbbot fix: round 2: revealed 1 break (GB0059 print at blocks.py:23), fixed 1" in run.stderr
    assert "new break" not in run.stdout + run.stderr
    assert "breaks 1 → 0" in run.stderr and "frames running eagerly 1 → 0" in run.stderr
    assert run.stdout.count("— verified") == 2 and "outputs equal" in run.stdout
    text = (in_git_dir / "blocks.py").read_text()
    assert text.count("if not torch.compiler.is_compiling():") == 2
    check = gbbot(in_git_dir, "check", "--fail-on", "any", tmp=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
