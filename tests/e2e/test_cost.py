"""What each break costs, measured in the run that found it: a compiled model called in a loop of N
steps, with its break one call deeper than the model's own forward, says on its card and in the
JSON how many times its eager part ran and how many graphs ran per call, and those numbers follow
N; a break in a frame entered once ranks below it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from gbbot.main import main

PROGRAM = textwrap.dedent("""\
    import sys, torch

    def note(t):
        print("block done")  # the break: in a helper Dynamo inlines into Block.forward

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(8, 8)

        def forward(self, x):
            y = self.linear(x).relu()
            note(y)
            return self.linear(y).sigmoid()

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.head = torch.nn.Linear(8, 2)

        def forward(self, x):
            return self.head(self.block(x))

    def setup(x):
        x = x * 2
        torch._dynamo.graph_break()  # entered once
        return x + 1

    torch.manual_seed(0)
    torch.compile(setup)(torch.ones(2))
    model = torch.compile(Model())
    for _ in range(int(sys.argv[1])):
        model(torch.ones(4, 8))
""")


def costs(tmp_path: Path, steps: int) -> tuple[list[dict], str]:
    repo = tmp_path / f"steps-{steps}"
    repo.mkdir()
    (repo / "train.py").write_text(PROGRAM)
    (repo / ".gbbot.yml").write_text(f"version: 1\nentrypoints: [{{name: train, run: python train.py {steps}}}]\n")
    out = ["--json", str(repo / "report.json"), "--markdown", str(repo / "report.md")]
    assert main(["check", "--root", str(repo), "--quiet", "--fail-on", "none", *out]) == 0
    entry = json.loads((repo / "report.json").read_text())["entrypoints"][0]
    return entry, (repo / "report.md").read_text()


@pytest.mark.parametrize("steps", [3, 7])
def test_a_break_called_in_a_loop_says_how_often_it_ran_and_ranks_above_one_run_once(tmp_path, steps):
    entry, card = costs(tmp_path, steps)
    loop, once = entry["breaks"]  # measured order: the break paid on every step first
    assert (loop["function"], once["function"]) == ("note", "setup")
    assert loop["cost"]["entries"] == steps and once["cost"]["entries"] == 1
    per_call = loop["cost"]["launches_per_call"]
    assert per_call >= 2  # the forward it broke runs as several graphs on every call
    assert f"graph launches and eager code between on each of {steps} calls" in card
    assert f"{per_call:g} graph launches" in card
    assert "on its one call" in card  # setup's break
    runs, frames = entry["runs"], {(f["frame"]["function"], f["frame"]["line"]): f for f in entry["frames"]}
    assert runs["calls"] == steps + 1  # the model's calls and setup's one
    assert runs["graph_launches"] == sum(sum(f["graph_runs"]) for f in frames.values())
    # each compiled frame: Model.forward and Block.forward entered on every step, setup once; note
    # made no graph and is no compiled callable, so nothing counted its entries
    by_line = sorted(frames.items(), key=lambda item: item[0][1])
    entered = [(function, f["entries"]) for (function, _), f in by_line]
    assert entered == [("note", None), ("forward", steps), ("forward", steps), ("setup", 1)]
    assert all(f["compile_time_s"] > 0 for f in frames.values())
