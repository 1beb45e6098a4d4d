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
    # the logger's break is met by two compiles (its block's, and Model.forward's, which it sends to
    # eager): two hits, as torch's graph-break log shows them; the overall line agrees with the totals
    assert "breaks 2 → 0, graphs 2 → 1, frames running eagerly 1 → 0 (a final run" in run.stderr
    assert "every round's patches together: removes 2 breaks; graphs 2 → 1; frames running eagerly 1 → 0" in run.stderr
    assert run.stdout.count("— verified") == 2 and "outputs equal" in run.stdout
    text = (in_git_dir / "blocks.py").read_text()
    assert text.count("if not torch.compiler.is_compiling():") == 2
    check = gbbot(in_git_dir, "check", "--fail-on", "any", tmp=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr


# Two breaks in the loop of the compiled frame itself: the print comes first, so Dynamo stops
# there and never looks at what follows it in the loop.
LOOP = blocks_project.MODEL.format(
    name="model", block="", loop='            print("block done")\n{after_print}\n', tail="        return x\n"
)
LOOP_ENTRY = blocks_project.ENTRY.format(module="loop")
ITEM_AFTER = "            scale = x.abs().max().item()\n            x = x / (scale + 1)"
BRANCH_AFTER = "            if x.sum() > 0:\n                x = -x"


def _loop_project(repo, after_print: str) -> None:
    write(repo, {".gbbot.yml": CONFIG, "loop.py": LOOP.format(after_print=after_print), "entry.py": LOOP_ENTRY})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "loop")


def test_a_guard_that_lets_dynamo_reach_an_item_it_then_captures_is_kept_for_round_two(in_git_dir, tmp_path):
    # Alone, the guard leaves `Model.forward` running eagerly (the `.item()` now stops Dynamo);
    # the print is still fixed, not hidden: Dynamo passed its line on the way to the `.item()`.
    _loop_project(in_git_dir, ITEM_AFTER)
    run = gbbot(in_git_dir, "fix", "--apply", tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "gbbot fix: round 2: revealed 1 break (GB0124 item at loop.py:23), fixed 1" in run.stderr
    assert "frames running eagerly 1 → 0" in run.stderr and "only hidden" not in run.stdout
    assert run.stdout.count("— verified") == 2
    assert "capture_scalar_outputs=True" in (in_git_dir / "entry.py").read_text()
    check = gbbot(in_git_dir, "check", "--fail-on", "any", tmp=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_guard_that_only_moves_the_stop_to_a_branch_is_not_a_fix(in_git_dir, tmp_path):
    # The same guard, but what Dynamo reaches next is a data-dependent `if` no recipe rewrites:
    # the frame still runs eagerly and no graph split went away, so nothing is offered.
    _loop_project(in_git_dir, BRANCH_AFTER)
    run = gbbot(in_git_dir, "fix", "--apply", tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "guard: not a fix: Dynamo now stops at GB0170 at loop.py:23 (if x.sum() > 0:) instead" in run.stdout
    assert "frames running eagerly 1 → 1, graphs 2 → 2" in run.stdout
    assert "— verified" not in run.stdout
    assert (in_git_dir / "loop.py").read_text() == LOOP.format(after_print=BRANCH_AFTER)


# The edits a pull request adds while debugging a model (seen on nanoGPT): a logger in the block
# that the model's loop calls, a NaN check in the loop, the loss printed. Each hides the next:
# the logger sends Model.forward to eager; guarded, Dynamo stops at the NaN check; that becomes
# a torch._check (with capture_scalar_outputs at the compile); then the print shows.
DEBUGGED = blocks_project.MODEL.format(
    name="model",
    block='        log.debug("block input %s", tuple(x.shape))\n',
    loop='            if torch.isnan(x).any():\n                raise ValueError("NaN in the activations")\n',
    tail='        loss = x.square().mean()\n        print(f"loss {loss.item():.4f}")\n        return loss\n',
)


def test_three_rounds_each_fixing_what_the_last_revealed_end_with_one_graph(in_git_dir, tmp_path):
    entry = blocks_project.ENTRY.format(module="debugged")
    write(in_git_dir, {".gbbot.yml": CONFIG, "debugged.py": DEBUGGED, "entry.py": entry})
    git(in_git_dir, "add", "-A")
    git(in_git_dir, "commit", "-q", "-m", "debugging")
    run = gbbot(in_git_dir, "fix", "--apply", tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "gbbot fix: round 2: revealed 1 break (GB0170 tensor_branch at debugged.py:23), fixed 1" in run.stderr
    assert "gbbot fix: round 3: revealed 1 break (GB0059 print at debugged.py:26), fixed 1" in run.stderr
    assert "frames running eagerly 1 → 0" in run.stderr and run.stdout.count("— verified") == 3
    text = (in_git_dir / "debugged.py").read_text()
    assert 'torch._check(torch.sym_not(torch.isnan(x).any().item()), lambda: "NaN in the activations")' in text
    assert text.count("if not torch.compiler.is_compiling():") == 2
    assert "capture_scalar_outputs" in (in_git_dir / "entry.py").read_text()
    check = gbbot(in_git_dir, "check", "--fail-on", "any", tmp=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
