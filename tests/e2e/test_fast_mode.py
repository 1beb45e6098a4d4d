"""Fast mode swaps every way of compiling to the capturing backend; faithful mode leaves them."""

from __future__ import annotations

import json
import textwrap

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
