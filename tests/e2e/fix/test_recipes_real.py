"""The recipes chosen by a statement's shape or placed at the compile site, against real torch: one
entrypoint each in tests/e2e/fix/e2e_project, `gbbot fix --apply` once for the module, then
`gbbot check` on the written files. Each verified result carries the before/after counts of the
real runs (the break gone, no new one, outputs equal)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from gbbot.core.fixes import FixResult, FixStatus
from gbbot.core.model import Report
from gbbot.fix.pipeline import FixRun
from tests.fix_project import fixed_once

CONFIRMED = "outputs equal; confirmed in faithful mode"  # a compiled setting, run with its compiler

PROJECT = Path(__file__).parent / "e2e_project"
# entrypoint → the module it calls (fixdemo/<entrypoint>.py)
ENTRYPOINTS = (
    "printfloat",
    "jitslice",
    "loguru_calls",
    "attention",
    "masked",
    "on_device",
    "tqdm_write",
    "item_branch",
)
FIXED = ("printfloat", "jitslice", "loguru_calls", "attention", "masked", "tqdm_write")


@dataclass
class Session:
    repo: Path
    run: FixRun
    after: Report

    def results(self, entrypoint: str) -> list[FixResult]:
        fingerprints = {b.fingerprint for e in self.run.report.entrypoints if e.name == entrypoint for b in e.breaks}
        return [r for r in self.run.results if r.fingerprint in fingerprints]

    def verified(self, entrypoint: str) -> FixResult:
        found = [r for r in self.results(entrypoint) if r.status is FixStatus.VERIFIED]
        assert found, (entrypoint, self.results(entrypoint))
        return found[0]

    def text(self, entrypoint: str) -> str:
        return (self.repo / f"fixdemo/{entrypoint}.py").read_text()


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> Session:
    repo = tmp_path_factory.mktemp("recipes-real") / "repo"
    run, after = fixed_once(repo, PROJECT, "fixdemo", ENTRYPOINTS, FIXED, leave_out=("thirdlib_src",))
    return Session(repo, run, after)


def _removes_its_break(result: FixResult, setting: bool = False) -> None:
    """`setting`: the fix turns on a setting that hands the compiler numbers read from tensors,
    so it was compiled for real too."""
    ending = CONFIRMED if setting else "outputs equal"
    assert result.summary.startswith("removes") and result.summary.endswith(ending), result.summary
    assert result.after.breaks < result.before.breaks


def test_a_print_whose_argument_breaks_as_item_is_guarded_whole(session):
    (brk,) = next(e for e in session.run.report.entrypoints if e.name == "printfloat").breaks
    # float() of a tensor breaks (GB0124), and the label is what fixes it: the print's guard
    assert (brk.gb_id, brk.fix) == ("GB0124", "side_effect")
    result = session.verified("printfloat")
    assert (result.recipe, result.variant) == ("side_effect", "guard")
    _removes_its_break(result)
    assert '        if not torch.compiler.is_compiling():\n            print("step", float(v.mean()))' in session.text(
        "printfloat"
    )


def test_an_implicit_item_in_a_jit_script_helper_is_fixed_at_the_compile_site(session):
    result = session.verified("jitslice")
    assert (result.recipe, result.variant, result.file) == ("item", "capture_scalar_outputs", "fixdemo/jitslice.py")
    _removes_its_break(result, setting=True)
    text = session.text("jitslice")
    assert "torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(Net()))(" in text
    assert "    return x[:, : n_channels[0]]\n" in text  # the helper itself is untouched
    assert "capture_scalar_outputs = True" not in text  # no process-wide assignment


def test_a_loguru_call_is_guarded_at_the_call_line_not_scaffolded(session):
    results = session.results("loguru_calls")
    assert all(r.scaffold is None for r in results)
    result = session.verified("loguru_calls")
    assert (result.recipe, result.variant) == ("side_effect", "guard")
    _removes_its_break(result)
    assert '    if not torch.compiler.is_compiling():\n        logger.info("body done {}"' in session.text(
        "loguru_calls"
    )


def test_the_deprecated_sdp_kernel_becomes_sdpa_kernel_and_traces(session):
    ids = sorted(b.gb_id for e in session.run.report.entrypoints if e.name == "attention" for b in e.breaks)
    assert "GB0142" in ids  # Dynamo cannot enter torch.backends.cuda.sdp_kernel
    result = session.verified("attention")
    assert (result.recipe, result.variant) == ("sdp_kernel", "sdpa_kernel")
    _removes_its_break(result)
    assert (
        "with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH, "
        "torch.nn.attention.SDPBackend.CUDNN_ATTENTION]):" in session.text("attention")
    )


def test_a_boolean_mask_is_fixed_by_a_setting_on_the_compiled_function(session):
    result = session.verified("masked")
    assert (result.recipe, result.variant) == ("dynamic_shape", "capture_dynamic_output_shape_ops")
    _removes_its_break(result, setting=True)
    assert "@torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)\n@torch.compile\n" in session.text(
        "masked"
    )


def test_with_torch_device_gets_the_documented_options_and_no_patch(session):
    (result,) = session.results("on_device")
    assert result.status is FixStatus.ADVICE and result.diff is None
    assert any("device=" in a.text for a in result.advice)
    assert session.text("on_device") == (PROJECT / "fixdemo/on_device.py").read_text()


def test_tqdm_write_in_a_method_the_compiled_forward_calls_is_guarded_like_a_print(session):
    (brk,) = next(e for e in session.run.report.entrypoints if e.name == "tqdm_write").breaks
    assert brk.gb_id == "GB0008" and brk.function == "Net.report"  # Dynamo skips tqdm
    result = session.verified("tqdm_write")
    assert (result.recipe, result.variant) == ("side_effect", "guard")
    _removes_its_break(result)
    assert '        if not torch.compiler.is_compiling():\n            tqdm.write(f"mean {y.mean()}")' in session.text(
        "tqdm_write"
    )


def test_an_item_whose_number_decides_an_if_keeps_the_advice_for_branches_beside_the_nested_lever(session):
    """No setting is tried on the `.item()` (capturing it only moves the break); the last round's
    `nested_graph_breaks` at the compile joins the graphs around it, and the break, still there,
    keeps its advice."""
    (brk,) = next(e for e in session.run.report.entrypoints if e.name == "item_branch").breaks
    assert (brk.gb_id, brk.function, brk.fix) == ("GB0124", "damped", None)  # labelled: advice only
    (result,) = session.results("item_branch")
    assert (result.status, result.recipe, result.round) == (FixStatus.VERIFIED, "nested", 2)
    assert result.summary.startswith("the break stays, resumed in its function; ")
    assert "capture_scalar_outputs" not in result.diff and "nested_graph_breaks = True" in result.diff
    assert "capturing it (capture_scalar_outputs) would only move the break" in result.reason
    assert "capturing it (`capture_scalar_outputs`) only moves the break to the `if`" in result.advice[0].text
    assert any("torch.where" in a.text for a in result.advice)


def test_check_agrees_the_fixed_entrypoints_no_longer_break(session):
    assert {e.name: len(e.breaks) for e in session.after.entrypoints} == dict.fromkeys(FIXED, 0)
