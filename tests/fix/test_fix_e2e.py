"""End to end, with real torch: one entrypoint per recipe in a scratch project (plus a patch that
must be dropped and a break inside an installed package). `gbbot fix --apply` runs once for the
module: a baseline run, then the candidates verified (independent ones share a run, a failure is
re-checked alone): each result carries the before/after counts of those real runs. A last
`gbbot check` on the written files shows them as verified."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from gbbot import report
from gbbot.check import CheckOptions, check
from gbbot.config import Config, load_config
from gbbot.fix import present
from gbbot.fix.pipeline import FixOptions, FixRun, fix
from gbbot.fix.result import FixResult, FixStatus
from gbbot.main import main
from gbbot.model import GraphBreak, Report
from gbbot.render import markdown
from tests.conftest import git

PROJECT = Path(__file__).parent / "e2e_project"
pytestmark = pytest.mark.slow

# entrypoint → (module file, the recipe its break needs)
CALLS = {
    "logs": ("fixdemo/logs.py", "logger"),  # and a print
    "warns": ("fixdemo/warns.py", "skipped_call"),
    "channels": ("fixdemo/channels.py", "item"),
    "scalar": ("fixdemo/scalar.py", "item"),
    "weights": ("fixdemo/weights.py", "tolist"),
    "weights64": ("fixdemo/weights64.py", "tolist"),
    "snapshot": ("fixdemo/snapshot.py", "deepcopy"),
    "grads": ("fixdemo/grads.py", "requires_grad"),
    "loop": ("fixdemo/loop.py", "graph_break"),
}


def write_config(repo: Path, site: Path) -> None:
    lines = [
        "version: 1",
        "mode: fast",
        "entrypoints:",
        "  - {name: show, run: python show.py, verify_output: true, timeout: 120}",
    ]
    lines += [f"  - {{name: {name}, call: 'fixdemo.{name}:run', timeout: 120}}" for name in CALLS]
    lines.append(f"  - {{name: uses_lib, call: 'fixdemo.uses_lib:run', timeout: 120, env: {{PYTHONPATH: '{site}'}}}}")
    (repo / ".gbbot.yml").write_text("\n".join(lines) + "\n")


def install_thirdlib(target: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(PROJECT / "thirdlib_src"),
        ],
        check=True,
        capture_output=True,
    )


@dataclass
class Session:
    repo: Path
    pristine: Path
    site: Path
    config: Config
    run: FixRun
    after: Report

    def result(self, entrypoint: str, recipe: str | None = None) -> FixResult:
        fingerprints = {b.fingerprint for e in self.run.report.entrypoints if e.name == entrypoint for b in e.breaks}
        found = [r for r in self.run.results if r.fingerprint in fingerprints and recipe in (None, r.recipe)]
        assert len(found) == 1, (entrypoint, found)
        return found[0]

    def breaks(self, which: Report, entrypoint: str) -> tuple[GraphBreak, ...]:
        return next(e for e in which.entrypoints if e.name == entrypoint).breaks


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> Session:
    base = tmp_path_factory.mktemp("fix-e2e")
    repo, pristine, site = base / "repo", base / "pristine", base / "installed" / "site-packages"
    shutil.copytree(PROJECT, repo, ignore=shutil.ignore_patterns("thirdlib_src", "__pycache__"))
    install_thirdlib(site)
    write_config(repo, site)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "project")
    shutil.copytree(repo, pristine, symlinks=True)
    config = load_config(repo / ".gbbot.yml")
    run = fix(repo, config, FixOptions(apply=True, jobs=2))
    after = check(repo, config, CheckOptions(only=("loop", "snapshot"), jobs=2))
    return Session(repo, pristine, site, config, run, after)


@pytest.mark.parametrize("entrypoint", ["logs", "warns", "channels", "scalar", "weights", "snapshot", "grads", "loop"])
def test_each_recipe_removes_its_break_and_keeps_the_result(session, entrypoint):
    path, recipe = CALLS[entrypoint]
    result = session.result(entrypoint, recipe)
    assert (result.status, result.recipe, result.file) == (FixStatus.VERIFIED, recipe, path)
    assert result.summary.startswith("removes 1 break") and result.summary.endswith("outputs equal")
    assert recipe in [b.fix for b in session.breaks(session.run.report, entrypoint)]
    assert result.before.breaks - (result.after.breaks - len(result.revealed)) == 1
    assert path in session.run.written


def test_the_item_recipe_uses_the_int_when_the_tensor_was_built_from_one(session):
    assert session.result("channels").variant == "constant"
    assert "self.n_channels_value = int(hidden)" in (session.repo / "fixdemo/channels.py").read_text()
    assert session.result("scalar").variant == "capture_scalar_outputs"


def test_a_print_whose_output_matters_is_kept_in_the_graph_not_guarded(session):
    result = session.result("show")
    assert (result.status, result.variant) == (FixStatus.VERIFIED, "hop")
    assert result.tried == ("guard: the output of show changed (verify_output is on)",)
    text = (session.repo / "show.py").read_text()
    assert 'torch._higher_order_ops.print("{}", "step done")' in text
    assert '    print("result", out.tolist())  # outside the compiled region' in text  # the look-alike stays
    assert (result.before.breaks, result.after.breaks) == (1, 0)


def test_removing_a_loop_break_reports_the_breaks_it_revealed(session):
    result = session.result("loop")
    assert "reveals 1 that an eager frame hid" in result.summary
    assert "frames run eagerly 1 → 0" in result.summary
    (revealed,) = session.breaks(session.after, "loop")
    assert revealed.fingerprint in result.revealed and revealed.gb_id == "GB0059"


def test_a_patch_that_changes_the_result_is_dropped_with_its_reason(session):
    result = session.result("weights64")
    assert result.status is FixStatus.DROPPED
    assert result.reason.startswith("the result of weights64 changed: The values for attribute 'dtype' do not match")
    assert result.summary.endswith("outputs differ")
    assert result.diff is None and not result.hunks
    assert (session.repo / "fixdemo/weights64.py").read_text() == (PROJECT / "fixdemo/weights64.py").read_text()


def test_a_break_inside_an_installed_package_gets_a_scaffold_and_the_package_is_untouched(session):
    result = session.result("uses_lib")
    assert result.status is FixStatus.SCAFFOLD and result.file == "fixdemo/uses_lib.py"
    assert "at thirdlib/__init__.py:11 in Scaler.forward" in result.scaffold
    assert "class CompilableScaler(Scaler):" in result.scaffold
    installed = session.site / "thirdlib" / "__init__.py"
    assert installed.read_text() == (PROJECT / "thirdlib_src/thirdlib/__init__.py").read_text()
    assert "fixdemo/uses_lib.py" not in session.run.written


def test_patches_sharing_a_file_are_verified_together_before_writing(session):
    (joint,) = session.run.joint  # the print and the logger call in fixdemo/logs.py; the rest stand alone
    assert joint.ok and joint.summary.startswith("removes 2 breaks")
    assert (joint.before.breaks, joint.after.breaks) == (2, 0)
    text = (session.repo / "fixdemo/logs.py").read_text()
    assert text.count("if not torch.compiler.is_compiling():") == 2


def test_the_verified_patches_are_written_and_check_agrees(session):
    assert set(session.run.written) == {path for name, (path, _) in CALLS.items() if name != "weights64"} | {"show.py"}
    assert session.breaks(session.after, "snapshot") == ()
    assert [b.gb_id for b in session.breaks(session.after, "loop")] == ["GB0059"]  # the revealed print


def test_the_report_carries_the_results_and_renders_them(session, tmp_path):
    path = tmp_path / "report.json"
    report.write(session.run.report, path)
    loaded = report.load(path)
    results = present.results_of(loaded)
    assert results == session.run.results
    text = markdown.render(loaded, markdown.Options(extra=present.markdown_extra(results)))
    assert "✅ **Verified fix** (`deepcopy` recipe): removes 1 break" in text
    assert "❌ **Candidate fix dropped** (`tolist` recipe)" in text
    assert "🧩 **Scaffold, not a verified fix**" in text


def _report_file(session: Session, tmp_path: Path) -> Path:
    path = tmp_path / "report.json"
    report.write(session.run.report, path)
    return path


def test_cli_prints_the_diff_for_one_break_and_applies_it(session, tmp_path, capsys):
    repo = tmp_path / "repo"
    shutil.copytree(session.pristine, repo, symlinks=True)
    snapshot = session.result("snapshot").fingerprint
    args = [
        "fix",
        "--root",
        str(repo),
        "--report",
        str(_report_file(session, tmp_path)),
        "--break",
        snapshot,
        "--apply",
    ]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("# fixdemo/snapshot.py:7 deepcopy (clone) — verified: removes 1 break")
    assert "-    kept = copy.deepcopy(x)\n+    kept = x.detach().clone()\n" in captured.out
    assert "gbbot fix: wrote fixdemo/snapshot.py" in captured.err
    assert git(repo, "status", "--porcelain") == "M fixdemo/snapshot.py"


def test_cli_skips_a_file_with_a_syntax_error_with_a_message(session, tmp_path, capsys):
    repo = tmp_path / "repo"
    shutil.copytree(session.pristine, repo, symlinks=True)
    broken = (repo / "fixdemo/logs.py").read_text().replace("return x * 2", "return x * 2)")
    (repo / "fixdemo/logs.py").write_text(broken)
    args = ["fix", "--root", str(repo), "--report", str(_report_file(session, tmp_path)), "--only", "logger", "--apply"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert (
        "fixdemo/logs.py:11 logger — skipped: fixdemo/logs.py does not parse (line 12: unmatched ')')" in captured.out
    )
    assert "1 skipped" in captured.err
    assert (repo / "fixdemo/logs.py").read_text() == broken


def test_cli_rejects_an_unknown_break(session, tmp_path, capsys):
    args = [
        "fix",
        "--root",
        str(session.pristine),
        "--report",
        str(_report_file(session, tmp_path)),
        "--break",
        "ffffffffffffffff",
        "--only",
        "GB0170",
    ]
    assert main(args) == 2
    assert "--break ffffffffffffffff: no such break in the report" in capsys.readouterr().err
