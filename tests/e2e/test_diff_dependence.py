"""A break the pull request brings into a frame that already ran eagerly on the base is new, not
revealed: the patterns one call deeper than a line in the compiled function. Each entrypoint is
a compiled `generate` whose loop calls a model and ends in a data-dependent `if` (so `generate`
runs eagerly on the base); the head adds a debug call somewhere the loop reaches — a third-party
logging package (inside it the break is raised), the standard `logging` module, in the loop's
method, in `generate` itself, in a plain helper function. And the decorator pattern: the head
wraps a block's `forward` in `torch.compiler.disable`, so the unchanged call line breaks. Real
torch, real git, one `gbbot diff` for all (the runs are shared)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from tests import blocks_project
from tests.cli_helpers import gbbot, write
from tests.conftest import git

# A logging package installed beside the others: its `debug` writes to a stream Dynamo cannot
# trace, so the break is raised inside it, under the repository line that calls it.
TINYLOG = """\
import sys

LEVEL = 10


def debug(message):
    if LEVEL <= 10:
        sys.stderr.write("[debug] " + message + "\\n")
"""

# {call} is the loop's call into the model; {net} the line the head adds in the model's forward,
# {loop} the one it adds in the loop itself, {helper} the one it adds in the helper.
GENERATE = """\
import functools
import logging
import torch
import tinylog

log = logging.getLogger(__name__)


def eval_mode(fn):
    @functools.wraps(fn)
    def inner(self, *args, **kwargs):
        was_training = self.training
        self.eval()
        out = fn(self, *args, **kwargs)
        self.train(was_training)
        return out

    return inner


def shift(x):
{helper}    return x + 1


class Net(torch.nn.Module):
    def forward(self, x):
{net}        return x * 0.5 + 1


class Gen(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = Net()

{decorator}    def generate(self, x):
        for _ in range(4):
{loop}            x = shift(self.net(x))
            if (x > 100).any().all():
                break
        return x


def main():
    return torch.compile(Gen().generate)(torch.ones(2, 4))
"""
ADDED = {
    "lib_forward": {"net": '        tinylog.debug(f"net {tuple(x.shape)}")\n'},
    "logging_forward": {"net": '        log.warning(f"net {tuple(x.shape)}")\n'},
    "lib_generate": {"loop": '            tinylog.debug(f"step {tuple(x.shape)}")\n'},
    "logging_helper": {"helper": '    log.warning(f"shift {tuple(x.shape)}")\n'},
}
ADDED_CODE = {
    "lib_forward": 'tinylog.debug(f"net {tuple(x.shape)}")',
    "logging_forward": 'log.warning(f"net {tuple(x.shape)}")',
    "lib_generate": 'tinylog.debug(f"step {tuple(x.shape)}")',
    "logging_helper": 'log.warning(f"shift {tuple(x.shape)}")',
}


def generate_module(name: str, added: dict[str, str]) -> str:
    """`lib_forward`'s `generate` is decorated as x-transformers' is (`@eval_decorator`): Dynamo
    traces the decorator's frame on both sides, and inlines `generate` into it first."""
    decorator = "    @eval_mode\n" if name == "lib_forward" else ""
    return GENERATE.format(**{"net": "", "loop": "", "helper": "", "decorator": decorator, **added})


# The decorator: a logger in the block sends Model.forward to eager on the base; the head wraps
# the block's forward in torch.compiler.disable.
DISABLED = blocks_project.BLOCKS.replace(
    "    def forward(self, x):\n        log", "    @torch.compiler.disable\n    def forward(self, x):\n        log"
)


# An entrypoint whose module imports a helper the user has not committed yet: the base's checkout
# lacks it, so the base cannot run the entrypoint, and its break has nothing to compare with.
WRAPPED = """\
import torch
from wrapper import wrap


def main():
    return torch.compile(wrap)(torch.ones(2))
"""
WRAPPER = """\
def wrap(x):
    x = x + 1
    print("wrapped")
    return x * 2
"""


@dataclass(frozen=True)
class Diffed:
    data: dict
    markdown: str
    stdout: str
    returncode: int

    def entry(self, name: str) -> dict:
        return next(e for e in self.data["diff"]["entrypoints"] if e["name"] == name)

    def breaks(self, name: str) -> dict[str, dict]:
        (entry,) = [e for e in self.data["entrypoints"] if e["name"] == name]
        return {b["code"]: b for b in entry["breaks"]}


@pytest.fixture(scope="module")
def diffed(tmp_path_factory) -> Diffed:
    tmp = tmp_path_factory.mktemp("dependence")
    site = tmp / "env" / "lib" / "site-packages"
    write(site, {"tinylog/__init__.py": TINYLOG})
    env = f"env: {{PYTHONPATH: '{site}'}}"
    names = [*ADDED, "disabled", "wrapped"]
    entries = "".join(f"  - {{name: {n}, call: '{n}:main', {env}}}\n" for n in ADDED)
    entries += f"  - {{name: disabled, call: 'disabled_entry:main', {env}}}\n"
    entries += "  - {name: wrapped, call: 'wrapped:main'}\n"
    repo = tmp / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    base = {f"{n}.py": generate_module(n, {}) for n in ADDED}
    base |= {"blocks.py": blocks_project.BLOCKS, "disabled_entry.py": blocks_project.ENTRY.format(module="blocks")}
    base |= {"wrapped.py": WRAPPED}
    write(repo, {".gbbot.yml": f"version: 1\nmode: fast\nfail_on: new\nentrypoints:\n{entries}", **base})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    write(repo, {**{f"{n}.py": generate_module(n, ADDED[n]) for n in ADDED}, "blocks.py": DISABLED})
    git(repo, "commit", "-qam", "debug output, a disabled block")
    write(repo, {"wrapper.py": WRAPPER})  # never committed
    out, md = tmp / "report.json", tmp / "report.md"
    run = gbbot(repo, "diff", "--base", "main", "--json", str(out), "--markdown", str(md), tmp=tmp)
    assert out.exists(), run.stderr
    data = json.loads(out.read_text())
    assert [e["name"] for e in data["entrypoints"]] == names, run.stderr
    return Diffed(data, md.read_text(), run.stdout, run.returncode)


@pytest.mark.parametrize("name", list(ADDED))
def test_a_debug_call_the_head_adds_where_the_loop_reaches_is_new_and_hides_the_bases_branch(diffed, name):
    added = diffed.breaks(name)[ADDED_CODE[name]]
    entry = diffed.entry(name)
    assert entry["new"] == [added["fingerprint"]] and entry["revealed"] == []
    # the base's data-dependent branch is no longer reached: hidden by the new break, not fixed
    (branch,) = entry["hidden"]
    assert entry["fixed"] == [] and diffed.data["diff"]["hidden_by"][branch] == added["fingerprint"]
    assert added["fingerprint"] in diffed.data["diff"]["new"]


def test_inside_a_library_the_break_is_the_packages_under_the_line_the_head_added(diffed):
    added = diffed.breaks("lib_forward")[ADDED_CODE["lib_forward"]]
    assert added["origin"] == "third_party" and added["function"] == "Net.forward"
    assert (added["library_site"]["package"], added["library_site"]["function"]) == ("tinylog", "debug")


def test_the_call_line_a_disabled_callee_now_breaks_at_is_new(diffed):
    entry = diffed.entry("disabled")
    called = diffed.breaks("disabled")["x = block(x)"]
    assert called["gb_id"] == "GB0099" and called["function"] == "Model.forward"
    assert entry["new"] == [called["fingerprint"]] and entry["revealed"] == []


def test_fail_on_new_fails_and_says_how_many_the_pr_adds(diffed):
    assert diffed.returncode == 1
    counts = diffed.data["counts"]
    # the five the change adds, and `wrapped`'s, which the base could not run: unknown is new
    assert counts["new"] == 6 and counts["revealed"] == 0 and counts["fixed"] == 0
    assert "This PR adds **6** graph breaks" in diffed.markdown
    assert "revealed, not new" not in diffed.markdown


def test_a_base_that_lacks_an_untracked_module_says_so_and_its_break_is_new(diffed):
    """The comparison could not be made: nothing shows the break on the base, so it is new."""
    entry = diffed.entry("wrapped")
    assert entry["no_baseline"].startswith("no baseline for `wrapped` on base ")
    assert (
        "`wrapper.py` is only in the working tree (untracked), so the base's checkout lacks it" in entry["no_baseline"]
    )
    assert "No module named 'wrapper'" in entry["no_baseline"]
    assert entry["no_baseline"].endswith("; the comparison could not be made, so its graph break counts as new")
    (printed,) = diffed.breaks("wrapped").values()
    assert entry["new"] == [printed["fingerprint"]] and printed["fingerprint"] in diffed.data["diff"]["new"]
    assert "only in the working tree (untracked)" in diffed.markdown
