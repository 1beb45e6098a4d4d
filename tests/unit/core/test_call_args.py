"""`call:` entrypoints with arguments: YAML literals and tensor specs, checked like every config
key. (Built in the child, with real torch: tests/e2e/test_call_args.py.)"""

from __future__ import annotations

import pytest

from gbbot.core.config import parse_config
from gbbot.core.errors import ConfigError


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
     "cfg.yml: entrypoints[0].args[0]: expected a YAML literal (number, string, boolean, null, list, mapping), a tensor spec {tensor: [shape]} or {call: module:callable}, got datetime.date(2024, 1, 1)"),
    (entry("    kwargs: {dims: {call: 'pkg.m:Dims', kwargs: {n_mels: 1}, kwarg: {}}}\n"),
     "cfg.yml: entrypoints[0].kwargs.dims.kwarg: unknown key of a call: value; known keys: call, args, kwargs"),
    (entry("    args: [{call: Dims, kwargs: {n_mels: [{tensor: [-1]}]}}]\n"),
     "cfg.yml: entrypoints[0].args[0].call: expected 'module:callable', e.g. mypkg.model:ModelArgs, got 'Dims'"),
    (entry("    args: [{call: 'pkg.m:Dims', kwargs: {n_mels: {tensor: [-1]}}}]\n"),
     "cfg.yml: entrypoints[0].args[0].kwargs.n_mels.tensor: expected a shape: a list of at most 8 sizes (whole numbers ≥ 0), e.g. [2, 8], got [-1]"),
    (entry("    args: [.nan]\n"), "cfg.yml: entrypoints[0].args[0]: expected a finite number, got nan"),
    ("version: 1\nentrypoints: [{name: r, run: 'python x.py', args: [1]}]\n",
     "cfg.yml: entrypoints[0].args: arguments are for 'call' and 'model' entrypoints only"),
    ("version: 1\nentrypoints: [{name: t, pytest: []}]\n",
     "cfg.yml: entrypoints[0].pytest: expected test ids, files or pytest arguments, e.g. tests/test_model.py::test_forward, got []"),
    ("version: 1\nentrypoints: [{name: t, pytest: tests/x.py, run: y}]\n",
     "cfg.yml: entrypoints[0]: needs exactly one of 'run' (a command), 'call' (module:function), 'pytest' (tests to run) or 'model' (module:Class, an nn.Module to build and compile)"),
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


@pytest.mark.parametrize(
    "arguments",
    [
        "kwargs: {blob: %s}" % ("x" * 300_000),
        # one level down: many short strings in a nested list, together over the bound
        f"args: [[{', '.join(['abcdefghij' * 3] * 5_000)}]]",
    ],
    ids=["one-300KB-string", "nested-list"],
)
def test_call_arguments_too_large_for_argv_are_refused_at_load_time(arguments):
    """Warm, a 300 KB argument worked; a fresh child (--no-warm) could not start (E2BIG). Refused
    when the config loads, whichever backend would run it."""
    text = f"version: 1\nentrypoints:\n  - name: big\n    call: m:f\n    {arguments}\n"
    with pytest.raises(ConfigError, match="over the 100,000 gbbot passes"):
        parse_config(text, ".gbbot.yml")
