"""`call:` entrypoints with arguments: YAML literals and tensor specs, checked like every config
key and built in the child."""

from __future__ import annotations

import pytest
import torch

from gbbot.checks.tree import CheckOptions, check
from gbbot.core import call_args
from gbbot.core.config import parse_config
from gbbot.core.errors import ConfigError
from gbbot.core.model import Status
from tests.cli_helpers import write

MODEL = """\
    import torch


    @torch.compile
    def score(tokens, weight, steps, *, scale=1.0, options=None):
        total = (weight[tokens] * scale).sum()
        if options["verbose"]:
            print("score", steps)
        for _ in range(steps):
            total = total + float(total.item() > 0)
        return total
"""
WRAPPER = """\
    import torch

    from pkg.model import score


    def by_hand():
        tokens = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(0))
        weight = torch.randn((100,), generator=torch.Generator().manual_seed(3))
        return score(tokens, weight, 2, scale=0.5, options={"verbose": True})
"""
CONFIG = """\
    version: 1
    entrypoints:
      - name: wrapper
        call: pkg.wrapper:by_hand
      - name: with-args
        call: pkg.model:score
        args: [{tensor: [2, 8], dtype: long, high: 100}, {tensor: [100], seed: 3}, 2]
        kwargs: {scale: 0.5, options: {verbose: true}}
"""


def test_a_call_with_arguments_finds_the_breaks_a_hand_written_wrapper_finds(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/model.py": MODEL, "pkg/wrapper.py": WRAPPER, ".gbbot.yml": CONFIG})
    config = parse_config((tmp_path / ".gbbot.yml").read_text())
    options = CheckOptions(save_results=True, keep_traces=tmp_path / "work")
    result = {e.name: e for e in check(tmp_path, config, options).entrypoints}
    wrapper, with_args = result["wrapper"], result["with-args"]
    assert wrapper.status is Status.OK and with_args.status is Status.OK, with_args.error
    assert {b.gb_type for b in wrapper.breaks} >= {"Unsupported Tensor.item() call with capture_scalar_outputs=False"}
    assert {(b.fingerprint, b.line) for b in with_args.breaks} == {(b.fingerprint, b.line) for b in wrapper.breaks}
    # the same values reached the function: the saved results are equal
    same = torch.load(tmp_path / "work/wrapper/result.pt"), torch.load(tmp_path / "work/with-args/result.pt")
    assert torch.equal(*same)


def test_tensor_specs_build_deterministic_tensors_of_the_given_shape_and_dtype():
    text = call_args.encode(
        ({"tensor": [3, 4], "dtype": "long", "low": 5, "high": 9}, {"tensor": [2], "dtype": "bfloat16"}),
        (("mask", {"tensor": [4], "dtype": "bool"}), ("ones", {"tensor": [2], "fill": 1, "dtype": "int32"})),
    )
    (ids, half), kwargs = call_args.decode(text)
    assert ids.shape == (3, 4) and ids.dtype == torch.int64 and int(ids.min()) >= 5 and int(ids.max()) <= 8
    assert half.dtype == torch.bfloat16 and kwargs["mask"].dtype == torch.bool
    assert kwargs["ones"].tolist() == [1, 1] and kwargs["ones"].dtype == torch.int32
    again, _ = call_args.decode(text)
    assert torch.equal(again[0], ids) and torch.equal(again[1], half)


def entry(extra: str) -> str:
    return f"version: 1\nentrypoints:\n  - name: f\n    call: 'pkg.m:f'\n{extra}"


# fmt: off
BROKEN = [
    (entry("    args: [1, {tensor: [2, 8], dtype: long64}]\n"),
     "cfg.yml: entrypoints[0].args[1].dtype: expected one of float32, float, float16, half, bfloat16, float64, double, long, int64, int32, int, bool, got 'long64'"),
    (entry("    args: [{tensor: [2, -1]}]\n"),
     "cfg.yml: entrypoints[0].args[0].tensor: expected a shape: a list of at most 8 sizes (whole numbers ≥ 0), e.g. [2, 8], got [2, -1]"),
    (entry("    args: [{tensor: [2], hihg: 3, dtype: long}]\n"),
     "cfg.yml: entrypoints[0].args[0].hihg: unknown key of a tensor spec; did you mean 'high'?"),
    (entry("    args: [{tensor: [2], high: 3}]\n"),
     "cfg.yml: entrypoints[0].args[0].high: only for integer dtypes (long, int32); this tensor is float32"),
    (entry("    kwargs: {x: [1, {tensor: [2], dtype: long, low: 4, high: 4}]}\n"),
     "cfg.yml: entrypoints[0].kwargs.x[1].high: must be greater than low (randint draws from low to high - 1)"),
    (entry("    args: {a: 1}\n"),
     "cfg.yml: entrypoints[0].args: expected a list of arguments, e.g. [{tensor: [2, 8]}, 3], got {'a': 1}"),
    (entry("    kwargs: {not an identifier: 1}\n"),
     "cfg.yml: entrypoints[0].kwargs.not an identifier: expected a Python identifier, got 'not an identifier'"),
    (entry("    args: [2024-01-01]\n"),
     "cfg.yml: entrypoints[0].args[0]: expected a YAML literal (number, string, boolean, null, list, mapping) or a tensor spec {tensor: [shape]}, got datetime.date(2024, 1, 1)"),
    (entry("    args: [.nan]\n"), "cfg.yml: entrypoints[0].args[0]: expected a finite number, got nan"),
    ("version: 1\nentrypoints: [{name: r, run: 'python x.py', args: [1]}]\n",
     "cfg.yml: entrypoints[0].args: arguments are for 'call' entrypoints only"),
    ("version: 1\nentrypoints: [{name: t, pytest: []}]\n",
     "cfg.yml: entrypoints[0].pytest: expected test ids, files or pytest arguments, e.g. tests/test_model.py::test_forward, got []"),
    ("version: 1\nentrypoints: [{name: t, pytest: tests/x.py, run: y}]\n",
     "cfg.yml: entrypoints[0]: needs exactly one of 'run' (a command), 'call' (module:function) or 'pytest' (tests to run)"),
]
# fmt: on


@pytest.mark.parametrize(("text", "message"), BROKEN, ids=[m.split(": ", 2)[1] for _, m in BROKEN])
def test_bad_arguments_name_the_key_path(text, message):
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "cfg.yml")
    assert str(caught.value) == message


def test_pytest_arguments_split_like_a_shell_and_lists_are_taken_as_is():
    config = parse_config(
        "version: 1\nentrypoints:\n"
        "  - {name: a, pytest: \"tests/test_m.py -k 'forward and not slow'\"}\n"
        "  - {name: b, pytest: [tests/test_m.py, -m, not slow]}\n",
        "cfg.yml",
    )
    assert config.entrypoints[0].pytest == ("tests/test_m.py", "-k", "forward and not slow")
    assert config.entrypoints[1].pytest == ("tests/test_m.py", "-m", "not slow")
    assert config.entrypoints[1].kind == "pytest"
