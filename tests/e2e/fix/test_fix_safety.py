"""`gbbot fix` is safe to run: results are unpickled only in children of the runner, never in
gbbot's process; a patch never lands in the working tree through a link (git-ignored directories
are linked into the scratch copy), even when the run is killed; `--apply` writes only onto the
text that was verified, and a file it cannot write costs no other patch. Real torch, real git."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

from gbbot.backends.local import run_local
from gbbot.core.config import Entrypoint, load_config
from gbbot.core.fixes import FixStatus
from gbbot.fix.pipeline import FixOptions, fix
from gbbot.fix.same_output import ChildComparer
from gbbot.main import main
from tests.conftest import git

STEP = """
def step(x):
    print("step")
    return x * 2
"""


def make_repo(repo: Path, files: dict[str, str], entrypoints: list[str]) -> Path:
    for relative, text in {**files, ".gbbot.yml": _config(entrypoints)}.items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "project")
    return repo


def module(head: str, run: str) -> str:
    """A module: imports and helpers, `step` (a compiled function that prints), then `run`."""
    return textwrap.dedent(head) + STEP + textwrap.dedent(run)


def _config(entrypoints: list[str]) -> str:
    lines = ["version: 1", "mode: fast", "entrypoints:"]
    return "\n".join([*lines, *(f"  - {e}" for e in entrypoints)]) + "\n"


# --- results are compared in a child ---------------------------------------------------------


def test_results_are_compared_in_a_child_of_the_runner(tmp_path):
    import torch

    tree, work = tmp_path / "tree", tmp_path / "work"
    tree.mkdir()
    saved = {
        "same": {"out": torch.arange(3.0), "pair": (torch.ones(2), 3)},
        "close": {"out": torch.arange(3.0) + 1e-9, "pair": (torch.ones(2), 3)},
        "other": {"out": torch.arange(3.0) * 2, "pair": (torch.ones(2), 3)},
    }
    for name, value in saved.items():
        torch.save(value, tmp_path / f"{name}.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a pickle")
    compare = ChildComparer(tree, work, load_config_text(tmp_path), run_local)
    entrypoint = Entrypoint("fwd", call="m:run")

    def versus(name: str) -> str | None:
        return compare(entrypoint, str(tmp_path / "same.pt"), str(tmp_path / f"{name}.pt"))

    assert versus("same") is None and versus("close") is None
    assert versus("other").startswith("Tensor-likes are not close!")
    assert versus("junk").startswith("could not compare the results: UnpicklingError")
    assert list(tree.iterdir()) == []  # the inputs are gone from the tree


def load_config_text(tmp_path: Path):
    (tmp_path / ".gbbot.yml").write_text(_config(["{name: fwd, call: 'm:run'}"]))
    return load_config(tmp_path / ".gbbot.yml")


def test_a_result_whose_pickle_runs_code_never_runs_it_in_gbbots_process(tmp_path, capsys):
    marker = tmp_path / "unpickled-by"
    payload = f"""
        import os
        import torch

        def _mark():
            with open({str(marker)!r}, "a") as handle:
                handle.write(f"{{os.getpid()}}\\n")
            return torch.ones(1)

        class Payload:
            def __reduce__(self):
                return (_mark, ())
    """
    run = """
        def run():
            out = torch.compile(step)(torch.ones(3))
            return {"out": out, "pair": (out + 1, 3), "payload": Payload()}
    """
    repo = make_repo(
        tmp_path / "repo", {"pay.py": module(payload, run)}, ["{name: pay, call: 'pay:run', timeout: 120}"]
    )
    assert main(["fix", "--root", str(repo), "--quiet"]) == 0
    assert "1 verified" in capsys.readouterr().err  # the dict, tuple and tensors compared equal
    pids = marker.read_text().split()
    assert pids and str(os.getpid()) not in pids


# --- the scratch copy is a copy ----------------------------------------------------------------


def ignored_module_repo(tmp_path: Path, hold_s: float) -> tuple[Path, Path]:
    """A compiled module in a git-ignored directory. Its patched run records whether the real
    file was patched at that moment, and its pid, then holds still for `hold_s`."""
    repo, flag = tmp_path / "repo", tmp_path / "patched-run"
    real = repo / "generated" / "model.py"
    head = """
        import os
        import pathlib
        import time
        import torch
    """
    run = f"""
        def run():
            if "is_" + "compiling" in pathlib.Path(__file__).read_text():
                real = "patched" if "is_" + "compiling" in pathlib.Path({str(real)!r}).read_text() else "clean"
                pathlib.Path({str(flag)!r}).write_text(f"{{real}} {{os.getpid()}}")
                time.sleep({hold_s})
            return torch.compile(step)(torch.ones(2))
    """
    files = {".gitignore": "generated/\n", "generated/model.py": module(head, run)}
    make_repo(repo, files, ["{name: gen, call: 'generated.model:run', timeout: 120}"])
    return repo, flag


def test_a_patch_to_a_file_in_an_ignored_directory_never_reaches_the_working_tree(tmp_path):
    repo, flag = ignored_module_repo(tmp_path, hold_s=0)
    original = (repo / "generated/model.py").read_bytes()
    run = fix(repo, load_config(repo / ".gbbot.yml"))
    assert [r.status for r in run.results] == [FixStatus.VERIFIED]
    assert flag.read_text().split()[0] == "clean"  # during the patched run
    assert (repo / "generated/model.py").read_bytes() == original
    assert (repo / "generated").is_dir() and not (repo / "generated").is_symlink()


def test_a_fix_run_killed_midway_leaves_the_ignored_file_untouched(tmp_path):
    repo, flag = ignored_module_repo(tmp_path, hold_s=120)
    original = (repo / "generated/model.py").read_bytes()
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    command = [sys.executable, "-m", "gbbot", "fix", "--root", str(repo), "--quiet"]
    gbbot = subprocess.Popen(command, env=env, start_new_session=True, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not flag.exists() or len(flag.read_text().split()) < 2:
            assert gbbot.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        os.killpg(gbbot.pid, signal.SIGKILL)
        gbbot.wait()
    finally:
        with contextlib.suppress(ProcessLookupError, FileNotFoundError, ValueError):
            os.killpg(int(flag.read_text().split()[1]), signal.SIGKILL)  # the entrypoint's own group
    assert (repo / "generated/model.py").read_bytes() == original


# --- apply only what was verified ----------------------------------------------------------


def two_module_repo(tmp_path: Path) -> Path:
    text = module("import torch\n", "\ndef run():\n    return torch.compile(step)(torch.ones(2))\n")
    files = {"a.py": text, "b.py": text}
    entrypoints = [f"{{name: {n}, call: '{n}:run', timeout: 120}}" for n in "ab"]
    return make_repo(tmp_path / "repo", files, entrypoints)


def test_a_file_edited_after_verification_gets_no_patch(tmp_path):
    repo = two_module_repo(tmp_path)
    edited = (repo / "a.py").read_text() + "# edited while gbbot was verifying\n"

    def edit_during_verification(message: str) -> None:
        if message.startswith("verifying"):
            (repo / "a.py").write_text(edited)

    run = fix(repo, load_config(repo / ".gbbot.yml"), FixOptions(apply=True, progress=edit_during_verification))
    assert [r.status for r in run.results] == [FixStatus.VERIFIED] * 2
    assert (run.written, run.unwritten) == (("b.py",), ("a.py",))
    assert "a.py changed after its patch was verified; not written" in run.notes
    assert (repo / "a.py").read_text() == edited
    assert "is_compiling" in (repo / "b.py").read_text()


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """A file no one may write, root included (immutable), else by its mode."""
    root = os.geteuid() == 0
    subprocess.run(["chattr", "+i", str(path)], check=True) if root else path.chmod(0o444)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True) if root else path.chmod(0o644)


def test_a_read_only_file_is_skipped_and_the_other_patches_are_written(tmp_path, capsys):
    repo = two_module_repo(tmp_path)
    original = (repo / "a.py").read_text()
    with read_only(repo / "a.py"):
        code = main(["fix", "--root", str(repo), "--apply", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    assert "gbbot fix: a.py: cannot write it (" in err and "gbbot fix: wrote b.py" in err
    assert "verified but not written: a.py" in err
    assert (repo / "a.py").read_text() == original and "is_compiling" in (repo / "b.py").read_text()
