"""Compile-site settings put where the repository compiles the frame, with real torch, in the forms
real code writes (tests/e2e/fix/sites_project): a training script keeping its compiled model, a
compiled instance called at once, `model.compile()`, a compile in the `call:` target's module of
a model from another module, `@torch.compile` on a method, one model compiled by two entrypoints
through two sites, and a compile that needs two settings, one per round. In every form the break
sits one call below the compiled frame (a helper the model's loop inlines), so the frame that runs
eagerly is not the break's function. `gbbot fix --apply` runs once for the module, then `gbbot
check` on the written files."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import load_config
from gbbot.core.fixes import FixResult, FixStatus
from gbbot.core.model import Report
from gbbot.fix.pipeline import FixOptions, FixRun, fix
from tests.conftest import git

CONFIRMED = "outputs equal; confirmed in faithful mode"  # a compiled setting, run with its compiler

PROJECT = Path(__file__).parent / "sites_project"
# Each form compiles its own copy of sitedemo/blocks.py (so that each has its own break), with
# the code that compiles it appended; decorated.py imports the blocks module itself.
FORMS = {
    "kept": "",  # train_kept.py compiles it
    "called": "\n\ndef run():\n    v = Model()\n    with torch.no_grad():\n        return torch.compile(v)(batch())\n",
    "selfcompiled": (
        "\n\ndef run():\n    m = Model()\n    m.compile()\n    with torch.no_grad():\n        return m(batch())\n"
    ),
    "target": "",  # sitedemo/entry.py compiles it
    "shared": "",  # sitedemo/bench.py and train_shared.py compile it
}
CONFIG = """\
version: 1
mode: fast
entrypoints:
  - {name: kept, run: python train_kept.py, verify_output: true, timeout: 120}
  - {name: called, call: 'sitedemo.called:run', timeout: 120}
  - {name: selfcompiled, call: 'sitedemo.selfcompiled:run', timeout: 120}
  - {name: target, call: 'sitedemo.entry:run', timeout: 120}
  - {name: decorated, call: 'sitedemo.decorated:run', timeout: 120}
  - {name: bench, call: 'sitedemo.bench:forward_once', timeout: 120}
  - {name: train-shared, run: python train_shared.py, verify_output: true, timeout: 120}
  - {name: merged, call: 'sitedemo.merged:run', timeout: 120}
"""


@dataclass
class Session:
    repo: Path
    run: FixRun
    after: Report

    def result(self, path: str, line: int = 9) -> FixResult:
        (found,) = [r for r in self.run.results if (r.file, r.line) == (path, line)]
        return found

    def text(self, path: str) -> str:
        return (self.repo / path).read_text()


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> Session:
    repo = tmp_path_factory.mktemp("compile-sites") / "repo"
    shutil.copytree(PROJECT, repo, ignore=shutil.ignore_patterns("__pycache__"))
    blocks = (PROJECT / "sitedemo/blocks.py").read_text()
    for form, tail in FORMS.items():
        (repo / f"sitedemo/{form}.py").write_text(blocks + tail)
    (repo / ".gbbot.yml").write_text(CONFIG)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "project")
    config = load_config(repo / ".gbbot.yml")
    run = fix(repo, config, FixOptions(apply=True, jobs=2))
    return Session(repo, run, check(repo, config, CheckOptions(jobs=2)))


def _verified_at(session: Session, module: str, site: str) -> FixResult:
    result = session.result(f"sitedemo/{module}.py")
    return _verified(result, site)


def _verified(result: FixResult, site: str) -> FixResult:
    assert (result.status, result.recipe, result.variant) == (FixStatus.VERIFIED, "item", "capture_scalar_outputs"), (
        result.reason
    )
    assert result.paths == (site,)  # the setting is where the compile is, not in the model's module
    assert "frames running eagerly 1 → 0" in result.summary and result.summary.endswith(CONFIRMED)
    return result


def test_a_training_script_that_keeps_its_compiled_model_gets_the_setting_before_the_compile(session):
    _verified_at(session, "kept", "train_kept.py")
    text = session.text("train_kept.py")
    assert "model = Model()\ntorch._dynamo.config.capture_scalar_outputs = True\nmodel = torch.compile(model)" in text
    assert "model.eval()" in text  # still a module: nothing wrapped it into a function


def test_a_compiled_instance_called_at_once_is_wrapped_for_that_compile_only(session):
    _verified_at(session, "called", "sitedemo/called.py")
    assert "torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(v))(batch())" in session.text(
        "sitedemo/called.py"
    )


def test_a_module_compiling_itself_gets_the_setting_before_model_compile(session):
    _verified_at(session, "selfcompiled", "sitedemo/selfcompiled.py")
    assert "    torch._dynamo.config.capture_scalar_outputs = True\n    m.compile()\n" in session.text(
        "sitedemo/selfcompiled.py"
    )


def test_a_compile_in_the_call_targets_module_of_another_modules_model(session):
    _verified_at(session, "target", "sitedemo/entry.py")
    assert "torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(target.Model()))" in session.text(
        "sitedemo/entry.py"
    )
    assert session.text("sitedemo/target.py") == (PROJECT / "sitedemo/blocks.py").read_text()


def test_a_decorated_method_of_a_model_holding_another_modules_blocks_gets_the_setting_above_its_decorator(session):
    _verified(session.result("sitedemo/blocks.py"), "sitedemo/decorated.py")
    assert "    @torch._dynamo.config.patch(capture_scalar_outputs=True)\n    @torch.compile\n    def synthesize" in (
        session.text("sitedemo/decorated.py")
    )


def test_one_break_reached_from_two_entrypoints_is_fixed_at_both_sites_verified_together(session):
    result = session.result("sitedemo/shared.py")
    assert result.status is FixStatus.VERIFIED, result.reason
    assert set(result.paths) == {"sitedemo/bench.py", "train_shared.py"}
    assert set(result.entrypoints) == {"bench", "train-shared"}
    assert " across 2 entrypoints" in result.summary and "frames running eagerly 2 → 0" in result.summary
    assert (result.before.frames_skipped, result.after.breaks) == (2, 0)
    assert "torch._dynamo.config.patch(capture_scalar_outputs=True)(torch.compile(Model()))" in session.text(
        "sitedemo/bench.py"
    )
    assert "torch._dynamo.config.capture_scalar_outputs = True\nmodel = torch.compile(Model())" in session.text(
        "train_shared.py"
    )


def test_the_second_rounds_setting_joins_the_first_rounds_config_patch(session):
    first, second = session.result("sitedemo/merged.py", 9), session.result("sitedemo/merged.py", 10)
    assert [(r.variant, r.round, r.status) for r in (first, second)] == [
        ("capture_dynamic_output_shape_ops", 1, FixStatus.VERIFIED),
        ("capture_scalar_outputs", 2, FixStatus.VERIFIED),
    ]
    assert second.fingerprint in first.revealed
    text = session.text("sitedemo/merged.py")
    assert (
        "torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True, capture_scalar_outputs=True)"
        "(torch.compile(route))(torch.randn(6))"
    ) in text
    assert text.count("config.patch") == 1


def test_check_agrees_nothing_breaks_and_no_frame_runs_eagerly(session):
    assert {e.name: (e.break_count, e.frames_skipped) for e in session.after.entrypoints} == {
        e.name: (0, 0) for e in session.after.entrypoints
    }
    assert len(session.after.entrypoints) == 8
    assert session.run.overall.ok
