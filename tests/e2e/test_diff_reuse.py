"""`gbbot diff` runs the base first, whole, and then the head only for the entrypoints whose base runs
read something the change touches (a file modified or removed, a directory that gains or loses a
module, anything read by another program); the others' head results are the base's. The
comparison must come out exactly as when every head runs (`--no-warm`: nothing is recorded, so
nothing is skipped), and the head's own record of its reads decides nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gbbot.main import main
from tests.conftest import git

COMPILED = """
@torch.compile
def run(x):
    x = x + 1
    {body}
    return x * 2

run(torch.ones(3))
"""
FILES = {
    "lib_a.py": "import torch\n\ndef step(x):\n    return torch.sin(x)\n",
    "a.py": "import torch\nfrom lib_a import step\n" + COMPILED.format(body="x = step(x)"),
    "b.py": "import torch\n" + COMPILED.format(body='print("b")'),
    "settings.json": '{"loud": false}\n',
    "README.md": "# a project\n",
    "c.py": "import json, torch\nLOUD = json.load(open('settings.json'))['loud']\n"
    + COMPILED.format(body='print("loud") if LOUD else None'),
    "plugins/__init__.py": "",
    "plugins/extra.py": "def shout():\n    print('shout')\n",
    "d.py": "import torch\ntry:\n    from plugins import extra\nexcept ImportError:\n    extra = None\n"
    + COMPILED.format(body="extra.shout() if extra else None"),
    "e.py": "import subprocess, torch\nsubprocess.run(['true'], check=True)\n" + COMPILED.format(body='print("e")'),
}
CONFIG = "version: 1\nentrypoints:\n" + "".join(f"  - {{name: {n}, run: python {n}.py}}\n" for n in "abcde")


@pytest.fixture
def project(in_git_dir: Path) -> Path:
    repo = in_git_dir
    for name, text in FILES.items():
        (repo / name).parent.mkdir(exist_ok=True)
        (repo / name).write_text(text)
    (repo / ".gbbot.yml").write_text(CONFIG)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "lib_a.py").write_text("import torch\n\ndef step(x):\n    print('step')\n    return torch.sin(x)\n")
    (repo / "settings.json").write_text('{"loud": true}\n')
    (repo / "plugins" / "extra.py").unlink()
    git(repo, "commit", "-qam", "head")
    return repo


def diff(repo: Path, capsys, *flags: str) -> tuple[dict, str]:
    out = repo.parent / "report.json"
    args = ["diff", "--base", "HEAD~1", "--root", str(repo), "--json", str(out), "--fail-on", "none", *flags]
    assert main(args) == 0
    return json.loads(out.read_text())["diff"], capsys.readouterr().err


def by_entrypoint(found: dict) -> dict:
    return {e["name"]: {k: e[k] for k in ("new", "fixed", "persisting", "graph_delta", "no_baseline")}
            for e in found["entrypoints"]}  # fmt: skip


def ran_on_head(err: str) -> list[str]:
    """The entrypoints whose head run's progress line the log shows (base runs say `(base …)`)."""
    return [line.split("] ")[1].split(":")[0] for line in err.splitlines() if "] " in line and "(base " not in line]


def test_the_head_runs_only_where_the_change_reaches_and_the_diff_is_the_same(project, capsys):
    reused, err = diff(project, capsys)
    assert err.count("(base ") == 5  # the base ran first, whole
    # a read lib_a.py, c settings.json (both modified); d read plugins/extra.py (removed); e
    # started another program; b read nothing the change touches
    assert sorted(ran_on_head(err)) == ["a", "c", "d", "e"]
    assert any(
        "1 of 5 entrypoints not reached by this change: results from the base (`b`)" in n for n in reused["notes"]
    )
    assert "the head runs `a`: it read `lib_a.py`, which the change touches" in err
    assert "the head runs `e`: it started another program (subprocess.Popen)" in err

    every, err = diff(project, capsys, "--no-warm")
    assert err.count("(base ") == 5 and len(ran_on_head(err)) == 5
    assert by_entrypoint(reused) == by_entrypoint(every)
    got = by_entrypoint(reused)
    assert [bool(got[n]["new"]) for n in "abcde"] == [True, False, True, False, False]
    assert got["d"]["fixed"] and got["b"]["persisting"] and got["e"]["persisting"]
    assert sorted(reused["new"]) == sorted(every["new"]) and reused["fixed"] == every["fixed"]


def test_only_what_could_differ_runs_on_the_head(project, capsys):
    git(project, "reset", "-q", "--hard", "HEAD~1")
    (project / "README.md").write_text("# a project nothing reads\n")
    (project / "plugins" / "NOTES.md").write_text("plugins/ gains a file, though not one anything imports\n")
    (project / "tools").mkdir()
    (project / "tools" / "new_tool.py").write_text("print('a new script nothing runs')\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "docs and a tool")
    found, err = diff(project, capsys)
    assert ran_on_head(err) == ["e"]
    assert all(not e["new"] and not e["fixed"] for e in found["entrypoints"])
    assert any("4 of 5 entrypoints not reached by this change" in note for note in found["notes"])


# PR code that forges its warm child's record of what it read: at exit (before the record is
# written), it empties the recorder, so the head's run seems to have read nothing.
FORGES_ITS_READS = """
import atexit, gc
def _forget():
    for o in gc.get_objects():
        if type(o).__name__ == "ReadRecorder":
            o.files.clear(); o.directories.clear(); o.metadata.clear(); o.searched.clear()
atexit.register(_forget)
"""


def test_a_forged_read_record_on_the_head_decides_nothing(in_git_dir: Path, capsys):
    """The PR adds a break to a library its entrypoint calls (one call deeper) and empties the
    record of its reads. The base ran first and its own record, which no code of the change
    wrote, says the change reaches the entrypoint: the head runs it and the break is new. The
    base, which ran cleanly before any code of the change, is cached."""
    repo = in_git_dir
    files = {k: FILES[k] for k in ("lib_a.py", "a.py")}
    for name, text in files.items():
        (repo / name).write_text(text)
    (repo / ".gbbot.yml").write_text("version: 1\nentrypoints:\n  - {name: a, run: python a.py}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "lib_a.py").write_text("import torch\n\ndef step(x):\n    print('step')\n    return torch.sin(x)\n")
    (repo / "a.py").write_text(FORGES_ITS_READS + files["a.py"])
    git(repo, "commit", "-qam", "head")
    cache = repo.parent / "cache"
    found, err = diff(repo, capsys, "--cache", str(cache))
    (entry,) = found["entrypoints"]
    assert ran_on_head(err) == ["a"] and entry["new"] and not entry["persisting"]
    assert [p for p in cache.rglob("*") if p.is_file() and p.suffix == ".json"]


def test_a_module_the_server_preloaded_is_still_a_lookup_in_the_checkout(in_git_dir: Path, capsys):
    """The warm server imported `yaml` before forking, so the child finds it in `sys.modules` and
    never searches the checkout; a fresh process would look there first. A change that adds
    `yaml.py` at the top (one that shadows the installed package) must make the head run again."""
    repo = in_git_dir
    (repo / "y.py").write_text("import torch, yaml\n" + COMPILED.format(body="x = x if yaml.safe_load('1') else x"))
    (repo / ".gbbot.yml").write_text(
        "version: 1\nrunner: {preload: [yaml]}\nentrypoints:\n  - {name: y, run: python y.py}\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "yaml.py").write_text("def safe_load(text):\n    return 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "head: a module named like a preloaded one")
    found, err = diff(repo, capsys)
    assert ran_on_head(err) == ["y"], err[-3000:]  # the head ran it
    assert "not reached" not in " ".join(found["notes"])
