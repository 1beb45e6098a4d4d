"""Breaks inside an installed library, fixed in the user's code (real torch). A stand-in library
(tests/e2e/fix/library_project/libmodels_src, pip-installed by the test) has a model class per
kind of break seen in real libraries: a logger call, an `.item()` whose number feeds only
arithmetic, a `nonzero`, an `if` that only raises (that one gets a finished subclass override),
and VITS's pair: a size read from a tensor (`torch.arange(lengths.max())`, GB0033) after an
encoder whose layer-drop draw (`np.random.uniform`, in a loop) breaks too, as another kind once
scalars are captured; XLM's `assert` on an `.item()` in a decorated method; EnCodec's LSTM. The
app makes each model and compiles it one call deeper, in a helper (`compiled(Model())`,
`torch.compile` in app/build.py, which every model shares). `gbbot fix --apply` runs once: each break
the installed torch can take by a setting gets that setting around the call of its own model (not
at the shared compile, where it would reach every model), verified by re-running (break gone,
outputs equal) and, for a setting that changes what the compiler is given, by one run with the
compiler itself; the library is untouched. Beside them, an entrypoint whose result is random (its
print guard cannot be judged by outputs, and the fix says why), and one compiled with a backend
that refuses numbers read from tensors (fast mode passes its setting; the faithful run drops it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import load_config
from gbbot.core.fixes import FixResult, FixStatus
from gbbot.core.model import Report
from gbbot.fix.pipeline import FixOptions, FixRun, fix
from tests.conftest import git

PROJECT = Path(__file__).parent / "library_project"
LIBRARY = PROJECT / "libmodels_src"
NAMES = ("chatty", "normalised", "sparse", "checked", "noisy", "durations", "strict", "lengths", "recurrent")


@dataclass
class Session:
    repo: Path
    site: Path
    run: FixRun
    after: Report

    def result(self, entrypoint: str) -> FixResult:
        fingerprints = {b.fingerprint for e in self.run.report.entrypoints if e.name == entrypoint for b in e.breaks}
        (found,) = [r for r in self.run.results if r.fingerprint in fingerprints]
        return found

    def at_library_line(self, entrypoint: str, code: str) -> FixResult:
        """The result for the break inside the library at the line reading `code`: all of one
        model's library breaks share the app's line that calls the model."""
        (brk,) = [
            b
            for e in self.run.report.entrypoints
            if e.name == entrypoint
            for b in e.breaks
            if b.library_site and b.library_site.code.strip() == code
        ]
        (found,) = [r for r in self.run.results if r.fingerprint == brk.fingerprint]
        return found

    def breaks(self, entrypoint: str) -> int:
        return sum(len(e.breaks) for e in self.after.entrypoints if e.name == entrypoint)


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> Session:
    base = tmp_path_factory.mktemp("library-fixes")
    repo, site = base / "repo", base / "installed" / "site-packages"
    shutil.copytree(PROJECT / "app", repo / "app", ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    subprocess.run([*pip, "--target", str(site), str(LIBRARY)], check=True, capture_output=True)
    entries = [f"  - {{name: {n}, call: 'app.{n}:run', timeout: 120, env: {{PYTHONPATH: '{site}'}}}}" for n in NAMES]
    (repo / ".gbbot.yml").write_text("\n".join(["version: 1", "mode: fast", "entrypoints:", *entries]) + "\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "app")
    config = load_config(repo / ".gbbot.yml")
    run = fix(repo, config, FixOptions(apply=True, jobs=2))
    after = check(repo, config, CheckOptions(jobs=2))
    return Session(repo, site, run, after)


@pytest.mark.parametrize(
    ("entrypoint", "variant"),
    [
        ("chatty", "ignore_logging_functions"),
        ("normalised", "capture_scalar_outputs"),
        ("sparse", "capture_dynamic_output_shape_ops"),
        ("recurrent", "allow_rnn"),
    ],
)
def test_a_library_break_gets_its_setting_around_its_models_call_verified(session, entrypoint, variant):
    result = session.result(entrypoint)
    assert result.status is FixStatus.VERIFIED, result.reason
    assert result.variant == f"{variant}_at_call"
    assert result.file == f"app/{entrypoint}.py"  # the break's line in the user's code
    assert {h.path for h in result.hunks} == {f"app/{entrypoint}.py"}  # the setting: around that call
    assert "outputs equal" in result.summary
    # the settings that hand the compiler numbers read from tensors, or an LSTM, were compiled for real
    confirmed = result.summary.endswith("; confirmed in faithful mode")
    assert confirmed is (variant != "ignore_logging_functions")
    assert session.breaks(entrypoint) == 0


def test_each_setting_is_written_around_its_models_call_and_the_library_is_untouched(session):
    for entrypoint, setting in (
        ("chatty", "ignore_logging_functions={logging.Logger.warning}"),
        ("normalised", "capture_scalar_outputs=True"),
        ("sparse", "capture_dynamic_output_shape_ops=True"),
        ("recurrent", "allow_rnn=True"),
    ):
        text = (session.repo / f"app/{entrypoint}.py").read_text()
        wrapped = text.split(f"with torch._dynamo.config.patch({setting}):\n", 1)[1]
        assert wrapped.lstrip().startswith("return model("), text
    build = (session.repo / "app/build.py").read_text()
    assert "ignore_logging_functions" not in build and "allow_rnn" not in build
    installed = session.site / "libmodels" / "__init__.py"
    assert installed.read_text() == (LIBRARY / "libmodels" / "__init__.py").read_text()


def test_a_library_branch_that_only_raises_gets_a_finished_override_used_where_the_model_is_made(session):
    result = session.result("checked")
    assert result.status is FixStatus.VERIFIED, result.reason
    assert (result.recipe, result.variant) == ("tensor_branch", "override")
    checked = (session.repo / "app/checked.py").read_text()
    assert "class CompilableChecked(Checked):\n    def forward(self, x):\n        torch._check(" in checked
    assert "# Copied from libmodels (version unknown), libmodels/__init__.py:" in checked  # (not in gbbot's path)
    assert "model = compiled(CompilableChecked())" in checked
    assert session.breaks("checked") == 0
    installed = session.site / "libmodels" / "__init__.py"
    assert "raise ValueError" in installed.read_text()


def test_an_entrypoint_whose_result_differs_unpatched_is_named_not_reproducible(session):
    result = session.result("noisy")
    assert result.status is FixStatus.DROPPED
    assert result.reason.startswith("noisy itself is not reproducible: a second run without any patch differs")
    assert result.reason.count("the result of noisy changed") == 1 and not result.tried  # said once
    assert result.summary.startswith("not kept (noisy itself is not reproducible")


def test_a_size_read_from_a_tensor_gets_capture_scalar_outputs_though_the_models_other_break_changes_kind(session):
    # With the setting, the layer-drop draw breaks as "could not guard on a data-dependent
    # float" instead of GB0033 (and its loop still runs eagerly): that break is the draw's, where
    # Dynamo stopped before too, neither a rename of the size's break nor what hides it.
    sized = session.at_library_line("durations", "positions = torch.arange(lengths.max())")
    assert sized.status is FixStatus.VERIFIED, sized.reason
    assert (sized.recipe, sized.variant) == ("item", "capture_scalar_outputs_at_call")
    assert {h.path for h in sized.hunks} == {"app/durations.py"}
    assert "outputs equal" in sized.summary
    drawn = session.at_library_line("durations", "draw = np.random.uniform(0, 1)")
    assert drawn.status is FixStatus.SCAFFOLD
    assert "capture_scalar_outputs not tried: the number decides a branch" in drawn.reason
    left = [b for e in session.after.entrypoints if e.name == "durations" for b in e.breaks]
    assert left and {b.library_site.code.strip() for b in left} == {"draw = np.random.uniform(0, 1)"}


def test_a_setting_the_codes_own_backend_cannot_compile_is_dropped_though_fast_mode_passed_it(session):
    # app/strict.py compiles with a backend that refuses numbers read from tensors, as Inductor
    # (torch 2.13) refuses some graphs `capture_scalar_outputs` lets through; fast mode swaps the
    # backend for one that generates no code, so only the faithful run can tell.
    result = session.result("strict")
    assert result.status is FixStatus.DROPPED
    assert result.variant == "capture_scalar_outputs"  # its own compile, next to its call
    assert "with capture_scalar_outputs on, the compiler the code names fails" in result.reason
    assert "this backend compiles no number read from a tensor" in result.reason
    assert result.summary.startswith("not kept (with capture_scalar_outputs on")
    assert "capture_scalar_outputs = True" not in (session.repo / "app/strict.py").read_text()
    assert "capture_scalar_outputs=True" not in (session.repo / "app/strict.py").read_text()
    assert session.breaks("strict") == 1


def test_an_assert_in_a_decorated_library_method_gets_an_override_that_imports_what_the_copy_reads(session):
    # as XLM's forward: the override copies a decorated method that calls a helper of the
    # library's module; both names come from the library, the assert becomes `torch._check`
    result = session.at_library_line("lengths", "assert lengths.max().item() <= x.shape[1]")
    assert result.status is FixStatus.VERIFIED, result.reason
    assert (result.recipe, result.variant) == ("item", "override")
    text = (session.repo / "app/lengths.py").read_text()
    assert "from libmodels import kept_as_called, masks  # what the copied method uses\n\n\n# Copied from" in text
    assert "    @kept_as_called\n    def forward(self, x):" in text
    assert "        torch._check(lengths.max().item() <= x.shape[1])\n" in text
    assert "model = compiled(CompilableLengths())" in text
    assert session.breaks("lengths") == 0
    installed = session.site / "libmodels" / "__init__.py"
    assert "assert lengths.max().item() <= x.shape[1]" in installed.read_text()


def test_the_helpers_assert_that_the_override_removes_too_says_so(session):
    # `masks` is a function, not a method: no override; once the override's setting is on, its
    # assert on an integer is checked at run time and the break is gone with the other's fix
    helper = session.at_library_line("lengths", "assert lengths.max().item() <= size")
    assert helper.status is FixStatus.SCAFFOLD
    assert helper.reason.endswith(
        "; gone once the verified patches are in place: a fix for another break removes it too"
    ), helper.reason
    assert session.breaks("lengths") == 0
