"""A Dynamo setting is written where the failing entrypoint compiles, and nowhere it does not.

One project, one `gbbot fix --apply` (its run is shared by the tests):
- `gpt` is a `model:` entry: gbbot compiles `GPT` itself, so its `.item()` break gets
  `capture_scalar_outputs` in the entry's `compile:` option of `.gbbot.yml`, verified (and
  confirmed with the compiler) like any patch, and written by `--apply`;
- `serve` (a `call:` entry) compiles `GPT` in its own module: the setting goes there. `gpt.py` also
  compiles `GPT`, in its `if __name__ == "__main__":` block, which neither entrypoint runs: nothing
  is written there;
- `bench` compiles `Odd` in a way gbbot cannot follow, and `odd.py`'s only `torch.compile` is in
  its `__main__` block: the break gets a one-line reason, no patch;
- `clip`'s break is a data-dependent branch in a function its compiled `forward` calls: no recipe
  removes it, so the last round tries `nested_graph_breaks` at its compile, and keeps it because
  the graphs around the break join up (3 → 2), outputs equal, confirmed with Inductor; the break
  keeps its own advice beside.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.cli_helpers import write
from tests.conftest import git

FILES = {
    "tiny/__init__.py": "",
    "tiny/gpt.py": """
        import torch
        from torch import nn


        class GPT(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.lin = nn.Linear(dim, dim)

            def forward(self, x):
                scale = x.abs().sum().item()
                return self.lin(x) / scale


        if __name__ == "__main__":
            model = torch.compile(GPT(4))
            print(model(torch.ones(2, 4)))
        """,
    "tiny/serve.py": """
        import torch

        from tiny.gpt import GPT


        def run():
            torch.manual_seed(0)
            model = torch.compile(GPT(4))
            return model(torch.ones(2, 4))
        """,
    "tiny/odd.py": """
        import torch
        from torch import nn


        class Odd(nn.Module):
            def forward(self, x):
                n = x.sum().item()
                return x * n


        if __name__ == "__main__":
            print(torch.compile(Odd())(torch.ones(2)))
        """,
    "tiny/bench.py": """
        import torch

        from tiny.odd import Odd

        build = getattr(torch, "compile")


        def run():
            return build(Odd())(torch.ones(2))
        """,
    "tiny/clip.py": """
        import torch
        from torch import nn


        def clip(x):
            if x.abs().max() > 10:
                x = x / 10
            return x


        class Clipped(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(4, 4)
                self.b = nn.Linear(4, 4)

            def forward(self, x):
                return self.b(clip(self.a(x)))


        def run():
            torch.manual_seed(0)
            model = torch.compile(Clipped())
            with torch.no_grad():
                return model(torch.ones(2, 4))
        """,
    ".gbbot.yml": """
        version: 1
        entrypoints:
          # gbbot builds and compiles this one
          - name: gpt
            model: tiny.gpt:GPT
            args: [4]
            inputs: [{tensor: [2, 4]}]
          - {name: serve, call: 'tiny.serve:run'}
          - {name: bench, call: 'tiny.bench:run'}
          - {name: clip, call: 'tiny.clip:run'}
        """,
}


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    root = tmp_path_factory.mktemp("entry-settings")
    write(root, {path: textwrap.dedent(text).lstrip("\n") for path, text in FILES.items()})
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "three entrypoints")
    env = {**os.environ, "COLUMNS": "400"}  # one result, one line
    done = subprocess.run(
        [sys.executable, "-m", "gbbot", "fix", "--apply"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return root, done


def test_a_model_entrys_setting_is_verified_in_its_compile_option_and_applied(applied) -> None:
    root, done = applied
    assert done.returncode == 0, done.stderr
    verdict = next(line for line in done.stdout.splitlines() if line.startswith("# tiny/gpt.py:11 item"))
    assert "verified: removes 2 breaks across 2 entrypoints" in verdict and "confirmed in faithful mode" in verdict
    config = (root / ".gbbot.yml").read_text()
    assert "    inputs: [{tensor: [2, 4]}]\n    compile: {dynamo: {capture_scalar_outputs: true}}\n" in config
    assert config.startswith("version: 1\nentrypoints:\n  # gbbot builds and compiles this one\n")  # kept as written
    written = (done.stdout + done.stderr).split("gbbot fix: wrote ", 1)[1].splitlines()[0].split(", ")
    assert set(written) == {"tiny/serve.py", "tiny/clip.py", ".gbbot.yml"}


def test_the_setting_goes_to_the_compile_the_entrypoint_runs_not_a_main_block(applied) -> None:
    root, _ = applied
    serve = (root / "tiny/serve.py").read_text()
    assert "    torch._dynamo.config.capture_scalar_outputs = True\n    model = torch.compile(GPT(4))\n" in serve
    assert (root / "tiny/gpt.py").read_text() == textwrap.dedent(FILES["tiny/gpt.py"]).lstrip("\n")


def test_a_break_whose_only_compile_is_a_main_block_it_never_runs_gets_a_one_line_reason(applied) -> None:
    root, done = applied
    (verdict,) = [line for line in done.stdout.splitlines() if line.startswith("# tiny/odd.py:7 item")]
    assert verdict.endswith(
        'the `torch.compile` that compiles it (tiny/odd.py:12) is in an `if __name__ == "__main__":` block '
        "that bench never run"
    )
    assert (root / "tiny/odd.py").read_text() == textwrap.dedent(FILES["tiny/odd.py"]).lstrip("\n")


def test_a_break_in_a_callee_no_recipe_removes_gets_nested_graph_breaks_when_it_cuts_the_graphs(applied) -> None:
    root, done = applied
    lines = done.stdout.splitlines()
    (at,) = [i for i, line in enumerate(lines) if line.startswith("# tiny/clip.py:6 nested")]
    verdict = lines[at]  # the last round's, over the breaks no other fix removed
    assert "verified in round 2: the break stays" in verdict
    assert verdict.endswith("outputs equal; confirmed in faithful mode")
    assert "resumed in its function; breaks met 2 → 1; graphs 3 → 2;" in verdict  # not "removes": it stays
    assert any(line.startswith("#   the break itself: line 6 is not a pattern") for line in lines[at:])
    clip = (root / "tiny/clip.py").read_text()
    assert "    torch._dynamo.config.nested_graph_breaks = True\n    model = torch.compile(Clipped())\n" in clip
