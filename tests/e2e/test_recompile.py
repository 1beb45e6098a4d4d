"""Recompilations with real torch: what a user sees for frames Dynamo compiles more than once."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from gbbot.analysis import recompile, report
from gbbot.analysis.policy import Policy
from gbbot.core.model import Recompilation
from tests.builders import states
from tests.cli_helpers import commit_change, gbbot_here, write

MODELS = """\
import torch


def repeat(x, n):
    for _ in range(n):
        x = x + 1
    return x


# range() specialises n: every new value compiles `repeat` again.
def int_argument():
    step = torch.compile(repeat)
    for n in range(1, 5):
        step(torch.ones(3), n)


def at_the_limit():
    torch._dynamo.config.recompile_limit = 2
    step = torch.compile(repeat)
    for n in range(1, 6):
        step(torch.ones(3), n)


def scale(x):
    return x * 2


def dtype_flip():
    fn = torch.compile(scale)
    fn(torch.ones(3))
    fn(torch.ones(3, dtype=torch.float64))


def grow(x):
    return x.cos()


def growing_batch():
    fn = torch.compile(grow)
    for size in (3, 5, 7, 9):
        fn(torch.ones(size))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x).relu()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        return self.block(x) * 2


# A training loop that evaluates under no_grad: the compiled module (not a function) recompiles
# once for the other grad mode; the guard is Net.forward's, Block.forward is inlined into it.
def train_and_evaluate():
    model = torch.compile(Net())
    for _ in range(2):
        model(torch.ones(2, 3)).sum().backward()
        with torch.no_grad():
            model(torch.ones(2, 3))


def total(xs):
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out


def list_lengths():
    fn = torch.compile(total)
    fn([torch.ones(2)] * 2)
    fn([torch.ones(2)] * 3)
"""

CONFIG = """\
version: 1
entrypoints:
  - {name: int_argument, call: "models:int_argument"}
  - {name: at_the_limit, call: "models:at_the_limit"}
  - {name: dtype_flip, call: "models:dtype_flip"}
  - {name: growing_batch, call: "models:growing_batch"}
  - {name: train_and_evaluate, call: "models:train_and_evaluate"}
  - {name: list_lengths, call: "models:list_lengths"}
"""


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> report.Report:
    repo = tmp_path_factory.mktemp("recompiles")
    write(repo, {"models.py": MODELS, ".gbbot.yml": CONFIG})
    done = gbbot_here(repo, "check", "--json", "report.json", "--jobs", "2")
    assert done.returncode in (0, 1), done.stderr
    return report.load(repo / "report.json")


def only(result: report.Report, name: str):
    entry = next(e for e in result.entrypoints if e.name == name)
    assert entry.status.value == "ok", entry.error
    assert len(entry.recompiles) == 1, entry.recompiles
    return entry.recompiles[0]


def test_an_int_argument_that_changes_every_call_recompiles_every_call(checked):
    rc = only(checked, "int_argument")
    assert (rc.file, rc.line, rc.function, rc.compilations, rc.limit_hit) == ("models.py", 4, "repeat", 4, False)
    (reason,) = rc.reasons
    assert reason.kind == "int_argument" and not reason.dynamic and reason.count == 3
    assert reason.guard.startswith("n == ") and (reason.line, reason.code) == (5, "for _ in range(n):")
    assert "mark_dynamic" in reason.advice and not rc.info_only


def test_a_frame_at_the_recompile_limit_falls_back_to_eager(checked):
    rc = only(checked, "at_the_limit")
    assert rc.limit_hit and rc.compilations == 2
    entry = next(e for e in checked.entrypoints if e.name == "at_the_limit")
    assert entry.frames_skipped == 1
    assert all(not rc.limit_hit for e in checked.entrypoints if e.name != "at_the_limit" for rc in e.recompiles)


def test_a_dtype_flip_is_named_with_its_advice(checked):
    rc = only(checked, "dtype_flip")
    (reason,) = rc.reasons
    assert (rc.function, rc.compilations, reason.kind, reason.dynamic) == ("scale", 2, "dtype", False)
    assert "dtype mismatch" in reason.guard and "Cast `x` to one dtype" in reason.advice


def test_automatic_dynamic_recompiles_once_and_is_info_not_a_problem(checked):
    rc = only(checked, "growing_batch")
    (reason,) = rc.reasons
    assert rc.compilations == 2, "four sizes, but after the first change the size is dynamic"
    assert reason.kind == "shape" and reason.dynamic and rc.info_only
    assert recompile.problems([rc]) == {}, "nothing for the diff or the policy to count"


def test_limit_first_then_by_count_in_every_rendering(checked):
    from gbbot.render import markdown

    text = markdown.render(checked)
    section = text[text.index("### Recompilations") :]
    assert (
        section.index("hit the recompile limit")
        < section.index("`scale`")
        < section.index("automatic dynamic shapes at work")
    )
    assert "Recompilation documentation" in section


def test_without_a_baseline_a_frame_at_the_limit_fails_the_default_policy(checked):
    assert Policy.of("new").recompiles == "limit"
    assert "newly at the recompile limit" in Policy.of("new").verdict(checked).reason
    assert Policy.of("none").verdict(checked).passed


def test_fast_and_faithful_mode_count_the_same_recompilations(checked, tmp_path):
    write(tmp_path, {"models.py": MODELS, ".gbbot.yml": CONFIG})
    done = gbbot_here(
        tmp_path, "check", "--mode", "faithful", "-e", "at_the_limit", "-e", "dtype_flip", "--json", "f.json"
    )
    assert done.returncode in (0, 1), done.stderr
    faithful = report.load(tmp_path / "f.json")
    assert faithful.mode.value == "faithful" and checked.mode.value == "fast"
    for name in ("at_the_limit", "dtype_flip"):
        fast, slow = only(checked, name), only(faithful, name)
        assert (fast.compilations, fast.limit_hit, [r.kind for r in fast.reasons]) == (
            slow.compilations,
            slow.limit_hit,
            [r.kind for r in slow.reasons],
        )


# --- diff and policy -------------------------------------------------------------------------

BASE = """\
import torch


def repeat(x, n):
    for _ in range(n):
        x = x + 1
    return x


def main():
    step = torch.compile(repeat)
    for n in range(1, 4):
        step(torch.ones(3), n)
"""

HEAD = """\
import torch

# Lines added above every frame: fingerprints must not move with them.
PADDING = 1


def repeat(x, n):
    for _ in range(n):
        x = x + 1
    return x


def scale(x):
    return x * 2


def main():
    step = torch.compile(repeat)
    for n in range(1, 4):
        step(torch.ones(3), n)
    fn = torch.compile(scale)
    fn(torch.ones(3))
    fn(torch.ones(3, dtype=torch.float64))
"""


def test_diff_marks_the_heads_recompile_new_and_the_shifted_one_persisting(in_git_dir, tmp_path):
    config = "version: 1\nentrypoints: [{name: main, call: 'app:main'}]\nfail_on: {breaks: new, recompiles: new}\n"
    commit_change(in_git_dir, {"app.py": BASE, ".gbbot.yml": config}, {"app.py": HEAD})

    done = gbbot_here(in_git_dir, "diff", "--base", "main", "--json", str(tmp_path / "d.json"), tmp=tmp_path)
    result = report.load(tmp_path / "d.json")
    by_function = {rc.function: rc for rc in result.entrypoints[0].recompiles}
    assert set(by_function) == {"repeat", "scale"}
    changes = states(result.diff.recompiles)
    assert changes.persisting == (by_function["repeat"].reasons[0].fingerprint,)
    assert changes.new == (by_function["scale"].reasons[0].fingerprint,) and changes.fixed == ()
    assert done.returncode == 1 and "fail_on.recompiles=new: 1 recompilation problem" in done.stderr
    assert "Recompilations" in done.stdout


# --- code a new break makes Dynamo compile, beside a frame the base recompiles ----------------

# A small U-Net whose levels share one class per layer (one code object for several sizes), a
# model that loops once per row, and a dtype flip the base already recompiles. The head adds a
# debug print in `Block.forward` and one in the middle of `Net.forward`.
CHANGED_BASE = """\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.proj = nn.Conv2d(dim_in, dim_out, 3, padding=1)

    def forward(self, x):
        x = self.proj(x)
        return x.relu()


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.to_out = nn.Conv2d(dim, dim, 1)

    def forward(self, x):
        return self.to_out(x.softmax(dim=1))


class ResnetBlock(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.mlp = nn.Sequential(nn.SiLU(), nn.Linear(8, dim_out))
        self.block1 = Block(dim_in, dim_out)
        self.res = nn.Conv2d(dim_in, dim_out, 1)

    def forward(self, x, t):
        h = self.block1(x)
        h = h + self.mlp(t)[:, :, None, None]
        return h + self.res(x)


class Unet(nn.Module):
    def __init__(self):
        super().__init__()
        dims = [(3, 4), (4, 4), (4, 8), (8, 8)]
        self.downs = nn.ModuleList(nn.ModuleList([ResnetBlock(a, b), Attention(b), nn.MaxPool2d(2)]) for a, b in dims)

    def forward(self, x, t):
        for resnet, attn, pool in self.downs:
            x = resnet(x, t)
            x = attn(x)
            x = pool(x)
        return x


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        steps = x.shape[0]
        y = self.lin(x)
        for _ in range(steps):
            y = y + 1
        return y


def scale(x):
    return x * 2


def main():
    torch.manual_seed(0)
    unet = torch.compile(Unet().eval())
    with torch.no_grad():
        unet(torch.ones(1, 3, 32, 32), torch.ones(1, 8))
    net = torch.compile(Net())
    for size in (2, 3, 5, 7):
        net(torch.ones(size, 4))
    fn = torch.compile(scale)
    fn(torch.ones(3))
    fn(torch.ones(3, dtype=torch.float64))
"""
# In the U-Net the print makes `Unet.forward` run eagerly (a break in its loop), so Dynamo compiles
# each layer's function on its own, once per size; in `Net`, the rest of `forward` becomes a resume
# function that gets `steps` as an int and compiles again per value.
CHANGED_HEAD = CHANGED_BASE.replace(
    "        x = self.proj(x)\n", '        x = self.proj(x)\n        print("block", x.shape)\n'
).replace("        y = self.lin(x)\n", '        y = self.lin(x)\n        print("steps", steps)\n')
CHANGED_CONFIG = "version: 1\nentrypoints: [{name: main, call: 'app:main'}]\nfail_on: {breaks: none, recompiles: new}\n"


@dataclass(frozen=True)
class Changed:
    done: subprocess.CompletedProcess  # `gbbot diff` at 100 columns
    result: report.Report
    markdown: str
    torch_logs: str  # the head's TORCH_LOGS=recompiles


@pytest.fixture(scope="module")
def changed(tmp_path_factory) -> Changed:
    tmp = tmp_path_factory.mktemp("changed")
    repo = tmp / "repo"
    repo.mkdir()
    commit_change(repo, {"app.py": CHANGED_BASE, ".gbbot.yml": CHANGED_CONFIG}, {"app.py": CHANGED_HEAD})
    md = tmp / "d.md"
    done = gbbot_here(
        repo,
        "diff",
        "--base",
        "main",
        "--json",
        str(tmp / "d.json"),
        "--markdown",
        str(md),
        tmp=tmp,
        env={"COLUMNS": "100"},
    )
    assert done.returncode == 0, done.stderr
    # the same compiles as gbbot's fast mode (Dynamo's guards do not depend on the backend), without
    # building kernels
    eager = "import functools, torch; torch.compile = functools.partial(torch.compile, backend='eager')"
    logs = subprocess.run(
        [sys.executable, "-c", f"{eager}; import app; app.main()"],
        cwd=repo,
        env={**os.environ, "TORCH_LOGS": "recompiles"},
        capture_output=True,
        text=True,
        check=True,
    )
    return Changed(done, report.load(tmp / "d.json"), md.read_text(), logs.stderr)


def by_function(result: report.Report) -> dict[str, Recompilation]:
    return {rc.function: rc for rc in result.entrypoints[0].recompiles}


def test_code_a_new_break_makes_dynamo_compile_recompiles_as_the_breaks_not_as_new_problems(changed):
    new = {c.brk.code: c.brk for c in changed.result.diff.changes if c.state.value == "new"}
    block, steps = new['print("block", x.shape)'], new['print("steps", steps)']
    assert (block.function, block.line, steps.function) == ("Block.forward", 12, "Net.forward")
    made = {name: rc.new_break for name, rc in by_function(changed.result).items()}
    assert made == {
        "Block.forward": block.fingerprint,  # compiled on its own, and its resume function
        "ResnetBlock.forward": block.fingerprint,
        "Attention.forward": block.fingerprint,  # no break in it: its caller runs eagerly
        "Net.forward": steps.fingerprint,  # a resume function of a frame the base compiled
        "scale": None,
    }
    compared = states(changed.result.diff.recompiles)
    assert compared.new == () and len(compared.by_new_break) >= 3
    # The policy on recompilations passes; no view advises mark_dynamic for any of them.
    assert "mark_dynamic" not in changed.done.stdout and "mark_dynamic" not in changed.markdown
    assert "recompiles because of the new break at `app.py:12`: Dynamo compiles this function on its own" in (
        changed.markdown
    )
    assert "`Net.forward` recompiles because of it (a resume function Dynamo made after it)" in changed.markdown


def test_only_the_frame_the_base_recompiled_recompiles_as_on_the_base(changed):
    md = changed.markdown
    folded = md[md.index("<details><summary>1 frame recompiles as on the base</summary>") :]
    folded = folded[: folded.index("</details>")]
    assert "in `scale` compiled 2×" in folded and "forward" not in folded
    assert states(changed.result.diff.recompiles).persisting == (
        by_function(changed.result)["scale"].reasons[0].fingerprint,
    )


def qualnames(source: str) -> dict[int, str]:
    """First line → qualified name of each function in `source` (methods one class deep)."""
    names, owner = {}, ""
    for number, line in enumerate(source.splitlines(), 1):
        if line.startswith("class "):
            owner = line.removeprefix("class ").split("(")[0]
        elif line.startswith(("def ", "    def ")):
            name = line.split("def ")[1].split("(")[0]
            names[number] = f"{owner}.{name}" if line.startswith(" ") else name
    return names


def logged_recompiles(torch_logs: str, source: str) -> Counter:
    """(function, failing guard) of each recompile TORCH_LOGS=recompiles printed: the first guard
    under each "Recompiling function", a resume function's put down to the function it resumes."""
    names = qualnames(source)
    found: Counter = Counter()
    lines = torch_logs.splitlines()
    for i, line in enumerate(lines):
        head = re.search(r"Recompiling function (\w+) in .*:(\d+)$", line)
        if head is None:
            continue
        guard = next(m[1] for later in lines[i + 1 :] if (m := re.search(r"- \d+/\d+: (.*)", later)))
        name = re.sub(r"^torch_dynamo_resume_in_(\w+)_at_\d+$", r"\1", head[1])
        first = max(n for n, q in names.items() if n <= int(head[2]) and q.split(".")[-1] == name)
        found[(names[first], one_guard(guard))] += 1
    return found


def one_guard(text: str) -> str:
    """A guard without the values it compared: `steps == 3` and `steps == 5` are one guard."""
    return re.sub(r"== -?\d+$", "== N", text.split("  # ")[0].split(". expected")[0])


def test_each_recompile_is_tallied_under_its_own_failing_guard_as_torch_logs_shows_it(changed):
    shown = Counter()
    for rc in changed.result.entrypoints[0].recompiles:
        for reason in rc.reasons:
            shown[(rc.function, one_guard(reason.guard))] += reason.count
    logged = logged_recompiles(changed.torch_logs, CHANGED_HEAD)
    assert shown == logged
    # one frame, several guards: a size on index 1 and index 2, and a parameter's
    guards = {guard for function, guard in logged if function == "Block.forward"}
    assert any("index 1" in g for g in guards) and any("index 2" in g for g in guards)
    assert any("_parameters['bias']" in g for g in guards)


def test_a_frame_is_named_at_its_first_line_whichever_code_object_recompiled(changed):
    entry = changed.result.entrypoints[0]
    compiled = {f.frame for f in entry.frames}
    for rc in entry.recompiles:
        assert rc.frame in compiled and rc.line == rc.frame.line, rc
    assert by_function(changed.result)["ResnetBlock.forward"].line == 32  # its resume function starts at 33
    assert "app.py:33" not in changed.done.stdout and "app.py:33" not in changed.markdown


# --- config ------------------------------------------------------------------------------------


def test_reports_without_recompiles_still_load(tmp_path: Path, checked):
    data = report.to_json(checked)
    for entry in data["entrypoints"]:
        entry.pop("recompiles")
    assert all(e.recompiles == () for e in report.from_json(data).entrypoints)


def test_evaluation_under_no_grad_in_a_training_loop_is_a_grad_mode_recompile(checked):
    rc = only(checked, "train_and_evaluate")
    (reason,) = rc.reasons
    assert (rc.function, reason.kind, reason.dynamic) == ("Net.forward", "grad_mode", False)
    assert "torch.no_grad()" in reason.cause and "keep its input stable" not in reason.advice


def test_a_list_of_another_length_is_named_with_its_argument(checked):
    rc = only(checked, "list_lengths")
    (reason,) = rc.reasons
    assert reason.kind == "length" and "`xs`" in reason.cause and "torch.stack(xs)" in reason.advice


# An installed package whose function Dynamo compiles on its own: the model's loop breaks, so its
# frame runs eagerly, and each call it makes into the library is a new frame to compile, once per
# pattern string (einops' `rearrange` at the recompile limit, in small).
LIBRARY = """\
def rearrange(x, pattern):
    if pattern == "a":
        return x + 1
    return x * len(pattern)
"""
LIBRARY_CALLER = """\
import torch
import shapeutils


class Net(torch.nn.Module):
    def forward(self, x):
        for pattern in ("a", "bb", "ccc", "dddd"):
            torch._dynamo.graph_break()
            x = shapeutils.rearrange(x, pattern)
        return x


def run():
    torch._dynamo.config.recompile_limit = 2
    net = torch.compile(Net())
    return net(torch.ones(4))
"""


def test_a_library_function_at_the_limit_is_reported_at_the_library_and_the_line_that_called_it(tmp_path):
    site = tmp_path / "env" / "site-packages"
    write(site, {"shapeutils/__init__.py": LIBRARY})
    repo = tmp_path / "repo"
    config = f"version: 1\nentrypoints:\n  - {{name: lib, call: 'models:run', env: {{PYTHONPATH: '{site}'}}}}\n"
    write(repo, {"models.py": LIBRARY_CALLER, ".gbbot.yml": config})
    done = gbbot_here(repo, "check", "--json", "report.json", "--markdown", "report.md", "--fail-on", "none")
    assert done.returncode == 0, done.stderr
    (entry,) = report.load(repo / "report.json").entrypoints
    (rc,) = [r for r in entry.recompiles if r.limit_hit]
    # The repository line the report stands on: the innermost one on the stack Dynamo recorded for
    # the library frame's compile (which leaves out the eager `Net.forward` in between).
    assert (rc.file, rc.line, rc.function) == ("models.py", 16, "run")
    assert rc.library_site is not None
    assert (rc.library_site.package, rc.library_site.path) == ("shapeutils", "shapeutils/__init__.py")
    assert (rc.library_site.line, rc.library_site.function) == (1, "rearrange")
    md = (repo / "report.md").read_text()
    assert "(inside `shapeutils` at `shapeutils/__init__.py:1` in `rearrange`)" in md
    assert "shapeutils/__init__.py:1 rearrange" in done.stdout  # the terminal's table
