"""End to end, with real torch: one entrypoint per recipe in a scratch project (plus a patch that
must be dropped, a break inside an installed package, and breaks that only a fix reveals).
`gbbot fix --apply` runs once for the module: a baseline run, then rounds of candidates verified
(independent ones share a run, a failure is re-checked alone) and put in place, until nothing new
is revealed: each result carries the before/after counts of those real runs. A last `gbbot check`
on the written files shows them as verified."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from gbbot.analysis import report
from gbbot.checks.tree import CheckOptions, check
from gbbot.core.config import Config, load_config
from gbbot.core.fixes import FixResult, FixStatus
from gbbot.core.model import GraphBreak, Report
from gbbot.fix.pipeline import FixOptions, FixRun, fix
from gbbot.main import main
from gbbot.render import markdown
from tests.conftest import git

PROJECT = Path(__file__).parent / "e2e_project"
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
    lines.append("  - {name: steps, call: 'fixdemo.steps:run', timeout: 120}")
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
    after = check(repo, config, CheckOptions(only=("loop", "snapshot", "steps"), jobs=2))
    return Session(repo, pristine, site, config, run, after)


@pytest.mark.parametrize("entrypoint", ["logs", "warns", "channels", "scalar", "weights", "snapshot", "grads", "loop"])
def test_each_recipe_removes_its_break_and_keeps_the_result(session, entrypoint):
    path, recipe = CALLS[entrypoint]
    result = session.result(entrypoint, recipe)
    assert (result.status, result.recipe, result.file) == (FixStatus.VERIFIED, recipe, path)
    # a setting that hands the compiler numbers read from tensors is compiled for real too
    ending = "outputs equal; confirmed in faithful mode" if entrypoint == "scalar" else "outputs equal"
    assert result.summary.startswith("removes 1 break") and result.summary.endswith(ending), result.summary
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


def test_removing_a_loop_break_fixes_the_break_it_revealed_in_a_second_round(session):
    removed = session.result("loop")
    assert removed.round == 1 and "reveals 1 that an eager frame hid" in removed.summary
    assert "frames running eagerly 1 → 0" in removed.summary
    (revealed,) = [r for r in session.run.results if r.fingerprint in removed.revealed]
    assert (revealed.status, revealed.recipe, revealed.round, revealed.line) == (FixStatus.VERIFIED, "print", 2, 8)
    text = (session.repo / "fixdemo/loop.py").read_text()
    assert "torch._dynamo.graph_break()" not in text
    assert '    if not torch.compiler.is_compiling():\n        print("after the loop")' in text
    assert session.breaks(session.after, "loop") == ()


def test_a_logger_break_that_sends_a_loop_frame_to_eager_and_the_print_it_hid_are_fixed_in_two_rounds(session):
    logger = session.result("steps")
    (printed,) = [r for r in session.run.results if r.fingerprint in logger.revealed]
    assert [(r.recipe, r.round, r.status) for r in (logger, printed)] == [
        ("logger", 1, FixStatus.VERIFIED),
        ("print", 2, FixStatus.VERIFIED),
    ]
    assert logger.summary.endswith("frames running eagerly 1 → 0; outputs equal")
    assert printed.summary.endswith("outputs equal")
    # the later fix's diff and suggestion name the lines of the file as the user has it
    assert printed.diff.startswith("--- a/fixdemo/steps.py")
    assert '\n         log.debug("step %d", i)' in printed.diff  # context: the unguarded original line
    assert [(h.start_line, h.end_line) for h in printed.hunks] == [(12, 12)]
    (after,) = [e for e in session.after.entrypoints if e.name == "steps"]
    assert (after.breaks, after.frames_skipped) == ((), 0)
    assert session.run.overall.ok and session.run.overall.summary.endswith("outputs equal")


def test_the_totals_are_those_of_a_final_run_of_the_patched_copy(session):
    before, after = session.run.totals
    final = {e.name: e for e in session.run.after.entrypoints}
    for checked in session.after.entrypoints:  # a later, independent check of the written files
        assert (final[checked.name].break_count, final[checked.name].graph_count) == (
            checked.break_count,
            checked.graph_count,
        )
    assert before.frames_skipped == 2 and after.frames_skipped == 0  # loop and steps now compile
    first = [r for r in session.run.results if r.round == 1 and r.status is FixStatus.VERIFIED]
    assert [(r.number, r.fixed) for r in session.run.rounds] == [(1, len(first)), (2, 2)]
    assert not session.run.left


def test_one_round_fixes_only_what_the_first_run_shows_and_names_what_it_revealed(session, tmp_path, capsys):
    repo = tmp_path / "repo"
    shutil.copytree(session.pristine, repo, symlinks=True)
    assert main(["fix", "--root", str(repo), "-e", "steps", "--rounds", "1", "--apply"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("# fixdemo/steps.py:11 logger (guard) — verified")
    assert captured.out.count("— verified") == 1
    assert (
        "round 1 revealed 1 break (GB0059 print at fixdemo/steps.py:12), not fixed: no round left (--rounds)"
        in captured.err
    )
    assert "breaks 1 → 1, graphs 0 → 2, frames running eagerly 1 → 0" in captured.err
    text = (repo / "fixdemo/steps.py").read_text()
    assert text.count("if not torch.compiler.is_compiling():") == 1 and '    print("steps done")' in text


def test_a_patch_that_changes_the_result_is_dropped_with_its_reason(session):
    result = session.result("weights64")
    assert result.status is FixStatus.DROPPED
    assert result.reason.startswith("the result of weights64 changed: The values for attribute 'dtype' do not match")
    assert result.summary.endswith("outputs differ")
    assert result.diff is None and not result.hunks
    assert (session.repo / "fixdemo/weights64.py").read_text() == (PROJECT / "fixdemo/weights64.py").read_text()


def test_a_print_inside_an_installed_package_gets_a_finished_override_and_the_package_is_untouched(session):
    """The library's `Scaler.forward` prints: the fix is a subclass in the user's file with that line
    guarded by the print recipe, used where the user's code makes a `Scaler`, verified by re-running."""
    result = session.result("uses_lib")
    assert result.status is FixStatus.VERIFIED and result.file == "fixdemo/uses_lib.py"
    assert (result.before.breaks, result.after.breaks) == (1, 0) and result.summary.endswith("outputs equal")
    text = (session.repo / "fixdemo/uses_lib.py").read_text()
    assert "class CompilableScaler(Scaler):" in text and "torch.compile(CompilableScaler())" in text
    assert "if not torch.compiler.is_compiling():" in text
    installed = session.site / "thirdlib" / "__init__.py"
    assert installed.read_text() == (PROJECT / "thirdlib_src/thirdlib/__init__.py").read_text()
    assert "fixdemo/uses_lib.py" in session.run.written


def test_patches_sharing_a_file_are_verified_together_before_writing(session):
    (joint,) = session.run.joint  # the print and the logger call in fixdemo/logs.py; the rest stand alone
    assert joint.ok and joint.summary.startswith("removes 2 breaks")
    assert (joint.before.breaks, joint.after.breaks) == (2, 0)
    text = (session.repo / "fixdemo/logs.py").read_text()
    assert text.count("if not torch.compiler.is_compiling():") == 2


def test_the_verified_patches_are_written_and_check_agrees(session):
    written = {path for name, (path, _) in CALLS.items() if name != "weights64"}
    written |= {"show.py", "fixdemo/steps.py", "fixdemo/uses_lib.py"}
    assert set(session.run.written) == written
    assert session.breaks(session.after, "snapshot") == ()


def test_the_report_carries_the_results_and_renders_them(session, tmp_path):
    path = tmp_path / "report.json"
    report.write(session.run.report, path)
    loaded = report.load(path)
    assert loaded.fixes == session.run.results == session.run.report.fixes
    text = markdown.render(loaded)
    assert "✅ **Verified fix** (`deepcopy` recipe): removes 1 break" in text
    assert "❌ **Candidate fix dropped** (`tolist` recipe)" in text
    assert "✅ **Verified fix** (`print` recipe): removes 1 break; graphs 2 → 1" in text  # the library's print


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
