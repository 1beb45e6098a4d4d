"""`model:` entrypoints with real torch: an nn.Module built, compiled and called from the config
alone, no wrapper module. torch is imported inside the tests: collecting them must not start it."""

from __future__ import annotations

import importlib.util
import textwrap

from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import parse_config
from gbbot.core.model import Status
from tests.cli_helpers import write

# The planted break is one call below the obvious place: in a helper that a submodule's forward
# calls, inside the parent's loop over a ModuleList.
NET = """\
    import torch
    from torch import nn


    def _log_scale(x):
        print("scale", x.shape)
        return x * 2


    class Block(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.lin = nn.Linear(dim, dim)
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            return _log_scale(self.drop(torch.relu(self.lin(x))))


    class Net(nn.Module):
        def __init__(self, dim, depth=1, *, vocab=None):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim) if vocab else None
            self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))

        def forward(self, x, scale=1.0):
            x = self.embed(x) if self.embed is not None else x
            for block in self.blocks:
                x = block(x)
            return x * scale

        def generate(self, x, steps):
            for _ in range(steps):
                x = torch.cat([x, self.forward(x)[:, -1:].argmax(-1)], dim=1)
            return x
"""


def run(root, entrypoints: str, **options):
    write(root, {"tiny/__init__.py": "", "tiny/net.py": NET})
    text = "version: 1\nentrypoints:\n" + textwrap.indent(textwrap.dedent(entrypoints), "  ")
    write(root, {".gbbot.yml": text})
    config = parse_config((root / ".gbbot.yml").read_text())
    return {e.name: e for e in check(root, config, CheckOptions(**options)).entrypoints}


def test_a_model_entrypoint_finds_the_break_planted_below_forward(tmp_path):
    import torch

    result = run(
        tmp_path,
        """\
        - name: net
          model: tiny.net:Net
          args: [8]
          kwargs: {depth: 2}
          inputs: [{tensor: [2, 8]}]
          input_kwargs: {scale: 0.5}
        """,
        save_results=True,
        keep_traces=tmp_path / "work",
    )["net"]
    assert result.status is Status.OK, result.error
    (brk,) = result.breaks
    assert (brk.file, brk.line, brk.function, brk.gb_id) == ("tiny/net.py", 6, "_log_scale", "GB0059")
    # eval(): dropout is off, so the result is the deterministic function of seeded weights
    saved = torch.load(tmp_path / "work/net/result.pt")
    spec = importlib.util.spec_from_file_location("planted_net", tmp_path / "tiny/net.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    model = module.Net(8, depth=2).eval()
    expected = model(torch.randn((2, 8), generator=torch.Generator().manual_seed(0)), scale=0.5)
    assert saved.shape == (2, 8) and torch.allclose(saved, expected)


def test_a_model_method_other_than_forward_with_an_integer_input(tmp_path):
    result = run(
        tmp_path,
        """\
        - name: generate
          model: tiny.net:Net
          kwargs: {dim: 4, vocab: 4}
          method: generate
          inputs: [{tensor: [1, 3], dtype: long, high: 4}, 2]
        """,
    )["generate"]
    assert result.status is Status.OK, result.error
    assert {(b.file, b.function) for b in result.breaks} >= {("tiny/net.py", "_log_scale")}


def test_a_missing_class_or_method_is_one_line(tmp_path):
    result = run(
        tmp_path,
        """\
        - {name: noclass, model: 'tiny.net:Nett', args: [4]}
        - {name: nomethod, model: 'tiny.net:Net', args: [4], method: decode}
        """,
    )
    assert result["noclass"].status is Status.FAILED
    assert result["noclass"].error.strip().splitlines()[-1] == (
        "gbbot: model target 'tiny.net:Nett' not found: AttributeError: module 'tiny.net' has no attribute 'Nett'"
    )
    assert result["nomethod"].error.strip().splitlines()[-1] == (
        "gbbot: model target 'tiny.net:Net': Net has no method 'decode' to compile"
    )


def test_gbbot_fix_verifies_a_model_fix_by_comparing_the_model_outputs(tmp_path):
    from tests.cli_helpers import gbbot
    from tests.conftest import git

    run(tmp_path, "- {name: net, model: 'tiny.net:Net', args: [8], kwargs: {depth: 2}, inputs: [{tensor: [2, 8]}]}\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "planted")
    result = gbbot(tmp_path, "fix")
    assert result.returncode == 0, result.stderr
    verdict = next(line for line in result.stdout.splitlines() if line.startswith("# tiny/net.py:6 print"))
    assert "verified" in verdict and verdict.endswith("outputs equal"), verdict


NOISY = """\
    import logging

    import torch
    from torch import nn

    logger = logging.getLogger(__name__)


    class Noisy(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.lin = nn.Linear(dim, dim)

        def forward(self, x):
            logger.warning("forward")
            scale = x.abs().sum().item()
            kept = (x > 0).nonzero()
            return self.lin(x) * scale, kept
"""


def test_the_dynamo_settings_of_a_model_entry_hold_at_gbbots_own_compile(tmp_path):
    # gbbot compiles a model: entry itself, so a compile-site setting goes into its compile: options
    write(tmp_path, {"tiny/noisy.py": NOISY})
    entry = """\
        - name: noisy
          model: tiny.noisy:Noisy
          args: [4]
          inputs: [{tensor: [3, 4]}]
        """
    plain = run(tmp_path, entry)["noisy"]
    assert plain.status is Status.OK, plain.error
    assert {b.gb_id for b in plain.breaks} == {"GB0291", "GB0124", "GB0036"}
    dynamo = (
        "{capture_scalar_outputs: true, capture_dynamic_output_shape_ops: true, ignore_logging_functions: [warning]}"
    )
    settled = run(tmp_path, entry + f"  compile: {{dynamo: {dynamo}}}\n")["noisy"]
    assert settled.status is Status.OK, settled.error
    assert (settled.breaks, settled.graph_count) == ((), 1)


def test_a_logger_method_the_model_entry_names_must_exist(tmp_path):
    write(tmp_path, {"tiny/noisy.py": NOISY})
    entry = """\
        - name: noisy
          model: tiny.noisy:Noisy
          args: [4]
          inputs: [{tensor: [3, 4]}]
          compile: {dynamo: {ignore_logging_functions: [warn_twice]}}
        """
    result = run(tmp_path, entry)["noisy"]
    assert result.status is not Status.OK
    assert "logging.Logger has no method 'warn_twice'" in result.error
