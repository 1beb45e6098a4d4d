"""Fixed, hidden and revealed decided by the frame Dynamo compiled, not by a break's function name:
the patterns where the two differ, each with the break one call below the compiled frame and
`torch.compile` of a module or a bound method. Real torch, real git, `gbbot diff` as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

from tests import blocks_project
from tests.blocks_project import BLOCKS
from tests.cli_helpers import commit_change, gbbot, write

CONFIG = "version: 1\nmode: fast\nentrypoints: [{name: m, call: 'entry:main'}]\n"


def diffed(repo: Path, base: dict[str, str], head: dict[str, str], tmp: Path) -> tuple[dict, str, str]:
    """Commit `base` on main and `head` on a branch; `gbbot diff --base main` → (report JSON,
    markdown, terminal text)."""
    commit_change(repo, {".gbbot.yml": CONFIG, **base}, head, branch="pr")
    out, md = tmp / "report.json", tmp / "report.md"
    run = gbbot(repo, "diff", "--base", "main", "--fail-on", "none", "--json", str(out), "--markdown", str(md), tmp=tmp)
    assert run.returncode == 0, run.stderr
    return json.loads(out.read_text()), md.read_text(), run.stdout


def by_code(data: dict, key: str = "breaks") -> dict[str, dict]:
    return {b["code"]: b for e in data["entrypoints"] for b in e[key]}


# 1. generate() loops over self.net(...); net.forward calls a helper; the PR logs in the helper.

WRAPPER = """\
import torch
from net import Net

class Wrapper(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = Net()

    def generate(self, x):
        for _ in range(3):
            x = self.net(x)
        if x.sum() > 0:  # data-dependent branch
            x = x - 1
        return x
"""
NET = """\
import logging
import torch

log = logging.getLogger("net")

def scale(x):
    return x * 0.5

class Net(torch.nn.Module):
    def forward(self, x):
        return scale(x) + 1
"""
ENTRY_GENERATE = """\
import torch
from wrapper import Wrapper

def main():
    model = Wrapper()
    return torch.compile(model.generate)(torch.ones(4))
"""


def test_a_new_logger_in_a_callee_the_callers_loop_inlines_hides_the_callers_branch(in_git_dir, tmp_path):
    head_net = NET.replace("    return x * 0.5", '    log.warning("scaling")\n    return x * 0.5')
    data, md, terminal = diffed(
        in_git_dir,
        {"wrapper.py": WRAPPER, "net.py": NET, "entry.py": ENTRY_GENERATE},
        {"net.py": head_net},
        tmp_path,
    )
    diff = data["diff"]
    (branch,) = diff["hidden_breaks"]
    assert branch["gb_id"] == "GB0170" and branch["function"] == "Wrapper.generate"
    logger = by_code(data)['log.warning("scaling")']
    assert diff["fixed"] == [] and diff["new"] == [logger["fingerprint"]]
    assert diff["hidden_by"] == {branch["fingerprint"]: logger["fingerprint"]}
    generate = {"file": "wrapper.py", "line": 9, "function": "generate", "qualname": "Wrapper.generate"}
    assert generate in logger["makes_eager"]
    assert "makes `Wrapper.generate` (wrapper.py:9) run eagerly" in md
    assert "1 new, 0 fixed, 1 hidden" in terminal
    assert data["counts"]["hidden"] == 1 and data["counts"]["fixed"] == 0


# 2. Block.forward's logger.debug goes; Router.forward, same file, runs eagerly on both sides.

MODEL = """\
import logging
import torch

log = logging.getLogger("model")

def note(x):
    log.debug("block")
    return x

class Block(torch.nn.Module):
    def forward(self, x):
        x = note(x)
        return x + 1

class Router(torch.nn.Module):
    def forward(self, x):
        for _ in range(2):
            x = x * 2
            torch._dynamo.graph_break()
        return x

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.router = Router()

    def forward(self, x):
        return self.router(self.block(x))
"""
ENTRY_MODEL = """\
import torch
from model import Model

def main():
    return torch.compile(Model())(torch.ones(4))
"""


def test_a_deleted_break_is_fixed_though_another_forward_in_its_file_runs_eagerly(in_git_dir, tmp_path):
    data, md, _ = diffed(
        in_git_dir,
        {"model.py": MODEL, "entry.py": ENTRY_MODEL},
        {"model.py": MODEL.replace('    log.debug("block")\n', "")},
        tmp_path,
    )
    diff = data["diff"]
    (fixed,) = diff["fixed_breaks"]
    assert fixed["code"] == 'log.debug("block")'
    assert diff["hidden"] == [] and diff["new"] == []
    router = by_code(data)["torch._dynamo.graph_break()"]
    assert router["fingerprint"] in diff["persisting"]
    assert "This PR fixes **1** graph break." in md and "hidden, not fixed" not in md


# 3. logger in a block that Model.forward's loop calls hides the print after the loop.

ENTRY_BLOCKS = blocks_project.ENTRY.format(module="blocks")


def test_the_print_a_guarded_logger_reveals_is_revealed_not_new(in_git_dir, tmp_path):
    guarded = BLOCKS.replace(blocks_project.LOGGER, blocks_project.GUARDED)
    data, md, terminal = diffed(
        in_git_dir, {"blocks.py": BLOCKS, "entry.py": ENTRY_BLOCKS}, {"blocks.py": guarded}, tmp_path
    )
    diff = data["diff"]
    printed = by_code(data)['print("model done")']
    assert diff["revealed"] == [printed["fingerprint"]] and diff["new"] == []
    assert [b["code"] for b in diff["fixed_breaks"]] == ['log.debug("block")']
    assert data["counts"]["revealed"] == 1 and data["counts"]["new"] == 0
    assert "1 graph break revealed, not new" in md and "0 new, 1 fixed" in terminal and "1 revealed" in terminal


def test_the_logger_names_the_models_frame_it_makes_run_eagerly(in_git_dir, tmp_path):
    write(in_git_dir, {".gbbot.yml": CONFIG, "blocks.py": BLOCKS, "entry.py": ENTRY_BLOCKS})
    out, md = tmp_path / "r.json", tmp_path / "r.md"
    run = gbbot(in_git_dir, "check", "--fail-on", "none", "--json", str(out), "--markdown", str(md), tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    (logger,) = data["entrypoints"][0]["breaks"]
    model = {"file": "blocks.py", "line": 20, "function": "forward", "qualname": "Model.forward"}
    assert logger["function"] == "Block.forward" and logger["makes_eager"] == [model]
    # hit once in each frame it was traced in: Model.forward's compile it ended, Block.forward's it split
    assert logger["frames"][0] == model and logger["count"] == len(logger["frames"]) == 2
    frames = {f["frame"]["qualname"]: f for f in data["entrypoints"][0]["frames"]}
    assert frames["Model.forward"]["eager"] and frames["Model.forward"]["eager_by"] == logger["fingerprint"]
    assert not frames["Block.forward"]["eager"]
    assert data["counts"]["frames_eager"] == 1
    assert "makes `Model.forward` (blocks.py:20) run eagerly" in md.read_text()
    assert "makes Model.forward (blocks.py:20) run eagerly" in run.stdout.replace("\n", " ").replace("│", "")


# 4. an .item() three calls below a method compiled from another module names that method's frame.

SYNTH = """\
import torch

def width_of(t):
    return int(t[0].item())

def cut(x, sizes):
    return x[: width_of(sizes)]

def shape(x, sizes):
    return cut(x, sizes) * 2

class Synth(torch.nn.Module):
    def synthesize(self, x, sizes):
        return shape(x, sizes) + 1
"""
ENTRY_SYNTH = """\
import torch
from lib.synth import Synth

def main():
    model = Synth()
    return torch.compile(model.synthesize)(torch.ones(8), torch.tensor([3]))
"""


def test_a_break_three_calls_below_a_compiled_method_names_the_methods_frame(in_git_dir, tmp_path):
    write(in_git_dir, {".gbbot.yml": CONFIG, "lib/__init__.py": "", "lib/synth.py": SYNTH, "entry.py": ENTRY_SYNTH})
    out = tmp_path / "r.json"
    run = gbbot(in_git_dir, "check", "--fail-on", "none", "--json", str(out), tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    (item,) = json.loads(out.read_text())["entrypoints"][0]["breaks"]
    assert (item["gb_id"], item["function"]) == ("GB0124", "width_of")
    assert item["frames"][0] == {
        "file": "lib/synth.py",
        "line": 13,
        "function": "synthesize",
        "qualname": "Synth.synthesize",
    }
    assert not any("gbbot" in f["file"] or f["file"].startswith("<frozen") for f in item["user_stack"])


# 5. a compile that raises (a shape mismatch, wrong in eager too) is the entrypoint's failure.

CRASH = """\
import torch

def project(x, w):
    return x @ w

def main():
    return torch.compile(project)(torch.ones(2, 3), torch.ones(4, 5))
"""
STEP = """\
import torch

def step(x):
    x = x + 1
    return x * 2

def main():
    return torch.compile(step)(torch.ones(2))
"""
TWO = "version: 1\nmode: fast\nentrypoints: [{name: crash, call: 'crash:main'}, {name: step, call: 'step:main'}]\n"


def test_a_compile_error_on_both_sides_is_still_failing_and_never_a_new_break(in_git_dir, tmp_path):
    from gbbot.action.outputs import counts
    from gbbot.analysis import report

    printed = {"step.py": STEP.replace("    x = x + 1\n", '    x = x + 1\n    print("step")\n')}
    commit_change(in_git_dir, {".gbbot.yml": TWO, "crash.py": CRASH, "step.py": STEP}, printed, branch="pr")
    out, md = tmp_path / "r.json", tmp_path / "r.md"
    run = gbbot(
        in_git_dir,
        "diff",
        "--base",
        "main",
        "--fail-on",
        "none",
        "--json",
        str(out),
        "--markdown",
        str(md),
        tmp=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(out.read_text())
    crash = next(e for e in data["entrypoints"] if e["name"] == "crash")
    assert crash["status"] == "failed" and crash["breaks"] == []
    assert (crash["compile_error"]["gb_id"], crash["compile_error"]["category"]) == ("GB4315", "USER_ERROR")
    assert (crash["compile_error"]["file"], crash["compile_error"]["line"]) == ("crash.py", 4)
    (crash_diff,) = [e for e in data["diff"]["entrypoints"] if e["name"] == "crash"]
    assert crash_diff["no_baseline"] is None and "still failing (same error as the base)" in crash_diff["still_failing"]
    assert data["counts"]["new"] == 1 and data["counts"]["distinct"] == 1
    assert counts(report.from_json(data))["new-breaks"] == "1"
    text = md.read_text()
    assert "compile error GB4315 (USER_ERROR) at crash.py:4 in project" in text  # its fold's summary
    assert "`crash` still fails with the same compile error as the base: GB4315 at `crash.py:4`." in text
    assert "⚠️" not in text and "torch/_dynamo/" not in text and "fullgraph" not in text
    assert "crash: failed: compile error GB4315 (USER_ERROR) at crash.py:4 in project" in run.stdout.replace("\n", " ")
