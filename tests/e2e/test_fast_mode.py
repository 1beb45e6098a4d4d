"""Fast mode swaps every way of compiling to the capturing backend; faithful mode leaves them."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace

import pytest

from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import parse_config
from gbbot.core.model import Mode, Status

PROGRAM = textwrap.dedent("""\
    import json, torch

    called = []

    def backend(gm, example_inputs):
        called.append(1)
        return gm.forward

    @torch.compile(backend=backend, mode=None)
    def decorated(x):
        return x + 1

    def plain(x):
        return x * 2

    class Net(torch.nn.Module):
        def forward(self, x):
            return x - 1

    net = Net()
    net.compile(backend=backend)
    x = torch.ones(2)
    decorated(x), torch.compile(plain, backend=backend)(x), net(x)
    torch._dynamo.optimize(backend)(lambda t: t / 2)(x)
    json.dump({"own_backend_calls": len(called)}, open("calls.json", "w"))
""")


@pytest.mark.parametrize(("mode", "calls"), [(Mode.FAST, 0), (Mode.FAITHFUL, 4)])
def test_every_compile_path_is_swapped_in_fast_mode_only(tmp_path, mode, calls):
    (tmp_path / "prog.py").write_text(PROGRAM)
    config = parse_config("version: 1\nentrypoints: [{name: prog, run: python prog.py}]\n")
    (entry,) = check(tmp_path, config, CheckOptions(mode=mode)).entrypoints
    assert entry.status is Status.OK, entry.error
    assert json.loads((tmp_path / "calls.json").read_text()) == {"own_backend_calls": calls}
    assert entry.graph_count == 4  # the graphs were still captured


SETTINGS = textwrap.dedent("""\
    import gc, json, torch
    import torch._dynamo.guards as guards

    torch.compile(lambda x: x + 1)(torch.ones(2))
    json.dump({"threshold": gc.get_threshold()[0], "frozen": gc.get_freeze_count() > 0,
               "guard_latency_timed": guards.profile_guard_manager.__name__ != "_no_guard_latency"},
              open("settings.json", "w"))
""")


@pytest.mark.parametrize("warm", [True, False])
@pytest.mark.parametrize("mode", [Mode.FAST, Mode.FAITHFUL])
def test_fast_mode_spares_the_collector_and_the_guard_timing_faithful_mode_leaves_both(tmp_path, mode, warm):
    (tmp_path / "prog.py").write_text(SETTINGS)
    config = parse_config("version: 1\nentrypoints: [{name: prog, run: python prog.py}]\n")
    config = replace(config, runner=replace(config.runner, warm=warm))
    (entry,) = check(tmp_path, config, CheckOptions(mode=mode)).entrypoints
    assert entry.status is Status.OK, entry.error
    settings = json.loads((tmp_path / "settings.json").read_text())
    if mode is Mode.FAST:  # what torch had made when Dynamo came is out of the collector's sight
        assert settings == {"threshold": 50_000, "frozen": True, "guard_latency_timed": False}
    else:
        assert settings == {"threshold": 700, "frozen": False, "guard_latency_timed": True}
