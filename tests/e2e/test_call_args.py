"""`call:` entrypoints with arguments, with real torch: the breaks a hand-written wrapper finds,
and the tensors built in the child. torch is imported inside the tests: collecting them must not
start it."""

from __future__ import annotations

from gbbot.checks.tree import CheckOptions, check
from gbbot.core import call_args
from gbbot.core.config import parse_config
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
    import torch

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
    import torch

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
