"""`gbbot fix --measure`, real torch: a model whose `forward` calls a helper that prints (the break
one call deeper), compiled as `torch.compile(model, backend="eager")` (the timed runs are faithful: they
compile as the code says) and called in a loop. The verified fix is
timed in faithful mode, `--repeat` runs without the patch and as many with it, interleaved: the
JSON carries one figure per run on each side, the spread and the ratio, and the terminal and the
markdown say it in one phrase. No timing is asserted: the machine decides those."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from gbbot.main import main
from tests.conftest import git

MODEL = """
import torch


def show(y):
    print("activations", y.shape)
    return y


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(32, 32)
        self.outer = torch.nn.Linear(32, 4)

    def forward(self, x):
        y = self.inner(x).relu()
        y = show(y)
        return self.outer(y)


def run():
    torch.manual_seed(0)
    model = torch.compile(Block(), backend="eager")  # timed runs compile for real: no kernels to build
    x = torch.randn(8, 32)
    with torch.no_grad():
        for _ in range(12):
            out = model(x)
    return out
"""


def make_project(repo: Path, mode: str = "fast", warm: bool = True) -> Path:
    (repo / "tiny").mkdir(parents=True)
    (repo / "tiny" / "__init__.py").write_text("")
    (repo / "tiny" / "model.py").write_text(textwrap.dedent(MODEL))
    runner = "" if warm else "runner: {warm: false}\n"
    config = (
        f"version: 1\nmode: {mode}\n{runner}entrypoints:\n  - {{name: loop, call: 'tiny.model:run', timeout: 300}}\n"
    )
    (repo / ".gbbot.yml").write_text(config)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "project")
    return repo


@pytest.mark.parametrize("warm", [True, False], ids=["warm-server", "fresh-process"])
def test_measure_times_the_verified_fix_on_each_side(tmp_path, capsys, warm):
    """In a fork of the warm server (the shim loaded after torch) and in a fresh process (the
    shim as sitecustomize, before torch)."""
    repo = make_project(tmp_path / "repo", warm=warm)
    out_json, out_md = tmp_path / "fix.json", tmp_path / "fix.md"
    argv = ["fix", "--root", str(repo), "--measure", "--repeat", "2", "--json", str(out_json)]
    code = main([*argv, "--markdown", str(out_md)])
    assert code == 0
    terminal = capsys.readouterr()
    fixes = json.loads(out_json.read_text())["extra"]["fixes"]
    verified = [f for f in fixes if f["status"] == "verified"]
    assert len(verified) == 1 and verified[0]["file"] == "tiny/model.py"
    measured = verified[0]["measured"]
    assert measured["repeat"] == 2 and measured["mode"] == "faithful" and measured["device"] == "cpu"
    assert measured["entrypoints"] == ["loop"]
    assert len(measured["before_s_per_call"]) == 2 and len(measured["after_s_per_call"]) == 2
    assert all(t > 0 for t in [*measured["before_s_per_call"], *measured["after_s_per_call"]])
    assert measured["not_measurable"] == "" and measured["spread_s"] >= 0 and measured["ratio"] > 0
    assert measured["phrase"].startswith("measured: ")
    assert "over 2 runs each, faithful mode, cpu)" in measured["phrase"]
    assert f"#   {measured['phrase']}" in terminal.out
    assert "2 timed runs without the patch and 2 with it" in terminal.err
    assert f"⏱️ {measured['phrase']}." in out_md.read_text()
    assert (repo / "tiny" / "model.py").read_text() == textwrap.dedent(MODEL)  # measured, not written


def test_repeat_one_is_refused(tmp_path, capsys):
    repo = make_project(tmp_path / "repo")
    assert main(["fix", "--root", str(repo), "--measure", "--repeat", "1"]) == 2
    assert "--repeat 1: between 2 and 20 (one timing alone is never reported)" in capsys.readouterr().err


def test_repeat_without_measure_is_refused(tmp_path, capsys):
    repo = make_project(tmp_path / "repo")
    assert main(["fix", "--root", str(repo), "--repeat", "3"]) == 2
    assert "add --measure" in capsys.readouterr().err


def test_measure_in_fast_mode_times_faithful_runs(tmp_path, capsys):
    """Fast mode generates no code, so its calls say nothing about speed: the fix is verified
    in the mode asked, the timed runs are faithful, and the figures say so."""
    repo = make_project(tmp_path / "repo", mode="faithful")
    out_json = tmp_path / "fix.json"
    assert main(["fix", "--root", str(repo), "--mode=fast", "--measure", "--repeat", "2", "--json", str(out_json)]) == 0
    report = json.loads(out_json.read_text())
    assert report["mode"] == "fast"
    (verified,) = [f for f in report["extra"]["fixes"] if f["status"] == "verified"]
    assert verified["measured"]["mode"] == "faithful"
    assert "faithful mode" in capsys.readouterr().out


NOTE = """
def note(y):
    print("norm", y.norm())
    return y
"""


def test_several_fixes_are_measured_each_alone_and_all_together(tmp_path, capsys):
    repo = make_project(tmp_path / "repo")
    (repo / "tiny" / "notes.py").write_text(textwrap.dedent(NOTE))
    model = (repo / "tiny" / "model.py").read_text()
    model = model.replace("import torch\n", "import torch\n\nfrom tiny.notes import note\n", 1)
    (repo / "tiny" / "model.py").write_text(model.replace("return self.outer(y)", "return self.outer(note(y))"))
    git(repo, "commit", "-qam", "a second print, in another file")
    out_json = tmp_path / "fix.json"
    assert main(["fix", "--root", str(repo), "--measure", "--repeat", "2", "--json", str(out_json)]) == 0
    fixes = json.loads(out_json.read_text())["extra"]["fixes"]
    verified = {f["file"]: f["measured"] for f in fixes if f["status"] == "verified"}
    assert set(verified) == {"tiny/model.py", "tiny/notes.py"}
    assert all(len(m["before_s_per_call"]) == len(m["after_s_per_call"]) == 2 for m in verified.values())
    said = capsys.readouterr()
    assert "gbbot fix: every verified patch together, measured: " in said.err  # the summary
    assert said.out.count("over 2 runs each, faithful mode, cpu)") == 2  # one per fix
