"""Data-dependent branches against real torch: each in a helper that a module's `forward` calls (one
call deeper than the compiled frame), the module compiled as `torch.compile(model)`. One entrypoint
each in tests/e2e/fix/branch_project, `gbbot fix --apply` once for the module: the `if …: raise`
becomes a `torch._check` with `capture_scalar_outputs` at the compile (one fix, two edits), the
branch that picks one of two values becomes `torch.where`, and the look-alikes keep the advice or
are dropped by the verification run."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from gbbot.core.fixes import FixResult, FixStatus
from gbbot.core.model import Report
from gbbot.fix.pipeline import FixRun
from tests.fix_project import fixed_once

CONFIRMED = "outputs equal; confirmed in faithful mode"  # a compiled setting, run with its compiler

PROJECT = Path(__file__).parent / "branch_project"
ENTRYPOINTS = ("checked_item", "checked_tensor", "asserted", "captured", "picked", "logged_raise", "reduced")
FIXED = ("checked_item", "checked_tensor", "asserted", "captured", "picked")


@dataclass
class Session:
    repo: Path
    run: FixRun
    after: Report

    def result(self, entrypoint: str, gb_id: str | None = None) -> FixResult:
        breaks = [b for e in self.run.report.entrypoints if e.name == entrypoint for b in e.breaks]
        fingerprints = {b.fingerprint for b in breaks if gb_id in (None, b.gb_id)}
        (found,) = [r for r in self.run.results if r.fingerprint in fingerprints]
        return found

    def text(self, entrypoint: str) -> str:
        return (self.repo / f"branchdemo/{entrypoint}.py").read_text()


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> Session:
    repo = tmp_path_factory.mktemp("data-branch") / "repo"
    run, after = fixed_once(repo, PROJECT, "branchdemo", ENTRYPOINTS, FIXED)
    return Session(repo, run, after)


def _verified(result: FixResult, recipe: str, variant: str, setting: bool = True) -> None:
    """`setting`: the fix turns capture_scalar_outputs on, so it was compiled for real too."""
    assert (result.status, result.recipe, result.variant) == (FixStatus.VERIFIED, recipe, variant), result
    ending = CONFIRMED if setting else "outputs equal"
    assert result.summary.startswith("removes") and result.summary.endswith(ending), result.summary
    assert result.after.breaks < result.before.breaks


def test_a_raise_on_an_item_becomes_a_check_and_the_setting_goes_on_the_models_compile(session):
    (brk,) = next(e for e in session.run.report.entrypoints if e.name == "checked_item").breaks
    assert (brk.gb_id, brk.fix, brk.function) == ("GB0124", "item", "validate")
    result = session.result("checked_item")
    _verified(result, "item", "check")
    text = session.text("checked_item")
    assert (  # `a or b`: one check per operand, in order
        '    torch._check(torch.sym_not(idx.min().item() < 0), lambda: "token id out of range")\n'
        '    torch._check(torch.sym_not(idx.max().item() >= size), lambda: "token id out of range")\n'
    ) in text
    assert "raise IndexError" not in text
    assert "torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(model))(" in text
    assert result.paths == ("branchdemo/checked_item.py",) and len(result.hunks) == 2  # one fix, two edits


def test_a_raise_on_a_boolean_tensor_becomes_a_check_of_its_item(session):
    (brk,) = next(e for e in session.run.report.entrypoints if e.name == "checked_tensor").breaks
    assert (brk.gb_id, brk.fix) == ("GB0170", "tensor_branch")
    _verified(session.result("checked_tensor"), "tensor_branch", "check")
    text = session.text("checked_tensor")
    assert '    torch._check(torch.sym_not((idx < 0).any().item()), lambda: "negative token id")\n' in text
    # a compiled module that is kept: the setting is turned on in the statement before its compile
    assert "    torch._dynamo.config.capture_scalar_outputs = True\n    model = torch.compile(model)\n" in text


def test_with_the_setting_already_on_the_branch_on_an_item_gets_the_check_alone(session):
    ids = sorted(b.gb_id or "" for e in session.run.report.entrypoints if e.name == "captured" for b in e.breaks)
    assert "GB0170" in ids  # the traced .item() feeds the if: a data-dependent branch
    result = session.result("captured", "GB0170")
    _verified(result, "tensor_branch", "check_scalar", setting=False)  # it is on already
    assert len(result.hunks) == 1  # the compile already has the setting
    text = session.text("captured")
    assert '    torch._check(torch.sym_not(idx.max().item() >= size), lambda: "token id out of range")\n' in text


def test_a_branch_that_picks_one_of_two_values_becomes_torch_where(session):
    _verified(session.result("picked"), "tensor_branch", "where", setting=False)
    text = session.text("picked")
    assert "    y = torch.where(mask.sum() > 0, x + 1, x - 1)\n    return y\n" in text
    assert "else:" not in text


def test_the_fixed_entrypoints_compile_without_a_break(session):
    assert {e.name: e.breaks for e in session.after.entrypoints} == {name: () for name in FIXED}


def test_the_checks_still_raise_on_bad_input_eagerly_and_compiled(session):
    probe = (
        "import torch\n"
        "from branchdemo.checked_item import Lookup\n"
        "model = Lookup(8)\n"
        "compiled = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(model))\n"
        "compiled(torch.tensor([1, 2]))\n"
        "for name, call in (('eager', model), ('compiled', compiled)):\n"
        "    for bad in ([1, 9], [-1, 2]):\n"
        "        try:\n"
        "            call(torch.tensor(bad))\n"
        "        except RuntimeError as exc:\n"
        "            print(name, 'RuntimeError', str(exc).splitlines()[0])\n"
        "        else:\n"
        "            print(name, 'passed')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=session.repo, capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith(("eager", "compiled"))]
    assert lines[:2] == ["eager RuntimeError token id out of range"] * 2, done.stdout + done.stderr
    assert [line.split(" ", 2)[:2] for line in lines[2:]] == [["compiled", "RuntimeError"]] * 2, done.stdout


def test_an_assert_on_an_item_becomes_a_check_that_still_raises_when_compiled(session):
    # with capture_scalar_outputs alone, torch 2.13 drops the assert from the graph: a compiled
    # call with a negative input would pass silently
    _verified(session.result("asserted"), "item", "check")
    text = session.text("asserted")
    assert '    torch._check(x.min().item() >= 0, lambda: "negative input")\n' in text
    probe = (
        "import torch\n"
        "from branchdemo.asserted import Normalise\n"
        "compiled = torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(Normalise()))\n"
        "compiled(torch.arange(1.0, 7.0))\n"
        "try:\n"
        "    compiled(torch.arange(6.0) - 3)\n"
        "except RuntimeError:\n"
        "    print('compiled RuntimeError')\n"
        "else:\n"
        "    print('compiled passed')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=session.repo, capture_output=True, text=True, timeout=300)
    assert "compiled RuntimeError" in done.stdout.splitlines(), done.stdout + done.stderr


def test_a_raise_after_a_side_effect_keeps_the_advice_and_no_patch(session):
    result = session.result("logged_raise")
    assert result.status is FixStatus.ADVICE and result.diff is None
    assert "line 8 is not a pattern the tensor_branch recipes rewrite (torch._check" in result.reason
    assert any("torch.cond" in a.text for a in result.advice)
    assert session.text("logged_raise") == (PROJECT / "branchdemo/logged_raise.py").read_text()


def test_values_of_different_shapes_are_dropped_by_the_verification_run(session):
    """torch.where over values of different shapes is dropped; the last round's nested_graph_breaks
    is kept in its place (the break stays), with the drop said as the break's own reason."""
    result = session.result("reduced")
    assert (result.status, result.recipe) == (FixStatus.VERIFIED, "nested")
    assert "the break stays" in result.summary
    assert "The values for attribute 'shape' do not match" in result.reason
    compiled = "torch.compile(model)("  # the only change written: the setting around that compile
    with_lever = "torch._dynamo.config.patch(nested_graph_breaks=True)(torch.compile(model))("
    assert session.text("reduced") == (PROJECT / "branchdemo/reduced.py").read_text().replace(compiled, with_lever)
